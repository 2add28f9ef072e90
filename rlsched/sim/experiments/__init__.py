"""Experiments that regenerate the papers' tables and figures.

Each module in this package may define ``EXPERIMENTS: dict[str, Experiment]``;
:func:`registry` collects them, so adding an experiment never edits a shared file.
"""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlsched.core.atomic import atomic_write
from rlsched.sim.experiments.harness import ExperimentOptions


@dataclass(frozen=True)
class Experiment:
    """A named experiment: ``run(out_dir, **options)`` writes results.json, report.md and figures."""

    name: str
    help: str
    run: Callable[..., dict[str, Any]]
    #: ``report.md`` from a run's ``results.json`` alone (None: the report needs more than the JSON).
    render: Callable[[dict[str, Any]], str] | None = None

    def kwargs(self, options: ExperimentOptions) -> dict[str, Any]:
        """The keyword arguments of :attr:`run` for ``options``; an option it does not take (when set) is refused.

        Raises ``ValueError`` naming the option as the command line spells it.
        """
        kwargs: dict[str, Any] = {"quick": options.quick, "seed": options.seed}
        params = inspect.signature(self.run).parameters
        open_ended = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
        # n_seeds only when named: an experiment taking **options may hand it to a function without it.
        for name, accepted in (
            ("n_seeds", name_in(params, "n_seeds")),
            ("workers", name_in(params, "workers") or open_ended),
        ):
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

    def rerender(self, out_dir: str | Path) -> Path:
        """Rewrite ``report.md`` in ``out_dir`` from the ``results.json`` there, with the current report code
        (no simulation).  Raises ``ValueError`` (one line) when there is nothing to render from."""
        if self.render is None:
            raise ValueError(f"experiment {self.name!r} cannot rebuild its report from results.json alone; rerun it")
        source = Path(out_dir) / "results.json"
        try:
            result = json.loads(source.read_text())
        except FileNotFoundError:
            raise ValueError(f"{source}: no results.json to render (run the experiment first)") from None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(f"{source}: cannot be read: {exc}") from None
        if not isinstance(result, dict):
            raise ValueError(f"{source}: not the results of an experiment (a JSON object is expected)")
        try:
            text = self.render(result)
        except (KeyError, TypeError, IndexError, ValueError) as exc:
            raise ValueError(f"{source}: not a {self.name} result ({type(exc).__name__}: {exc})") from None
        target = Path(out_dir) / "report.md"
        atomic_write(target, lambda f: f.write(text.encode()), mode=0o644)
        return target


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
