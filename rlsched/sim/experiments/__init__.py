"""Experiments that regenerate the papers' tables and figures.

Each module in this package may define ``EXPERIMENTS: dict[str, Experiment]``;
:func:`registry` collects them, so adding an experiment never edits a shared file.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlsched.sim.experiments.harness import ExperimentOptions


@dataclass(frozen=True)
class Experiment:
    """A named experiment: ``run(out_dir, **options)`` writes results.json, report.md and figures."""

    name: str
    help: str
    run: Callable[..., dict[str, Any]]

    def kwargs(self, options: ExperimentOptions) -> dict[str, Any]:
        """The keyword arguments of :attr:`run` for ``options``; an option it does not take (when set) is refused.

        Raises ``ValueError`` naming the option as the command line spells it.
        """
        kwargs: dict[str, Any] = {"quick": options.quick, "seed": options.seed}
        params = inspect.signature(self.run).parameters
        open_ended = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
        # n_seeds only when named: an experiment taking **options may hand it to a function without it.
        for name, accepted in (("n_seeds", name_in(params, "n_seeds")),
                               ("workers", name_in(params, "workers") or open_ended)):
            value = getattr(options, name)
            if value is None:
                continue
            if not accepted:
                raise ValueError(f"experiment {self.name!r} takes no --{name.replace('_', '-')}")
            kwargs[name] = value
        return kwargs

    def run_with(self, options: ExperimentOptions) -> dict[str, Any]:
        """Run with the shared options (see :meth:`kwargs`), into ``options.out_dir`` (created)."""
        return self.run(options.output(), **self.kwargs(options))


def name_in(params: Mapping[str, inspect.Parameter], name: str) -> bool:
    return name in params and params[name].kind is not inspect.Parameter.VAR_KEYWORD


def registry() -> dict[str, Experiment]:
    found: dict[str, Experiment] = {}
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{info.name}")
        for name, exp in getattr(module, "EXPERIMENTS", {}).items():
            if name in found:
                raise RuntimeError(f"experiment {name!r} defined twice")
            found[name] = exp
    return found


def output_dir(path: str | Path) -> Path:
    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
    return out
