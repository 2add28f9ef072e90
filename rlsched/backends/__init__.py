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
imported only when that kind is used: the daemon and the leasing controller import no backend module.  A
batch system from another package registers through the entry-point group ``rlsched.backends``, loaded the
first time the registry is consulted (:func:`load_backend_plugins`; docs/extending.md)::

    [project.entry-points."rlsched.backends"]
    toyq = "rlsched_example_backend:BACKEND"    # BACKEND = BackendKind("toyq", config="...", factory="...")

(or code that runs before the daemon builds its backend calls :func:`register_backend`).

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
from rlsched.core.plugins import PluginGroup
from rlsched.errors import RlschedError


class BackendConfigClass(Protocol):
    """A backend's config class: builds a checked config from its ``[backend]`` table."""

    def from_table(self, table: Mapping[str, Any], source: str = ...) -> LiveBackendConfig: ...


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
    "slurm": BackendKind(
        "slurm",
        config="rlsched.backends.slurm.config:SlurmBackendConfig",
        factory="rlsched.backends.slurm.backend:build_slurm_backend",
    ),
    "pbs": BackendKind(
        "pbs",
        config="rlsched.backends.pbs.config:PBSBackendConfig",
        factory="rlsched.backends.pbs.backend:build_pbs_backend",
    ),
}


class UnknownBackendError(RlschedError, ValueError):
    """A ``[backend] kind`` nobody registered (or whose plugin cannot be loaded)."""


#: The entry-point group through which other packages add backends.
PLUGIN_GROUP = "rlsched.backends"
_BUILT_IN = frozenset(BACKENDS)


def _check_plugin(name: str, value: Any) -> str | None:
    if not isinstance(value, BackendKind):
        return f"gives a {type(value).__name__}, not a rlsched.backends.BackendKind"
    if name in _BUILT_IN:
        return f"kind {name!r} is built into rlsched"
    if ":" not in value.config or ":" not in value.factory:
        return "its config and factory must be 'module:attribute' paths"
    return None


def _add_plugin(name: str, value: BackendKind) -> None:
    BACKENDS[name] = BackendKind(name, value.config, value.factory)


#: The backends of the entry points (each entry point's name is the ``[backend] kind``).
PLUGINS = PluginGroup(PLUGIN_GROUP, _check_plugin, _add_plugin)


def load_backend_plugins(reload: bool = False) -> None:
    """Register the backends of the ``rlsched.backends`` entry points (once per process; ``reload``: again,
    for a package installed since)."""
    PLUGINS.load(reload)


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
    load_backend_plugins()
    if name in BACKENDS:
        return BACKENDS[name]
    if name in PLUGINS.broken:
        raise UnknownBackendError(str(PLUGINS.broken[name]))
    raise UnknownBackendError(f"unknown backend kind {name!r} (known: {', '.join(sorted(BACKENDS))})")


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


__all__ = [
    "BACKENDS",
    "PLUGIN_GROUP",
    "BackendKind",
    "UnknownBackendError",
    "backend_config_from_table",
    "backend_kind",
    "build_backend",
    "load_backend_plugins",
    "register_backend",
]
