"""Experiments that regenerate the papers' tables and figures.

Each module in this package may define ``EXPERIMENTS: dict[str, Experiment]``;
:func:`registry` collects them, so adding an experiment never edits a shared file.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Experiment:
    """A named experiment: ``run(out_dir, **options)`` writes results.json, report.md and figures."""

    name: str
    help: str
    run: Callable[..., dict[str, Any]]


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
