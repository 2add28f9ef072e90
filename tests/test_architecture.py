"""The package's layering, checked on the source: what each layer may import, and no links in the tree.

- ``rlsched.core`` is pure: it imports nothing else of rlsched (the same decision core runs in the
  simulator and live, so it may know neither).
- ``rlsched.sim`` imports neither the daemon, the live leasing controller, a backend nor the CLI.
- ``rlsched.daemon`` and ``rlsched.leasing`` know backends only through the protocols and the backend
  registry (``rlsched.backends``), never a module of one batch system (``rlsched.backends.slurm``), so a
  second batch system plugs in without touching them.

Every ``import`` counts, at module level or inside a function (a lazy import is still a dependency).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "rlsched"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, module: str | None = None) -> Iterator[tuple[int, str]]:
    """(line, absolute module name) of every import in ``path``, relative imports resolved against
    ``module`` (default: the module ``path`` is in the package)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    module = module or _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            yield node.lineno, base
            # ``from rlsched.backends import slurm`` imports the submodule too.
            for alias in node.names:
                yield node.lineno, f"{base}.{alias.name}"


def _violations(layer: str, forbidden: re.Pattern[str]) -> list[str]:
    found = []
    for path in sorted((PACKAGE / layer).rglob("*.py")):
        for line, name in _imports(path):
            if forbidden.match(name):
                found.append(f"{path.relative_to(PACKAGE.parent)}:{line} imports {name}")
    return found


def _under(*modules: str) -> re.Pattern[str]:
    alternatives = "|".join(re.escape(m) for m in modules)
    return re.compile(rf"^(?:{alternatives})(?:\.|$)")


def test_the_core_imports_nothing_else_of_rlsched() -> None:
    others = re.compile(r"^rlsched(?:\.(?!core(?:\.|$))|$)")
    assert _violations("core", others) == []


def test_the_simulator_imports_no_live_part() -> None:
    live = _under("rlsched.daemon", "rlsched.backends", "rlsched.leasing", "rlsched.cli", "rlsched.exporter")
    assert _violations("sim", live) == []


@pytest.mark.parametrize("layer", ["daemon", "leasing"])
def test_the_live_side_knows_no_particular_batch_system(layer: str) -> None:
    assert _violations(layer, _under("rlsched.backends.slurm")) == []


def test_the_scan_finds_a_lazy_relative_import(tmp_path: Path) -> None:
    """The scan itself: an import inside a function, written relative, is found and resolved."""
    module = tmp_path / "x.py"
    module.write_text("def f() -> None:\n    from ..backends.slurm import parsers\n")
    names = [name for _, name in _imports(module, "rlsched.daemon.x")]
    assert names == ["rlsched.backends.slurm", "rlsched.backends.slurm.parsers"]


def test_no_symlink_in_the_package() -> None:
    links = [str(p.relative_to(PACKAGE.parent)) for p in PACKAGE.rglob("*") if p.is_symlink()]
    assert links == []


@pytest.mark.parametrize("name", ["responsiveness", "bounded_slowdown", "edf_deadline"])
def test_each_quantity_has_one_definition(name: str) -> None:
    pattern = re.compile(rf"^\s*def {name}\(", re.MULTILINE)
    where = [str(p.relative_to(PACKAGE.parent)) for p in PACKAGE.rglob("*.py") if pattern.search(p.read_text())]
    assert len(where) == 1, where
