"""The daemon against the real local OpenPBS (``scripts/pbs-up.sh``), mirroring the Slurm tests (test_live.py).

The node has 8 CPUs; an 8-CPU "blocker" makes later jobs wait, so the order in which they start is what
rlsched controls.  The daemon runs as its own process (``python -m rlsched daemon``) so that SIGTERM and
kill -9 are real; it reaches PBS through ``command_prefix = ["ip", "netns", "exec", "rlsched-pbs"]``.  The
agent is ``interactive-first-sjf``: every job here has a walltime under 15 minutes, so the expected order is
the order of the walltimes, against submission order (PBS alone starts in submission order).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.register_assert_rewrite("tests.pbs_cluster", "tests.slurm_cluster", "tests.daemon.live_daemon")

from tests.daemon.live_daemon import ROOT, DaemonProcess, start  # noqa: E402
from tests.pbs_cluster import PBSTestServer  # noqa: E402
from tests.slurm_cluster import wait_for  # noqa: E402

# func_only: the first use builds OpenPBS in the session fixture (minutes), which no test timeout should cut.
pytestmark = [pytest.mark.pbs, pytest.mark.timeout(240, func_only=True)]

WATCHDOG = ROOT / "plugins" / "rlsched-gate-watchdog"


def write_config(
    path: Path,
    server: PBSTestServer,
    mode: str,
    queues: tuple[str, ...] = (),
    stale_after_s: float = 8.0,
    extra_backend: str = "",
    agent: str = "interactive-first-sjf",
) -> Path:
    scope = f"queues = {json.dumps(list(queues))}" if queues else ""
    path.write_text(f"""
[backend]
kind = "pbs"
mode = "{mode}"
poll_interval_s = 1
command_prefix = {json.dumps(server.command_prefix)}
bin_dir = "{server.bin_dir}"
sched_config = "{server.sched_config}"
priority_sort_check = "refuse"
vo_from = "account"
timeout_s = 5
retry_attempts = 1
vos = ["atlas", "cms", "other"]
default_vo = "other"
{scope}
{extra_backend}
[agent]
{agent_table(agent)}
[metrics]
listen = "off"
[state]
dir = "{path.parent / "state"}"
checkpoint_every_s = 0
[gate]
stale_after_s = {stale_after_s}
""")
    return path


def agent_table(agent: str) -> str:
    if agent.startswith(("sarsa-", "fqi-")):
        return f'kind = "{agent}"\npretrain_decisions = 2'
    return f'kind = "{agent}"'


def snapshot(pbs: PBSTestServer) -> dict[str, tuple[str, int, str]]:
    """Job id → state, priority, hold types (what rlsched could change)."""
    return {
        job_id: (str(j.get("job_state")), int(j.get("Priority", 0)), str(j.get("Hold_Types", "n")))
        for job_id, j in pbs.jobs().items()
    }


def stime(pbs: PBSTestServer, job_id: str) -> float:
    text = str(pbs.job(job_id)["stime"])
    return time.mktime(time.strptime(" ".join(text.split()[1:]), "%b %d %H:%M:%S %Y"))


def blocker(pbs: PBSTestServer, sleep_s: float) -> str:
    job = pbs.qsub(walltime_min=5, sleep_s=sleep_s)
    wait_for(lambda: pbs.state(job) == "R", 30, "the blocker to run")
    return job


# ---------------------------------------------------------------------------------------------- shadow
def test_shadow_mode_changes_nothing_in_pbs(pbs: PBSTestServer, tmp_path: Path, daemons: list[DaemonProcess]) -> None:
    blocker(pbs, 60)
    jobs = [
        pbs.qsub(walltime_min=10),
        pbs.qsub("-p", "20", ncpus=4, walltime_min=2),
        pbs.qsub("-h", ncpus=2, walltime_min=3),
    ]
    before = snapshot(pbs)
    d = start(daemons, write_config(tmp_path / "rlsched.toml", pbs, "shadow"))
    wait_for(lambda: d.cycles() >= 3, 20, "three shadow cycles")
    assert d.stop() == 0, d.text()[-2000:]
    after = snapshot(pbs)
    assert after == before and set(jobs) <= set(after)
    counters = d.counters()
    assert counters["decisions"]["boost"] >= 3 and not counters["actions"]  # type: ignore[index]


# ---------------------------------------------------------------------------------------------- boost
def test_boost_mode_starts_the_top_ranked_job_first_and_undoes_on_sigterm(
    pbs: PBSTestServer, tmp_path: Path, daemons: list[DaemonProcess]
) -> None:
    first = blocker(pbs, 8)
    # Submission order 10, 6, 2 minutes: PBS alone would start `long` first.
    long, mid, short = (pbs.qsub(walltime_min=t, sleep_s=30) for t in (10, 6, 2))
    d = start(daemons, write_config(tmp_path / "rlsched.toml", pbs, "boost"))
    wait_for(lambda: pbs.priority(short) == 1023, 20, "rlsched's priority on its first job")
    assert pbs.priority(mid) == 1022 and pbs.priority(long) == 1021
    wait_for(lambda: pbs.started(short), 60, "the top-ranked job to start when the blocker ends")
    assert pbs.state(first) in ("E", "F") and not pbs.started(long) and not pbs.started(mid)
    assert d.stop() == 0, d.text()[-2000:]
    assert pbs.priority(long) == 0 and pbs.priority(mid) == 0  # undone on stop
    record = json.loads((tmp_path / "state" / "pbs-record.json").read_text())
    assert record["original_priority"] == {} and record["held_by_rlsched"] == []


def test_boost_is_refused_in_one_line_when_the_scheduler_ignores_priorities(
    pbs: PBSTestServer, tmp_path: Path, daemons: list[DaemonProcess]
) -> None:
    blocker(pbs, 60)
    waiting = pbs.qsub(walltime_min=2)
    plain = tmp_path / "sched_config"  # a scheduler config without the job_priority sort key
    plain.write_text('job_sort_key: "ncpus LOW"\tALL\n')
    config = write_config(tmp_path / "rlsched.toml", pbs, "boost")
    config.write_text(config.read_text().replace(f'sched_config = "{pbs.sched_config}"', f'sched_config = "{plain}"'))
    d = start(daemons, config)
    wait_for(lambda: d.cycles() >= 3, 20, "three cycles")
    assert d.stop() == 0
    refusals = [line for line in d.text().splitlines() if "does not boost" in line]
    assert len(refusals) == 1 and "ncpus LOW" in refusals[0], d.text()[-2000:]
    assert pbs.priority(waiting) == 0


# ---------------------------------------------------------------------------------------------- gate
def test_gate_mode_releases_in_rlsched_order_and_everything_on_sigterm(
    pbs: PBSTestServer, tmp_path: Path, daemons: list[DaemonProcess]
) -> None:
    blocker(pbs, 4)
    # Held at submit; expected order by walltime: c (2), b (4), d (6), a (10).
    a, b, c, d_ = (pbs.qsub("-h", walltime_min=t, sleep_s=3) for t in (10, 4, 2, 6))
    d = start(daemons, write_config(tmp_path / "rlsched.toml", pbs, "gate", queues=("workq",)))
    wait_for(lambda: pbs.started(c), 60, "the first job in rlsched's order to be released and start")
    assert pbs.held(a) and pbs.held(b) and pbs.held(d_)
    wait_for(lambda: pbs.started(b), 60, "the second job to start")
    assert pbs.held(a) and pbs.held(d_)
    assert stime(pbs, c) <= stime(pbs, b)
    assert d.stop() == 0, d.text()[-2000:]
    assert not pbs.held(a) and not pbs.held(d_)  # SIGTERM: every gated job flows again
    assert json.loads(d.heartbeat.read_text())["stopped"] is True


def test_gate_failsafe_after_kill_9_the_watchdog_releases_every_held_job(
    pbs: PBSTestServer, tmp_path: Path, daemons: list[DaemonProcess]
) -> None:
    blocker(pbs, 120)
    jobs = [pbs.qsub("-h", walltime_min=3) for _ in range(2)]
    d = start(
        daemons, write_config(tmp_path / "rlsched.toml", pbs, "gate", queues=("workq",), stale_after_s=6.5)
    )  # > poll 1 s + one 5 s call
    heartbeat = json.loads(d.heartbeat.read_text())
    assert heartbeat["batch_system"] == "pbs" and heartbeat["queues"] == ["workq"]
    watchdog = subprocess.Popen(
        [sys.executable, str(WATCHDOG), "--heartbeat", str(d.heartbeat), "--loop", "0.5"],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        time.sleep(7.5)  # longer than stale_after_s: a live daemon keeps its jobs held
        assert all(pbs.held(j) for j in jobs)
        d.proc.kill()  # kill -9: no chance to release anything itself
        d.proc.wait(10)
        assert all(pbs.held(j) for j in jobs)
        wait_for(lambda: not any(pbs.held(j) for j in jobs), 20, "the watchdog to release the held jobs")
    finally:
        watchdog.kill()
        watchdog.wait(10)


def test_gate_failsafe_when_rlsched_is_removed(pbs: PBSTestServer, tmp_path: Path) -> None:
    """No heartbeat at all: the watchdog releases by its own arguments, and only in the named queue."""
    blocker(pbs, 60)
    job = pbs.qsub("-h", ncpus=2, walltime_min=3)
    pbs.run("qmgr", "-c", "create queue rlsched_other queue_type=execution,enabled=true,started=true", check=False)
    other = pbs.qsub("-h", "-q", "rlsched_other", ncpus=2, walltime_min=3)
    done = subprocess.run(
        [
            sys.executable,
            str(WATCHDOG),
            "--heartbeat",
            str(tmp_path / "none.json"),
            "--batch-system",
            "pbs",
            "--partitions",
            "workq",
            "--command-prefix",
            " ".join(pbs.command_prefix),
            "--bin-dir",
            pbs.bin_dir,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert not pbs.held(job) and pbs.held(other)


def test_the_watchdog_releases_the_holds_of_the_undo_record_in_any_queue(pbs: PBSTestServer, tmp_path: Path) -> None:
    """A gate daemon restarted in boost mode has no gated queue; what its undo record lists as held by rlsched is
    still released (in whatever queue), a hold the record does not list is the user's and stays."""
    blocker(pbs, 60)
    pbs.run("qmgr", "-c", "create queue rlsched_other queue_type=execution,enabled=true,started=true", check=False)
    ours = pbs.qsub("-h", "-q", "rlsched_other", ncpus=2, walltime_min=3)
    users = pbs.qsub("-h", "-q", "rlsched_other", ncpus=2, walltime_min=3)
    record = tmp_path / "pbs-record.json"
    number = int(ours.split(".", 1)[0])
    record.write_text(json.dumps({"version": 1, "held_by_rlsched": [number], "pbs_ids": {str(number): ours}}))
    heartbeat = tmp_path / "heartbeat.json"
    heartbeat.write_text(
        json.dumps(
            {
                "mode": "boost",
                "time": time.time() - 600,
                "stale_after_s": 120,
                "stopped": False,
                "batch_system": "pbs",
                "queues": ["workq"],
                "gated_partitions": [],
                "command_prefix": pbs.command_prefix,
                "bin_dir": pbs.bin_dir,
                "undo_record": str(record),
            }
        )
    )
    done = subprocess.run(
        [sys.executable, str(WATCHDOG), "--heartbeat", str(heartbeat)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert not pbs.held(ours) and pbs.held(users)
    assert "1 in the undo record" in done.stderr


# ---------------------------------------------------------------------------------------------- rewards
def test_completed_jobs_produce_rewards(pbs: PBSTestServer, tmp_path: Path, daemons: list[DaemonProcess]) -> None:
    # A learning agent in gate mode (as test_live.py's Prometheus test): it releases the held jobs, and each
    # one's completion, read from the job history, is the reward of that decision.
    d = start(daemons, write_config(tmp_path / "rlsched.toml", pbs, "gate", queues=("workq",), agent="sarsa-esn"))
    jobs = [pbs.qsub("-h", "-A", vo, ncpus=4, walltime_min=2, sleep_s=1) for vo in ("atlas", "cms", "atlas")]
    wait_for(lambda: all(pbs.state(j) == "F" for j in jobs), 90, "the gated jobs to finish")
    wait_for(lambda: int(d.counters().get("rewards", 0)) >= 3, 30, "a reward for each finished job")  # type: ignore[call-overload]
    assert d.stop() == 0
    counters = d.counters()
    assert counters["rewards"] == 3, counters  # each once, nothing from before the daemon
    assert counters["decisions"]["release"] >= 3 and sum(counters["finished"].values()) == 3  # type: ignore[index,attr-defined]


# ---------------------------------------------------------------------------------------------- server restart
def gone(pid: int) -> bool:
    """Exited (a zombie nobody has reaped yet is gone too)."""
    try:
        return "\nState:\tZ" in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return True


def test_the_daemon_survives_a_pbs_server_restart_and_resumes_acting(
    pbs: PBSTestServer, tmp_path: Path, daemons: list[DaemonProcess]
) -> None:
    d = start(daemons, write_config(tmp_path / "rlsched.toml", pbs, "boost"))
    pid = pbs.server_pid()
    assert pid is not None
    os.kill(pid, signal.SIGTERM)
    wait_for(lambda: gone(pid), 30, "pbs_server to stop")
    try:
        before = d.cycles()
        wait_for(lambda: d.cycles() >= before + 3, 40, "cycles to go on with the server down")
        assert d.alive()
        counters = d.counters()
        assert counters["cycle_failures"].get("view", 0) >= 1  # type: ignore[attr-defined]
        assert sum(counters["backend_errors"].values()) >= 1  # type: ignore[attr-defined]
    finally:
        pbs.start_server()
    wait_for(pbs.node_up, 60, "the node back (free)")
    blocker(pbs, 30)
    long, short = pbs.qsub(walltime_min=10), pbs.qsub(walltime_min=2)
    wait_for(lambda: pbs.priority(short) == 1023, 30, "the daemon to act again (priority on its top job)")
    assert d.stop() == 0
    assert pbs.priority(long) == 0 and pbs.priority(short) == 0
