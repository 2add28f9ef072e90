"""Batch-system backends and their registry.

Each backend implements :class:`rlsched.core.live.LiveBackend` (and :class:`rlsched.core.live.NodeControl`
when it can lease cloud nodes); the simulator (:mod:`rlsched.sim`) implements the same protocol.

- :mod:`rlsched.backends.slurm` — Slurm through its command-line tools (``squeue``/``sinfo --json``,
  ``scontrol``, ``sacct``), the default live backend (docs/slurm.md);
- :mod:`rlsched.backends.pbs` — OpenPBS / PBS Professional (``qstat``/``pbsnodes -F json``, ``qalter -p``,
  ``qhold``/``qrls``): ``[backend] kind = "pbs"`` (docs/pbs.md);
- :mod:`rlsched.backends.common` — what every backend shares: the command runner, hostlists, the class rule
  and the account → VO mapping.

The registry maps a ``[backend] kind`` to the backend's config class and factory, named by import path and
imported only when that kind is used: the daemon and the leasing controller import no backend module, so
adding a batch system means one :func:`register_backend` call (or one entry in :data:`BACKENDS`) and no
change to them::

    register_backend("pbs", config="mysite.pbs:PBSBackendConfig", factory="mysite.pbs:build_pbs_backend")

The config class has ``from_table(table, source)`` (a one-line ``ValueError`` naming the key for bad input)
and satisfies :class:`rlsched.core.live.LiveBackendConfig`; the factory is ``factory(config, state_dir)``
and returns the :class:`~rlsched.core.live.LiveBackend` (``state_dir`` None: keep no undo record).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, cast

from rlsched.core.live import LiveBackend, LiveBackendConfig
from rlsched.errors import RlschedError


class BackendConfigClass(Protocol):
    """A backend's config class: builds a checked config from its ``[backend]`` table."""

    def from_table(self, table: Mapping[str, Any], source: str = ...) -> LiveBackendConfig:
        ...


BackendFactory = Callable[[Any, str | Path | None], LiveBackend]


@dataclass(frozen=True)
class BackendKind:
    """One registered backend: its name and the ``module:attribute`` paths of its config class and factory."""

    name: str
    config: str
    factory: str

    def config_class(self) -> BackendConfigClass:
        return cast(BackendConfigClass, _load(self.config))

    def build(self, config: LiveBackendConfig, state_dir: str | Path | None) -> LiveBackend:
        factory = cast(BackendFactory, _load(self.factory))
        return factory(config, state_dir)


#: Every backend kind by ``[backend] kind`` name.
BACKENDS: dict[str, BackendKind] = {
    "slurm": BackendKind("slurm", config="rlsched.backends.slurm.config:SlurmBackendConfig",
                         factory="rlsched.backends.slurm.backend:build_slurm_backend"),
    "pbs": BackendKind("pbs", config="rlsched.backends.pbs.config:PBSBackendConfig",
                       factory="rlsched.backends.pbs.backend:build_pbs_backend"),
}


class UnknownBackendError(RlschedError, ValueError):
    """A ``[backend] kind`` nobody registered."""


def _load(path: str) -> Any:
    module, _, attribute = path.partition(":")
    return getattr(importlib.import_module(module), attribute)


def register_backend(name: str, config: str, factory: str) -> None:
    """Make ``[backend] kind = name`` build ``factory(config_class.from_table(...), state_dir)``; both are
    ``"module:attribute"`` paths, imported on first use."""
    if ":" not in config or ":" not in factory:
        raise ValueError("config and factory are 'module:attribute' paths")
    BACKENDS[name] = BackendKind(name, config, factory)


def backend_kind(name: str) -> BackendKind:
    try:
        return BACKENDS[name]
    except KeyError:
        raise UnknownBackendError(f"unknown backend kind {name!r} (known: {', '.join(sorted(BACKENDS))})") from None


def backend_config_from_table(table: Mapping[str, Any], source: str = "config") -> LiveBackendConfig:
    """The checked config of the backend named by ``table["kind"]`` (``slurm`` when absent)."""
    kind = table.get("kind", "slurm")
    if not isinstance(kind, str):
        raise UnknownBackendError(f"backend kind must be a string, got {kind!r}")
    return backend_kind(kind).config_class().from_table(table, source)


def build_backend(config: LiveBackendConfig, state_dir: str | Path | None) -> LiveBackend:
    """The live backend ``config`` describes.  Its undo record defaults to a file in ``state_dir``;
    ``state_dir`` None builds a backend that reads and writes no record (``rlsched status``: read-only)."""
    return backend_kind(config.kind).build(config, state_dir)


__all__ = ["BACKENDS", "BackendKind", "UnknownBackendError", "backend_config_from_table", "backend_kind",
           "build_backend", "register_backend"]
