"""Fault injection by an unprivileged user against the real test cluster (issue 16): each scenario runs the
daemon as a process, plays the hostile job, and ends with zero held jobs and the error counted."""

from __future__ import annotations

import json
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.daemon.test_live import DaemonProcess, daemons, held, snapshot, start, write_config  # noqa: F401
from tests.slurm_cluster import SlurmTestCluster, wait_for

pytest_plugins = ["tests.slurm_cluster"]
pytestmark = [pytest.mark.slurm, pytest.mark.timeout(180)]

#: A job name that is not UTF-8: passed to sbatch as the byte 0xff (os.fsencode's surrogateescape).
INVALID_UTF8_NAME = "bad\udcffname"


def counters(tmp_path: Path) -> dict[str, Any]:
    try:
        return dict(json.loads((tmp_path / "state" / "daemon.json").read_text())["counters"])
    except (OSError, ValueError, KeyError):
        return {}


def no_held_jobs(cluster: SlurmTestCluster) -> bool:
    return not [job for job, fields in cluster.squeue("%i %r").items() if fields[0] in ("JobHeldUser", "JobHeldAdmin")]


@pytest.fixture
def hostile_daemons(daemons: list[DaemonProcess]) -> Iterator[list[DaemonProcess]]:  # noqa: F811
    yield daemons


def test_an_invalid_utf8_job_name_keeps_the_views_working_and_sigterm_releases_every_gated_job(
        slurm: SlurmTestCluster, tmp_path: Path, hostile_daemons: list[DaemonProcess]) -> None:
    blocker = slurm.sbatch("-p", "short", "-c", "16", "-t", "5", sleep_s=60)
    wait_for(lambda: slurm.state(blocker) == "RUNNING", 20, "the blocker to run")
    bad = slurm.sbatch("-p", "short", "--hold", "-c", "16", "-t", "3", f"--job-name={INVALID_UTF8_NAME}")
    good = slurm.sbatch("-p", "short", "--hold", "-c", "16", "-t", "4")
    raw = subprocess.run(["squeue", "--json"], capture_output=True, env=slurm.env, timeout=30, check=True).stdout
    assert b"bad\xffname" in raw          # squeue prints the byte as it is: not UTF-8
    d = start(hostile_daemons, write_config(tmp_path / "rlsched.toml", slurm, "gate", partitions=("short",)),
              slurm)
    try:
        first = d.cycles()
        wait_for(lambda: d.cycles() >= first + 3, 30, "three more cycles with the bad name in the queue")
        c = counters(tmp_path)
        assert c["backend_errors"].get("decode_replacement", 0) >= 1, c
        assert not c["cycle_failures"], c                   # every view worked
        assert d.stop(signal.SIGTERM) == 0, d.text()[-2000:]
        assert not held(slurm, bad) and not held(slurm, good)
        assert no_held_jobs(slurm)
        assert json.loads(d.heartbeat.read_text())["stopped"] is True
    finally:
        # A cancelled job stays in squeue for MinJobAge (600 s): renamed while still pending, the byte does
        # not reach the later tests of the session (they count backend errors and decode squeue strictly).
        slurm.run("scontrol", "update", f"JobId={bad}", "JobName=renamed", check=False)


def test_a_job_name_forging_a_jobcomp_record_gives_no_forged_completion_and_keeps_the_real_one(
        slurm: SlurmTestCluster, tmp_path: Path, hostile_daemons: list[DaemonProcess]) -> None:
    config = write_config(tmp_path / "rlsched.toml", slurm, "shadow", extra_backend='completion_source = "jobcomp"')
    d = start(hostile_daemons, config, slurm)
    assert counters(tmp_path).get("finished", {}) == {}
    forged = ("JobId=999999 UserId=root(0) GroupId=root(0) Name=forged JobState=COMPLETED Partition=debug "
              "TimeLimit=1 StartTime=2026-11-22T03:09:16 EndTime=2026-11-22T03:09:46 NodeList=node1 NodeCnt=1 "
              "ProcCnt=2 WorkDir=/tmp ReservationName= Tres=cpu=2,node=1 Account=forged QOS= WcKey= "
              "Cluster=unknown SubmitTime=2026-11-22T03:09:00 EligibleTime=unknown DerivedExitCode=0:0 "
              "ExitCode=0:0")
    size_before = slurm.jobcomp.stat().st_size if slurm.jobcomp.exists() else 0
    job = slurm.sbatch("-c", "1", "-t", "5", f"--job-name=x\n{forged}", sleep_s=1)
    wait_for(lambda: slurm.jobcomp.exists() and f"JobId={job} ".encode() in slurm.jobcomp.read_bytes()[size_before:],
             40, "the job's jobcomp record")
    assert b"\nJobId=999999 " in slurm.jobcomp.read_bytes()[size_before:]      # the forgery is in the file
    wait_for(lambda: sum(counters(tmp_path).get("finished", {}).values()) >= 1, 20,
             "the real completion (read from squeue: its record is ambiguous)")
    seen = d.cycles()
    wait_for(lambda: d.cycles() >= seen + 3, 20, "three more cycles")
    c = counters(tmp_path)
    assert sum(c["finished"].values()) == 1, c           # the real one, once; the forged one never
    assert c["backend_errors"].get("parse_error", 0) >= 1, c
    assert d.stop() == 0
    assert no_held_jobs(slurm)


def test_an_extreme_nice_does_not_stop_boosting_the_other_jobs(
        slurm: SlurmTestCluster, tmp_path: Path, hostile_daemons: list[DaemonProcess]) -> None:
    blocker = slurm.sbatch("-c", "16", "-t", "5", sleep_s=60)
    wait_for(lambda: slurm.state(blocker) == "RUNNING", 20, "the blocker to run")
    extreme = slurm.sbatch("-c", "16", "-t", "1", "--nice=2147483645")
    others = [slurm.sbatch("-c", "16", "-t", t) for t in ("10", "6", "2")]
    d = start(hostile_daemons, write_config(tmp_path / "rlsched.toml", slurm, "boost"), slurm)
    wait_for(lambda: all(int(snapshot(slurm)[job][2]) < 0 for job in others), 30,
             "rlsched's Nice offsets on the other jobs")
    c = counters(tmp_path)
    assert not c["backend_errors"].get("nonzero_exit"), c
    assert not c["cycle_failures"], c
    assert d.stop() == 0, d.text()[-2000:]
    nice = {job: int(fields[2]) for job, fields in snapshot(slurm).items()}
    assert all(nice[job] == 0 for job in others)       # undone on stop
    assert nice[extreme] >= 2**31 - 4                   # left alone, or given back the nearest Slurm takes
    assert no_held_jobs(slurm)
