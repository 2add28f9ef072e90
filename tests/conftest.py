"""Shared fixtures: where the real SWF traces are.

The project never hard-codes a trace location.  Tests find the Parallel Workloads
Archive logs through ``$RLSCHED_TRACE_DIR``; without it, trace tests are skipped —
unless ``RLSCHED_REQUIRE_TRACES=1`` (CI), where a missing trace is a failure.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tests.daemon.live_daemon import DaemonProcess

# The real local Slurm cluster and OpenPBS server fixtures (tests/slurm_cluster.py, tests/pbs_cluster.py).
pytest_plugins = ["tests.slurm_cluster", "tests.pbs_cluster"]

#: Short names of the four traces of docs/traces.md -> archive file names.
TRACE_FILES = {
    "kth": "KTH-SP2-1996-2.1-cln.swf.gz",
    "ctc": "CTC-SP2-1996-3.1-cln.swf.gz",
    "sdsc": "SDSC-DS-2004-2.1-cln.swf.gz",
    "lpc": "LPC-EGEE-2004-1.2-cln.swf.gz",
}


def _missing(reason: str) -> None:
    if os.environ.get("RLSCHED_REQUIRE_TRACES") == "1":
        pytest.fail(f"{reason} (RLSCHED_REQUIRE_TRACES=1)")
    pytest.skip(reason)


def _trace_in(folder: Path, short_name: str) -> Path:
    if short_name not in TRACE_FILES:
        raise KeyError(f"unknown trace {short_name!r}; known: {', '.join(TRACE_FILES)}")
    path = folder / TRACE_FILES[short_name]
    if not path.is_file():
        _missing(f"trace {path} not found")
    return path


def _trace_dir_from_env() -> Path:
    env = os.environ.get("RLSCHED_TRACE_DIR")
    if not env:
        _missing("RLSCHED_TRACE_DIR is not set")
    path = Path(env or "").expanduser()
    if not path.is_dir():
        _missing(f"RLSCHED_TRACE_DIR={env} is not a folder")
    return path


def shared_trace(short_name: str) -> Path:
    """Path of a shared trace by short name (kth, ctc, sdsc, lpc); skips/fails when absent.

    For code outside fixtures (benchmarks, parametrised helpers); tests prefer ``trace_path``.
    """
    return _trace_in(_trace_dir_from_env(), short_name)


@pytest.fixture(scope="session")
def trace_dir() -> Path:
    """The folder of the real traces (``$RLSCHED_TRACE_DIR``)."""
    return _trace_dir_from_env()


@pytest.fixture(scope="session")
def trace_path(trace_dir: Path) -> Callable[[str], Path]:
    """``trace_path("ctc")`` -> the CTC-SP2 file in ``trace_dir`` (read once per session, so a test
    may change ``$RLSCHED_TRACE_DIR`` afterwards)."""
    return functools.partial(_trace_in, trace_dir)


#: The session fixtures of the real local clusters (tests/slurm_cluster.py, tests/pbs_cluster.py).
LIVE_FIXTURES = frozenset({"slurm_cluster", "pbs_server"})


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark ``live`` every test that uses a real cluster, directly or through another fixture, so that
    scripts/test.sh can run them in one process beside the others (they mostly wait on the daemons, the
    others mostly compute).  Run the OpenPBS tests last: on a first run their server is still building in
    the background (scripts/test.sh), and every other test can go on meanwhile.  The order is otherwise kept."""
    for item in items:
        if LIVE_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.live)
    items.sort(key=lambda item: item.get_closest_marker("pbs") is not None)


@pytest.fixture
def daemons() -> Iterator[list[DaemonProcess]]:
    """Daemon processes a live test starts (tests/daemon/live_daemon.py); any still running are killed."""
    started: list[DaemonProcess] = []
    yield started
    for d in started:
        if d.alive():
            d.proc.kill()
            d.proc.wait(10)


@pytest.fixture(scope="session")
def lal_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SARSA-ESN model saved by ``rlsched sim run --save-model`` on a small LAL-like workload (VOs vo1…vo7)."""
    from click.testing import CliRunner

    from rlsched.cli import main

    path = tmp_path_factory.mktemp("model") / "m.npz"
    result = CliRunner().invoke(
        main,
        [
            "sim",
            "run",
            "--workload",
            "lal",
            "--scale",
            "0.05",
            "--policy",
            "sarsa-esn:pretrain_decisions=20",
            "--save-model",
            str(path),
        ],
    )
    assert result.exit_code == 0, result.output
    return path
