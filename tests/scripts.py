"""The project's scripts without a .py suffix (the Slurm hooks, the gate watchdog) loaded as modules, so that
tests can call their pure functions."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
WATCHDOG = ROOT / "plugins" / "rlsched-gate-watchdog"


def load_script(path: Path, name: str) -> ModuleType:
    """``path`` executed as the module ``name`` (registered in ``sys.modules``: dataclasses in it need that)."""
    loader = importlib.machinery.SourceFileLoader(name, str(path))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[loader.name] = module
    loader.exec_module(module)
    return module
