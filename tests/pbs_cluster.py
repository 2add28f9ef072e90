"""pytest fixtures for a real local OpenPBS (a plugin module: listed in ``pytest_plugins``).

``pbs_server`` (session) brings OpenPBS up with ``scripts/pbs-up.sh`` — which builds it from the source
tarball on first use (3-7 min on 2 cores) — inside the network namespace the script creates, and stops it at
the end with ``scripts/pbs-down.sh`` (by PID).  Every client runs inside that namespace
(``ip netns exec rlsched-pbs /opt/pbs/bin/...``): nothing here talks to any address outside it.  When PBS
cannot be brought up the fixture fails under ``CI=true`` and skips otherwise.  ``pbs`` (function) gives the
server with no job left from an earlier test.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.slurm_cluster import wait_for

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ROOT / "scripts"
NETNS = os.environ.get("RLSCHED_TEST_PBS_NETNS", "rlsched-pbs")
PREFIX = "/opt/pbs"
PBS_HOME = "/var/spool/pbs"
#: The test node's CPUs (pbs-up.sh's PBS_NODE_NCPUS).
NODE_CPUS = 8


@dataclass
class PBSTestServer:
    """A running test server and helpers to drive it from tests (all through the namespace)."""

    netns: str
    startup_s: float
    up_log: str

    @property
    def command_prefix(self) -> list[str]:
        return ["ip", "netns", "exec", self.netns]

    @property
    def bin_dir(self) -> str:
        return f"{PREFIX}/bin"

    @property
    def sched_config(self) -> str:
        return f"{PBS_HOME}/sched_priv/sched_config"

    def run(self, name: str, *args: str, check: bool = True, timeout_s: float = 30) -> subprocess.CompletedProcess[str]:
        argv = [*self.command_prefix, f"{self.bin_dir}/{name}", *args]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, check=False, cwd="/tmp")
        if check and done.returncode != 0:
            raise AssertionError(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.strip()}")
        return done

    def qsub(self, *options: str, ncpus: int = NODE_CPUS, walltime_min: float = 10, sleep_s: float = 30) -> str:
        """Submit ``sleep sleep_s`` (as root, queue workq); returns the PBS job id (``12.pbshost``)."""
        minutes = int(walltime_min)
        seconds = round((walltime_min - minutes) * 60)
        out = self.run(
            "qsub",
            "-f",
            "-o",
            "/dev/null",
            "-e",
            "/dev/null",
            "-l",
            f"select=1:ncpus={ncpus}",
            "-l",
            f"walltime=00:{minutes:02d}:{seconds:02d}",
            *options,
            "--",
            "/bin/sleep",
            f"{sleep_s:g}",
        )
        job_id = out.stdout.strip()
        assert job_id and "." in job_id, f"qsub printed {out.stdout!r}"
        return job_id

    def jobs(self, history: bool = False) -> dict[str, dict[str, Any]]:
        out = self.run("qstat", *(["-x"] if history else []), "-f", "-t", "-F", "json")
        doc = json.loads(out.stdout) if out.stdout.strip() else {}
        return dict(doc.get("Jobs", {}))

    def job(self, job_id: str) -> dict[str, Any]:
        out = self.run("qstat", "-x", "-f", "-F", "json", job_id, check=False)
        if out.returncode != 0 or not out.stdout.strip():
            return {}
        found = json.loads(out.stdout).get("Jobs", {})
        return dict(next(iter(found.values()))) if found else {}

    def state(self, job_id: str) -> str:
        return str(self.job(job_id).get("job_state", "GONE"))

    def started(self, job_id: str) -> bool:
        job = self.job(job_id)
        return job.get("job_state") in ("R", "E") or ("stime" in job and job.get("job_state") in ("F", "X"))

    def held(self, job_id: str) -> bool:
        return self.state(job_id) == "H"

    def priority(self, job_id: str) -> int:
        return int(self.job(job_id).get("Priority", 0))

    def cancel_all(self) -> None:
        ids = [line.strip() for line in self.run("qselect").stdout.splitlines() if line.strip()]
        if ids:
            self.run("qdel", "-W", "force", *ids, check=False)
        wait_for(lambda: not self.run("qselect").stdout.strip(), 60, "every test job gone")
        wait_for(self.node_free, 30, "the node's CPUs free")

    def node_free(self) -> bool:
        out = self.run("pbsnodes", "-a", "-F", "json")
        nodes = json.loads(out.stdout).get("nodes", {})
        return all(int(n.get("resources_assigned", {}).get("ncpus", 0)) == 0 for n in nodes.values())

    def node_up(self) -> bool:
        """Every node free (a restarted server marks its nodes down until their mom reports)."""
        out = self.run("pbsnodes", "-a", "-F", "json", check=False)
        if out.returncode != 0:
            return False
        nodes = json.loads(out.stdout).get("nodes", {})
        return bool(nodes) and all(n.get("state") == "free" for n in nodes.values())

    def pid(self, lock: str, program: str) -> int | None:
        try:
            pid = int(Path(PBS_HOME, lock).read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        except OSError:
            return None
        return pid if program in cmdline else None

    def server_pid(self) -> int | None:
        return self.pid("server_priv/server.lock", "pbs_server")

    def start_server(self) -> None:
        """Start pbs_server again (its state kept), inside the namespace."""
        # No pipes: the daemon would hold them open and the call would never return.
        subprocess.run(
            [*self.command_prefix, f"{PREFIX}/sbin/pbs_server"],
            check=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_for(lambda: self.run("qstat", "-B", check=False).returncode == 0, 60, "pbs_server back")


def _unavailable(reason: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"OpenPBS is required in CI: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def pbs_server() -> Iterator[PBSTestServer]:
    if os.geteuid() != 0:
        _unavailable("the local OpenPBS needs root (scripts/pbs-up.sh: network namespace, daemons)")
    env = {**os.environ, "PBS_NETNS": NETNS}
    t0 = time.monotonic()
    up = subprocess.run(
        [str(SCRIPTS / "pbs-up.sh")], capture_output=True, text=True, env=env, timeout=1500, check=False
    )
    startup_s = time.monotonic() - t0
    if up.returncode != 0:
        subprocess.run([str(SCRIPTS / "pbs-down.sh")], env=env, capture_output=True, timeout=120, check=False)
        _unavailable(f"scripts/pbs-up.sh failed: {(up.stderr or up.stdout).strip()[-500:]}")
    server = PBSTestServer(netns=NETNS, startup_s=startup_s, up_log=up.stdout)
    print(f"\nOpenPBS up in {startup_s:.1f} s:\n{up.stdout.strip()}")
    try:
        yield server
    finally:
        subprocess.run([str(SCRIPTS / "pbs-down.sh")], env=env, capture_output=True, timeout=180, check=False)


@pytest.fixture
def pbs(pbs_server: PBSTestServer) -> Iterator[PBSTestServer]:
    """The session server, emptied of jobs before and after the test."""
    pbs_server.cancel_all()
    yield pbs_server
    pbs_server.cancel_all()
