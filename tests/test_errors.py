"""One root for every error rlsched raises on purpose (issue 25): ``except RlschedError`` catches a foreseen
failure of any layer, and the CLI prints it as one line."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from rlsched.cli import GuardedGroup
from rlsched.errors import RlschedError

PACKAGE = Path(__file__).resolve().parents[1] / "rlsched"
#: Exceptions that never leave their module (control flow inside one function), and the schema's default error:
#: the Slurm hooks load ``rlsched/config_schema.py`` alone, standard library only, where rlsched may not be
#: importable, and every reader in the package passes its own error class to ``Section.read``.
PRIVATE = {"rlsched.history.sacct._Bad", "rlsched.config_schema.SchemaError"}


def _exception_classes() -> list[str]:
    """``module.Class`` of every class in the package whose name says it is an error."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and node.name.endswith(("Error", "Timeout")) and node.bases:
                found.append(f"{module}.{node.name}")
    return found


@pytest.mark.parametrize("name", [n for n in _exception_classes() if n not in PRIVATE])
def test_every_error_of_the_package_derives_from_the_root(name: str) -> None:
    module, _, attribute = name.rpartition(".")
    cls = getattr(importlib.import_module(module), attribute)
    if issubclass(cls, click.ClickException):
        pytest.skip("click's own errors are shown by click")
    assert issubclass(cls, RlschedError), name


def test_the_scan_finds_the_backend_errors() -> None:
    names = _exception_classes()
    assert "rlsched.backends.common.runner.BackendError" in names and len(names) >= 30


def test_the_cli_guard_prints_an_rlsched_error_as_one_line() -> None:
    @click.group(cls=GuardedGroup)
    def group() -> None:
        pass

    @group.command()
    def fail() -> None:
        raise RlschedError("the thing\nis refused")

    result = CliRunner().invoke(group, ["fail"])
    assert result.exit_code == 1 and result.output == "Error: the thing is refused\n"
    result = CliRunner().invoke(group, ["fail"], env={"RLSCHED_DEBUG": "1"})
    assert isinstance(result.exception, RlschedError)
