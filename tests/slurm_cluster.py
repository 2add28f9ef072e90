"""pytest fixtures for a real local Slurm (a plugin module: list it in ``pytest_plugins``).

``slurm_cluster`` (session) starts the test cluster with ``scripts/slurm-up.sh`` under its own BASE and
ports (``RLSCHED_TEST_SLURM_BASE``, default /tmp/rlsched-slurm-test; ``RLSCHED_TEST_SLURM_PORT``, default
6917) so that a developer's cluster on the default ports is left alone, and stops it at the end with
``scripts/slurm-down.sh`` (by PID).  munged is shared by every cluster on the host: it is stopped only
if this fixture started it.  When Slurm cannot be brought up the fixture fails under ``CI=true`` and
skips otherwise.  ``slurm`` (function) gives a cluster with no job left from an earlier test.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ROOT / "scripts"


def _munged_running() -> bool:
    pidfile = Path("/run/munge/munged.pid")
    try:
        return Path(f"/proc/{int(pidfile.read_text().strip())}").exists()
    except (OSError, ValueError):
        return False


@dataclass
class SlurmTestCluster:
    """A running test cluster: its BASE, slurm.conf and helpers to drive it from tests."""

    base: Path
    port: int
    startup_s: float

    @property
    def conf(self) -> str:
        return str(self.base / "etc" / "slurm.conf")

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "SLURM_CONF": self.conf}

    @property
    def jobcomp(self) -> Path:
        return self.base / "log" / "jobcomp.txt"

    @property
    def provider_command(self) -> list[str]:
        """The local cloud provider as the hooks (running as SlurmUser=slurm) and the daemon (root) call it:
        ``$BASE/bin/cloud-provider`` goes through sudo for slurm (scripts/slurm-up.sh)."""
        return [str(self.base / "bin" / "cloud-provider")]

    def shared_dir(self, name: str) -> Path:
        """A fresh folder the hooks can read as SlurmUser=slurm (pytest's tmp_path is root's, mode 0700): the
        daemon's state for tests whose hooks read its heartbeat and permit."""
        path = self.base / "shared" / name
        if path.exists():
            shutil.rmtree(path)
        path.mkdir(parents=True)
        for folder in (self.base / "shared", path):
            folder.chmod(0o755)
        return path

    def hook_log(self, name: str) -> Path:
        """A hook log in $BASE/log, which slurm owns (the hooks append to it as slurm)."""
        return self.base / "log" / f"hooks-{name}.log"

    def run(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            list(argv), capture_output=True, text=True, env=self.env, timeout=30, check=False, cwd="/tmp"
        )
        if check and done.returncode != 0:
            raise AssertionError(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.strip()}")
        return done

    def sbatch(self, *options: str, sleep_s: float = 30) -> int:
        """Submit ``sleep sleep_s`` with these sbatch options; returns the job id."""
        out = self.run("sbatch", "--parsable", "-o", "/dev/null", *options, "--wrap", f"sleep {sleep_s:g}")
        match = re.match(r"(\d+)", out.stdout.strip())
        assert match, f"sbatch printed {out.stdout!r}"
        return int(match[1])

    def state(self, job_id: int) -> str:
        out = self.run("squeue", "-h", "-j", str(job_id), "-t", "all", "-o", "%T", check=False)
        return out.stdout.strip() or "GONE"

    def squeue(self, fmt: str = "%i %T %Q %y %r") -> dict[int, list[str]]:
        lines = self.run("squeue", "-h", "-o", fmt).stdout.splitlines()
        return {int(line.split()[0]): line.split()[1:] for line in lines if line.strip()}

    def cancel_all(self) -> None:
        ids = list(self.squeue("%i"))
        if ids:
            self.run("scancel", *map(str, ids), check=False)
        wait_for(
            lambda: not self.run("squeue", "-h", "-t", "R,CG,CF,PD", "-o", "%i").stdout.strip(),
            30,
            "all test jobs gone",
        )


def wait_for(predicate: Callable[[], bool], timeout_s: float, what: str, every_s: float = 0.2) -> None:
    """Poll ``predicate`` until it is true; fail the test naming ``what`` after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(every_s)
    raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}")


def _unavailable(reason: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"Slurm is required in CI: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def slurm_cluster() -> Iterator[SlurmTestCluster]:
    base = Path(os.environ.get("RLSCHED_TEST_SLURM_BASE", "/tmp/rlsched-slurm-test"))
    port = int(os.environ.get("RLSCHED_TEST_SLURM_PORT", "6917"))
    if os.geteuid() != 0:
        _unavailable("the local Slurm test cluster needs root (scripts/slurm-up.sh)")
    munge_was_running = _munged_running()
    env = {**os.environ, "BASE": str(base), "RLSCHED_SLURM_PORT": str(port)}
    t0 = time.monotonic()
    up = subprocess.run(
        [str(SCRIPTS / "slurm-up.sh")], capture_output=True, text=True, env=env, timeout=600, check=False
    )
    startup_s = time.monotonic() - t0
    if up.returncode != 0:
        subprocess.run([str(SCRIPTS / "slurm-down.sh")], env=env, capture_output=True, timeout=120, check=False)
        _unavailable(f"scripts/slurm-up.sh failed: {(up.stderr or up.stdout).strip()[-500:]}")
    cluster = SlurmTestCluster(base=base, port=port, startup_s=startup_s)
    try:
        yield cluster
    finally:
        down_env = {**env, "KEEP_MUNGE": "1" if munge_was_running else "0"}
        subprocess.run([str(SCRIPTS / "slurm-down.sh")], env=down_env, capture_output=True, timeout=120, check=False)


@pytest.fixture
def slurm(slurm_cluster: SlurmTestCluster) -> Iterator[SlurmTestCluster]:
    """The session cluster, emptied of jobs before and after the test."""
    slurm_cluster.cancel_all()
    yield slurm_cluster
    slurm_cluster.cancel_all()
