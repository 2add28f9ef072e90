"""The daemon against the real local Slurm (``scripts/slurm-up.sh``) and a real Prometheus.

node1 has 16 CPUs; a 16-CPU "blocker" makes later jobs wait, so the order in which they start is what
rlsched controls.  The daemon runs as its own process (``python -m rlsched daemon``) so that SIGTERM and
kill -9 are real.  The agent is ``interactive-first-sjf`` (interactive first, then shortest time limit):
every job here has a limit under 15 minutes, so the expected order is the order of the limits, against
submission order.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest

pytest.register_assert_rewrite("tests.slurm_cluster", "tests.daemon.live_daemon")

from rlsched.core.policies import read_policy_spec  # noqa: E402
from tests.daemon.live_daemon import ROOT, DaemonProcess, start  # noqa: E402
from tests.slurm_cluster import SlurmTestCluster, wait_for  # noqa: E402

pytest_plugins = ["tests.slurm_cluster"]
pytestmark = [pytest.mark.slurm, pytest.mark.timeout(180)]

WATCHDOG = ROOT / "plugins" / "rlsched-gate-watchdog"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def write_config(
    path: Path,
    cluster: SlurmTestCluster,
    mode: str,
    agent: str = "interactive-first-sjf",
    port: int | None = None,
    partitions: tuple[str, ...] = (),
    stale_after_s: float = 8.0,
    extra_backend: str = "",
    model: Path | None = None,
    vos: tuple[str, ...] = ("atlas", "cms", "other"),
) -> Path:
    parts = f"partitions = {json.dumps(list(partitions))}" if partitions else ""
    if model is not None:
        agent_table = f'model = "{model}"'
    elif agent.startswith(("sarsa-", "fqi-")):
        agent_table = f'kind = "{agent}"\npretrain_decisions = 2'
    else:
        agent_table = f'kind = "{agent}"'
    path.write_text(f"""
[backend]
kind = "slurm"
mode = "{mode}"
poll_interval_s = 1
slurm_conf = "{cluster.conf}"
timeout_s = 5
retry_attempts = 1
vos = {json.dumps(list(vos))}
default_vo = "{vos[-1]}"
{parts}
{extra_backend}
[agent]
{agent_table}
[metrics]
listen = "{f"127.0.0.1:{port}" if port else "off"}"
[state]
dir = "{path.parent / "state"}"
checkpoint_every_s = 0
[gate]
stale_after_s = {stale_after_s}
""")
    return path


def start_time(cluster: SlurmTestCluster, job_id: int) -> str:
    return cluster.run("squeue", "-h", "-t", "all", "-j", str(job_id), "-o", "%S").stdout.strip()


def held(cluster: SlurmTestCluster, job_id: int) -> bool:
    reason = cluster.run("squeue", "-h", "-t", "all", "-j", str(job_id), "-o", "%r").stdout.strip()
    return reason in ("JobHeldUser", "JobHeldAdmin")


def started(cluster: SlurmTestCluster, job_id: int) -> bool:
    return cluster.state(job_id) in ("RUNNING", "COMPLETING", "COMPLETED")


def snapshot(cluster: SlurmTestCluster) -> dict[int, list[str]]:
    """Job id → state, priority, nice, held or not (what rlsched could change).  The pending reason
    itself is not compared: Slurm's scheduler turns "None" into "Resources" on its own."""
    jobs = cluster.squeue("%i %T %Q %y %r")
    return {job: [*fields[:3], str(fields[3] in ("JobHeldUser", "JobHeldAdmin"))] for job, fields in jobs.items()}


# ---------------------------------------------------------------------------------------------- shadow
def test_shadow_mode_changes_nothing_in_slurm(
    slurm: SlurmTestCluster, tmp_path: Path, daemons: list[DaemonProcess]
) -> None:
    blocker = slurm.sbatch("-c", "16", "-t", "5", sleep_s=60)
    wait_for(lambda: slurm.state(blocker) == "RUNNING", 20, "the blocker to run")
    jobs = [
        slurm.sbatch("-c", "16", "-t", "10"),
        slurm.sbatch("-c", "8", "-t", "2", "--nice=20"),
        slurm.sbatch("-c", "4", "-t", "3", "--hold"),
    ]
    before = snapshot(slurm)
    d = start(daemons, write_config(tmp_path / "rlsched.toml", slurm, "shadow"), slurm)
    wait_for(lambda: d.cycles() >= 3, 20, "three shadow cycles")
    assert d.stop() == 0
    after = snapshot(slurm)
    assert after == before and set(jobs) <= set(after)
    # It did decide: a ranking per cycle, none applied.
    counters = json.loads((tmp_path / "state" / "daemon.json").read_text())["counters"]
    assert counters["decisions"]["boost"] >= 3 and not counters["actions"]


# ---------------------------------------------------------------------------------------------- boost
def test_boost_mode_starts_the_top_ranked_job_first_and_undoes_on_sigterm(
    slurm: SlurmTestCluster, tmp_path: Path, daemons: list[DaemonProcess]
) -> None:
    blocker = slurm.sbatch("-c", "16", "-t", "5", sleep_s=300)
    wait_for(lambda: slurm.state(blocker) == "RUNNING", 20, "the blocker to run")
    # Submission order 10, 6, 2 minutes: Slurm alone would start `long` first.
    long, mid, short = (slurm.sbatch("-c", "16", "-t", t, sleep_s=30) for t in ("10", "6", "2"))
    d = start(daemons, write_config(tmp_path / "rlsched.toml", slurm, "boost"), slurm)
    wait_for(lambda: int(snapshot(slurm)[short][2]) < 0, 20, "rlsched's Nice offset on its first job")
    # The machine frees once the offsets are in place, however long the daemon took to start (a blocker that
    # ended by itself after a few seconds could free it first on a loaded machine, and Slurm would start `long`).
    slurm.run("scancel", str(blocker))
    wait_for(lambda: started(slurm, short), 40, "the top-ranked job to start when the blocker ends")
    assert not started(slurm, long) and not started(slurm, mid)
    assert d.stop() == 0
    nice = {job: int(fields[2]) for job, fields in snapshot(slurm).items()}
    assert nice.get(long, 0) == 0 and nice.get(mid, 0) == 0  # undone on stop


# ---------------------------------------------------------------------------------------------- gate
def test_gate_mode_releases_in_rlsched_order_and_everything_on_sigterm(
    slurm: SlurmTestCluster, tmp_path: Path, daemons: list[DaemonProcess]
) -> None:
    blocker = slurm.sbatch("-p", "short", "-c", "16", "-t", "5", sleep_s=3)
    wait_for(lambda: slurm.state(blocker) == "RUNNING", 20, "the blocker to run")
    # Held at submit into the gated partition; expected order by limit: c (2), b (4), d (6), a (10).
    a, b, c, d_ = (slurm.sbatch("-p", "short", "--hold", "-c", "16", "-t", t, sleep_s=2) for t in ("10", "4", "2", "6"))
    d = start(daemons, write_config(tmp_path / "rlsched.toml", slurm, "gate", partitions=("short",)), slurm)
    wait_for(lambda: started(slurm, c), 30, "the first job in rlsched's order to be released and start")
    assert held(slurm, a) and held(slurm, b) and held(slurm, d_)
    wait_for(lambda: started(slurm, b), 30, "the second job to start")
    assert held(slurm, a) and held(slurm, d_)
    assert start_time(slurm, c) <= start_time(slurm, b)
    assert d.stop() == 0, d.text()[-2000:]
    assert not held(slurm, a) and not held(slurm, d_)  # SIGTERM: every gated job flows again
    assert json.loads(d.heartbeat.read_text())["stopped"] is True


def test_gate_mode_runs_a_model_trained_in_the_simulator(
    slurm: SlurmTestCluster, tmp_path: Path, daemons: list[DaemonProcess]
) -> None:
    """``rlsched sim run --policy sarsa-esn --save-model m.npz``, then ``[agent] model = "m.npz"``: it decides."""
    model = tmp_path / "m.npz"
    trained = subprocess.run(
        [
            sys.executable,
            "-m",
            "rlsched",
            "sim",
            "run",
            "--workload",
            "lal",
            "--scale",
            "0.05",
            "--policy",
            "sarsa-esn:pretrain_decisions=20",
            "--save-model",
            str(model),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert trained.returncode == 0 and model.is_file(), trained.stderr[-2000:]
    lal_vos = tuple(f"vo{k}" for k in range(1, 8))
    config = write_config(tmp_path / "rlsched.toml", slurm, "gate", model=model, partitions=("short",), vos=lal_vos)
    jobs = [slurm.sbatch("-p", "short", "--hold", "-c", "8", "-t", "3", sleep_s=1) for _ in range(3)]
    d = start(daemons, config, slurm)
    wait_for(lambda: all(slurm.state(j) in ("COMPLETED", "GONE") for j in jobs), 60, "the model to release the jobs")
    assert d.stop() == 0, d.text()[-2000:]
    assert f"loaded model {model}" in d.text()
    counters = json.loads((tmp_path / "state" / "daemon.json").read_text())["counters"]
    assert counters["decisions"]["release"] >= 3
    spec, _ = read_policy_spec(tmp_path / "state" / "agent.npz")  # continued learning, from this model
    assert spec.source is not None and spec.source["path"] == str(model) and spec.name == "sarsa-esn"


def test_gate_failsafe_after_kill_9_the_watchdog_releases_every_held_job(
    slurm: SlurmTestCluster, tmp_path: Path, daemons: list[DaemonProcess]
) -> None:
    blocker = slurm.sbatch("-p", "short", "-c", "16", "-t", "5", sleep_s=120)
    wait_for(lambda: slurm.state(blocker) == "RUNNING", 20, "the blocker to run")
    jobs = [slurm.sbatch("-p", "short", "--hold", "-c", "16", "-t", "3") for _ in range(2)]
    d = start(
        daemons, write_config(tmp_path / "rlsched.toml", slurm, "gate", partitions=("short",), stale_after_s=6.5), slurm
    )  # > poll 1 s + one 5 s call
    watchdog = subprocess.Popen(
        [sys.executable, str(WATCHDOG), "--heartbeat", str(d.heartbeat), "--loop", "0.5"],
        env=slurm.env,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        time.sleep(7.5)  # longer than stale_after_s: a live daemon keeps its jobs held
        assert all(held(slurm, j) for j in jobs)
        d.proc.kill()  # kill -9: no chance to release anything itself
        d.proc.wait(10)
        assert all(held(slurm, j) for j in jobs)
        wait_for(lambda: not any(held(slurm, j) for j in jobs), 20, "the watchdog to release the held jobs")
    finally:
        watchdog.kill()
        watchdog.wait(10)


def test_gate_failsafe_when_rlsched_is_removed(slurm: SlurmTestCluster, tmp_path: Path) -> None:
    """No heartbeat at all (never installed, or removed): the watchdog releases by its own config."""
    blocker = slurm.sbatch("-p", "short", "-c", "16", "-t", "5", sleep_s=60)
    wait_for(lambda: slurm.state(blocker) == "RUNNING", 20, "the blocker to run")
    job = slurm.sbatch("-p", "short", "--hold", "-c", "4", "-t", "3")
    other = slurm.sbatch("-p", "debug", "--hold", "-c", "4", "-t", "3")  # not gated: left alone
    done = subprocess.run(
        [sys.executable, str(WATCHDOG), "--heartbeat", str(tmp_path / "none.json"), "--partitions", "short"],
        env=slurm.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert not held(slurm, job) and held(slurm, other)


# ---------------------------------------------------------------------------------------------- slurmctld restart
def slurmctld_pid(cluster: SlurmTestCluster) -> int:
    return int((cluster.base / "run" / "slurmctld.pid").read_text().strip())


def test_the_daemon_survives_a_slurmctld_restart_and_resumes_acting(
    slurm: SlurmTestCluster, tmp_path: Path, daemons: list[DaemonProcess]
) -> None:
    d = start(daemons, write_config(tmp_path / "rlsched.toml", slurm, "boost"), slurm)
    pid = slurmctld_pid(slurm)
    os.kill(pid, signal.SIGTERM)
    wait_for(lambda: not Path(f"/proc/{pid}").exists(), 30, "slurmctld to stop")
    try:
        before = d.cycles()
        wait_for(lambda: d.cycles() >= before + 3, 30, "cycles to go on with slurmctld down")
        assert d.alive()
        counters = json.loads((tmp_path / "state" / "daemon.json").read_text())["counters"]
        assert counters["cycle_failures"].get("view", 0) >= 1 and sum(counters["backend_errors"].values()) >= 1
    finally:
        subprocess.run(["slurmctld", "-f", slurm.conf], env=slurm.env, check=True, timeout=60)  # no -c: keep state
    wait_for(lambda: slurm.run("scontrol", "ping", check=False).returncode == 0, 30, "slurmctld back")
    wait_for(
        lambda: "idle" in slurm.run("sinfo", "-h", "-n", "node1", "-o", "%T", check=False).stdout,
        30,
        "node1 idle again",
    )
    blocker = slurm.sbatch("-c", "16", "-t", "5", sleep_s=30)
    wait_for(lambda: slurm.state(blocker) == "RUNNING", 20, "the blocker to run")
    long, short = slurm.sbatch("-c", "16", "-t", "10"), slurm.sbatch("-c", "16", "-t", "2")
    wait_for(
        lambda: int(snapshot(slurm).get(short, ["", "", "0"])[2]) < 0,
        30,
        "the daemon to act again (Nice offset on its top job)",
    )
    assert d.stop() == 0
    assert int(snapshot(slurm)[long][2]) == 0


# ---------------------------------------------------------------------------------------------- prometheus
def prometheus_query(port: int, query: str) -> list[dict[str, Any]]:
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": query})
    with urllib.request.urlopen(url, timeout=5) as reply:
        data = json.loads(reply.read())
    assert data["status"] == "success"
    return list(data["data"]["result"])


@pytest.mark.prometheus
def test_prometheus_scrapes_rewards_and_the_checkpoint_changes(
    slurm: SlurmTestCluster, tmp_path: Path, daemons: list[DaemonProcess]
) -> None:
    exporter_port, prom_port = free_port(), free_port()
    env = {**os.environ, "PROM_BASE": str(tmp_path / "prometheus")}
    up = subprocess.run(
        [str(ROOT / "scripts" / "prometheus-up.sh"), str(prom_port), f"127.0.0.1:{exporter_port}"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if up.returncode != 0:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"Prometheus is required in CI: {up.stderr.strip()[-500:]}")
        pytest.skip(f"Prometheus unavailable: {up.stderr.strip()[-300:]}")
    try:
        config = write_config(
            tmp_path / "rlsched.toml", slurm, "gate", agent="sarsa-esn", port=exporter_port, partitions=("short",)
        )
        d = start(daemons, config, slurm)
        model = tmp_path / "state" / "agent.npz"
        wait_for(model.exists, 20, "the first model checkpoint")
        first = model.read_bytes()
        jobs = [slurm.sbatch("-p", "short", "--hold", "-c", "8", "-t", "3", sleep_s=1) for _ in range(3)]
        wait_for(lambda: all(slurm.state(j) in ("COMPLETED", "GONE") for j in jobs), 60, "the gated jobs to finish")

        def rewards() -> float:
            result = prometheus_query(prom_port, "rlsched_reward_count")
            return float(result[0]["value"][1]) if result else 0.0

        wait_for(lambda: rewards() >= 3, 40, "Prometheus to hold the rewards of the three jobs", every_s=0.5)
        assert model.read_bytes() != first  # learning reached the checkpoint
        cycles = prometheus_query(prom_port, "rlsched_cycles_total")
        assert cycles and float(cycles[0]["value"][1]) >= 1
        state = prometheus_query(prom_port, "rlsched_state")
        assert {r["metric"]["feature"] for r in state} >= {"backlog", "idle_fraction"}
        assert prometheus_query(prom_port, 'rlsched_decisions_total{kind="release"}')
        assert d.stop() == 0
    finally:
        subprocess.run([str(ROOT / "scripts" / "prometheus-down.sh")], env=env, capture_output=True, timeout=60)
