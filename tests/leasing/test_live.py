"""The live leasing controller against the real local Slurm, with real cloud nodes (issue 6).

The test cluster (``scripts/slurm-up.sh``) has four ``State=CLOUD`` nodes, cloud[1-4] (8 CPUs each, partition
``cloud``).  With ``$BASE/etc/rlsched.toml`` present, Slurm's ResumeProgram/SuspendProgram are rlsched's hooks
(``plugins/slurm/rlsched-resume``/``-suspend``), which call the provider ``scripts/local-cloud-provider``: it
"leases" a node by starting a real ``slurmd -N cloudX`` on loopback.  The daemon runs in a thread of the test
(its real loop: heartbeat, cycles, checkpoints) so that the test can read its state.

Every test leaves the cloud nodes powered down, undrained, with no provider instance left.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.register_assert_rewrite("tests.slurm_cluster")

from rlsched.daemon.config import DaemonConfig, load_config  # noqa: E402
from rlsched.daemon.loop import Daemon  # noqa: E402
from rlsched.leasing import LeasingService  # noqa: E402
from tests.slurm_cluster import SlurmTestCluster, wait_for  # noqa: E402

pytest_plugins = ["tests.slurm_cluster"]
pytestmark = [pytest.mark.slurm, pytest.mark.timeout(300)]

ROOT = Path(__file__).resolve().parents[2]
PROVIDER = ROOT / "scripts" / "local-cloud-provider"
CLOUD = ("cloud1", "cloud2", "cloud3", "cloud4")


def cloud_nodes(cluster: SlurmTestCluster) -> dict[str, dict[str, object]]:
    doc = json.loads(cluster.run("sinfo", "--json").stdout)
    return {n["name"]: n for n in doc["nodes"] if n["name"] in CLOUD}


def flags(node: dict[str, object]) -> set[str]:
    return set(node.get("state_flags") or [])  # type: ignore[call-overload]


def powered(cluster: SlurmTestCluster) -> list[str]:
    """Cloud nodes leased now (anything but powered down)."""
    return sorted(name for name, n in cloud_nodes(cluster).items() if "POWERED_DOWN" not in flags(n))


def provider_list(cluster: SlurmTestCluster) -> list[str]:
    out = subprocess.run(
        [str(PROVIDER), "--dir", str(cluster.base / "provider"), "list"],
        capture_output=True,
        text=True,
        env=cluster.env,
        timeout=30,
        check=True,
    ).stdout
    return sorted(line.split()[0] for line in out.splitlines() if line.strip())


def job_nodes(cluster: SlurmTestCluster, job_id: int) -> str:
    return cluster.run("squeue", "-h", "-j", str(job_id), "-t", "all", "-o", "%N", check=False).stdout.strip()


def reset_cloud(cluster: SlurmTestCluster) -> None:
    """Cloud nodes powered down, undrained, up; no instance left (before and after each test)."""
    cluster.cancel_all()
    names = ",".join(CLOUD)
    nodes = cloud_nodes(cluster)
    if any("DRAIN" in flags(n) or n.get("state") == "down" for n in nodes.values()):
        cluster.run("scontrol", "update", f"NodeName={names}", "State=RESUME", check=False)
    busy = [name for name, n in cloud_nodes(cluster).items() if not {"POWERED_DOWN", "POWERING_DOWN"} & flags(n)]
    if busy:
        cluster.run("scontrol", "update", f"NodeName={','.join(busy)}", "State=POWER_DOWN_FORCE", check=False)
    wait_for(
        lambda: all(
            "POWERED_DOWN" in flags(n) and "POWERING_DOWN" not in flags(n) for n in cloud_nodes(cluster).values()
        ),
        90,
        "every cloud node powered down",
    )
    subprocess.run(
        [str(PROVIDER), "--dir", str(cluster.base / "provider"), "suspend", *CLOUD],
        env=cluster.env,
        timeout=60,
        check=False,
        capture_output=True,
    )
    if any("DRAIN" in flags(n) or n.get("state") == "down" for n in cloud_nodes(cluster).values()):
        cluster.run("scontrol", "update", f"NodeName={names}", "State=RESUME", check=False)


class ThreadedDaemon:
    """The daemon's real loop in a thread; :meth:`stop` is its SIGTERM path (undo, heartbeat stopped)."""

    def __init__(self, config: DaemonConfig) -> None:
        self.daemon = Daemon(config)
        self.thread = threading.Thread(target=self.daemon.run, kwargs={"serve_metrics": False}, daemon=True)
        self.thread.start()

    @property
    def leasing(self) -> LeasingService:
        assert self.daemon.leasing is not None
        return self.daemon.leasing

    def stop(self) -> None:
        self.daemon.request_stop()
        self.thread.join(60)
        assert not self.thread.is_alive(), "the daemon did not stop"


@pytest.fixture
def cloud(slurm: SlurmTestCluster, tmp_path: Path) -> Iterator[tuple[SlurmTestCluster, Path]]:
    hooks_config = slurm.base / "etc" / "rlsched.toml"
    slurm.shared_dir(state_of(slurm, tmp_path).name)  # fresh: no ledger or failures of an earlier session
    reset_cloud(slurm)
    try:
        yield slurm, hooks_config
    finally:
        hooks_config.unlink(missing_ok=True)
        reset_cloud(slurm)


def write_config(
    cluster: SlurmTestCluster, path: Path, state_dir: Path, mode: str = "boost", **leasing: object
) -> DaemonConfig:
    table = {
        "enabled": True,
        "nodes": "cloud[1-4]",
        "max_nodes": 4,
        "policy": "fixed",
        "budget_node_hours_per_day": 100.0,
        "price_per_node_hour": 0.5,
        "min_lease_s": 10.0,
        # As slurm (the hooks) the provider goes through sudo: it starts a root slurmd (scripts/slurm-up.sh).
        "provider_command": cluster.provider_command,
        "hook_log": str(cluster.hook_log(state_dir.name)),
        "reconcile_every_s": 1.0,
        "power_up_timeout_s": 50.0,
        "orphan_grace_s": 2.0,
        **leasing,
    }
    lines = [f"{k} = {json.dumps(v)}" for k, v in table.items()]
    path.write_text(
        f"""
[backend]
mode = "{mode}"
poll_interval_s = 1
slurm_conf = "{cluster.conf}"
timeout_s = 4
retry_attempts = 2
[metrics]
listen = "off"
[state]
dir = "{state_dir}"
checkpoint_every_s = 1
[gate]
stale_after_s = 10
[leasing]
"""
        + "\n".join(lines)
        + "\n"
    )
    return load_config(path)


def state_of(cluster: SlurmTestCluster, tmp_path: Path) -> Path:
    """The test's state dir (made fresh by the ``cloud`` fixture: the name repeats across sessions)."""
    return cluster.base / "shared" / f"leasing-{tmp_path.name}"


def start(
    cluster: SlurmTestCluster, hooks_config: Path, tmp_path: Path, mode: str = "boost", **leasing: object
) -> ThreadedDaemon:
    # The hooks run as SlurmUser=slurm: they read the heartbeat and permit in a folder slurm can traverse.
    state_dir = state_of(cluster, tmp_path)
    config = write_config(cluster, hooks_config, state_dir, mode, **leasing)
    daemon = ThreadedDaemon(config)
    wait_for(lambda: (state_dir / "lease-permit.json").exists(), 20, "the first permit")
    return daemon


def submit_cloud_jobs(cluster: SlurmTestCluster, n: int, sleep_s: float) -> list[int]:
    # One whole cloud node (8 CPUs) per job, so the number of running jobs is the number of nodes in use.
    return [cluster.sbatch("-p", "cloud", "-c", "8", "-t", "5", sleep_s=sleep_s) for _ in range(n)]


def test_cloud_nodes_come_up_under_the_cap_and_a_lowered_cap_lets_busy_nodes_finish(
    cloud: tuple[SlurmTestCluster, Path], tmp_path: Path
) -> None:
    cluster, hooks = cloud
    d = start(cluster, hooks, tmp_path, max_nodes=2)
    try:
        assert powered(cluster) == []  # nothing to run: nothing leased
        jobs = submit_cloud_jobs(cluster, 4, sleep_s=20)
        peak = 0

        def two_running() -> bool:
            nonlocal peak
            peak = max(peak, len(powered(cluster)))
            return sum(cluster.state(j) == "RUNNING" for j in jobs) == 2

        wait_for(two_running, 90, "two cloud jobs running on two leased nodes", every_s=0.5)
        assert peak <= 2 and len(powered(cluster)) == 2
        assert sorted(provider_list(cluster)) == powered(cluster)  # Slurm and the provider agree
        first = [j for j in jobs if cluster.state(j) == "RUNNING"]
        busy_nodes = {job_nodes(cluster, j) for j in first}
        # Lower the hard cap to 1 while both nodes are busy.
        lowered = dataclasses.replace(d.daemon.config.leasing, max_nodes=1)
        d.leasing.config = lowered
        d.leasing.policy.config = lowered
        wait_for(
            lambda: sum("DRAIN" in flags(n) for n in cloud_nodes(cluster).values()) == 3,
            20,
            "the nodes above the new cap drained",
            every_s=0.5,
        )
        kept = d.leasing.status.allowed
        assert len(kept) == 1 and kept[0] in busy_nodes
        # The running jobs finish (drain is not kill) ...
        wait_for(lambda: all(cluster.state(j) in ("COMPLETED", "GONE") for j in first), 60, "the first two jobs")
        # ... and the other two run one after the other, on the one node allowed at the time.
        rest = [j for j in jobs if j not in first]
        for job in rest:

            def running(job: int = job) -> bool:
                return cluster.state(job) == "RUNNING"

            wait_for(running, 90, f"job {job} to start", every_s=0.5)
            # The one allowed node is a busy one first (enforce_lease_cap): when the kept node's job ends before the
            # drained one's, the cap moves to the node still busy, so either of the two may run the rest — one at a
            # time, and no third node ever comes up.
            assert job_nodes(cluster, job) in busy_nodes
            assert sum("DRAIN" not in flags(x) for x in cloud_nodes(cluster).values()) <= 1
            assert sum(cluster.state(j) == "RUNNING" for j in jobs) == 1
            assert (
                len(
                    [
                        n
                        for n, x in cloud_nodes(cluster).items()
                        if n not in busy_nodes and "POWERED_DOWN" not in flags(x)
                    ]
                )
                == 0
            )
        snap = d.leasing.snapshot()
        assert snap["cap"] == 1 and snap["node_seconds_total"] > 0 and snap["cost_total"] > 0
    finally:
        d.stop()
    # Stopping undoes the cap's drains, then drains every cloud node: the stopped heartbeat makes the hook refuse
    # every lease, so no job must wait for one (recorded: the next start resumes what its cap allows).
    nodes = {name: (sorted(flags(n)), n.get("reason")) for name, n in cloud_nodes(cluster).items()}
    assert all("DRAIN" in f and reason == "rlsched_stopped" for f, reason in nodes.values()), nodes
    record = json.loads((state_of(cluster, tmp_path) / "slurm-record.json").read_text())
    assert record["drained_by_rlsched"] == list(CLOUD)
    for name in ("heartbeat.json", "lease-permit.json", "slurm-record.json"):
        assert (state_of(cluster, tmp_path) / name).stat().st_mode & 0o777 == 0o644, name


def test_an_exhausted_budget_stops_new_leases_without_killing_running_work(
    cloud: tuple[SlurmTestCluster, Path], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cluster, hooks = cloud
    # 40 node-seconds a day, a new lease charged at least 10 s: one node can come up, then the budget is spent.
    with caplog.at_level(logging.INFO, logger="rlsched.leasing.service"):
        d = start(cluster, hooks, tmp_path, budget_node_hours_per_day=40 / 3600, max_nodes=4)
        try:
            jobs = submit_cloud_jobs(cluster, 1, sleep_s=40)
            wait_for(lambda: cluster.state(jobs[0]) == "RUNNING", 90, "the first job on a leased node", every_s=0.5)
            wait_for(lambda: d.leasing.status.budget_exhausted, 60, "the budget to run out", every_s=0.5)
            later = submit_cloud_jobs(cluster, 1, sleep_s=5)
            time.sleep(8)
            assert cluster.state(later[0]) == "PENDING"  # no new lease
            assert len(powered(cluster)) == 1
            assert cluster.state(jobs[0]) == "RUNNING"  # the running work goes on
            snap = d.leasing.snapshot()
            assert snap["budget_exhausted"] is True and snap["cap"] == 0
            assert snap["budget_left_node_hours"] < 10 / 3600  # less than one more 10 s lease
            wait_for(lambda: cluster.state(jobs[0]) in ("COMPLETED", "GONE"), 60, "the running job to complete")
            assert cluster.state(later[0]) == "PENDING"
        finally:
            d.stop()
    assert "budget exhausted" in caplog.text and "running jobs continue" in caplog.text


def test_a_stuck_power_up_and_an_orphan_are_fixed_by_the_reconcile_loop(
    cloud: tuple[SlurmTestCluster, Path], tmp_path: Path
) -> None:
    cluster, hooks = cloud
    provider_dir = cluster.base / "provider"
    provider_dir.mkdir(exist_ok=True)
    fail = provider_dir / "fail-boot-cloud3"
    fail.write_text("")
    try:
        d = start(cluster, hooks, tmp_path, power_up_timeout_s=8.0, launch_backoff_s=600.0)
        try:
            job = cluster.sbatch("-p", "cloud", "-c", "8", "-w", "cloud3", "-t", "5", sleep_s=5)
            wait_for(lambda: "POWERING_UP" in flags(cloud_nodes(cluster)["cloud3"]), 30, "cloud3 powering up")
            assert "cloud3" in provider_list(cluster)  # an instance that never boots
            # Within the timeout plus one reconcile period: powered down, counted, kept out of the cap.
            t0 = time.monotonic()
            wait_for(
                lambda: d.leasing.snapshot()["reconcile"].get("stuck_power_up", 0) == 1,
                20,
                "the stuck power-up to be found",
                every_s=0.5,
            )
            wait_for(lambda: "cloud3" not in provider_list(cluster), 30, "the stuck instance to be ended")
            assert time.monotonic() - t0 < 20
            # Kept out of the cap: drained once the forced power-down is over (Slurm drops a drain before).
            wait_for(
                lambda: (
                    "DRAIN" in flags(cloud_nodes(cluster)["cloud3"])
                    and cloud_nodes(cluster)["cloud3"].get("reason") == "rlsched_launch_backoff"
                ),
                40,
                "cloud3 drained for its launch backoff",
                every_s=0.5,
            )
            assert "cloud3" not in d.leasing.status.allowed and d.leasing.reconciler.failures == {"cloud3": 1}
            assert cluster.state(job) == "PENDING"  # requeued, not lost
            cluster.run("scancel", str(job))
            # An orphan: an instance the provider runs while Slurm has the node powered down.
            subprocess.run(
                [str(PROVIDER), "--dir", str(provider_dir), "start-orphan", "cloud4"],
                env=cluster.env,
                timeout=30,
                check=True,
                capture_output=True,
            )
            assert "cloud4" in provider_list(cluster)
            wait_for(lambda: "cloud4" not in provider_list(cluster), 15, "the orphan to be ended", every_s=0.5)
            assert d.leasing.snapshot()["reconcile"].get("orphan", 0) == 1
        finally:
            d.stop()
    finally:
        fail.unlink(missing_ok=True)


def test_shadow_mode_computes_and_exports_the_cap_but_changes_no_node(
    cloud: tuple[SlurmTestCluster, Path], tmp_path: Path
) -> None:
    cluster, hooks = cloud
    d = start(cluster, hooks, tmp_path, mode="shadow", max_nodes=1)
    try:
        jobs = submit_cloud_jobs(cluster, 2, sleep_s=10)
        wait_for(
            lambda: all(cluster.state(j) == "RUNNING" for j in jobs),
            90,
            "both jobs running: the cap of 1 is not enforced in shadow mode",
            every_s=0.5,
        )
        snap = d.leasing.snapshot()
        assert snap["cap"] == 1 and snap["enforcing"] is False
        assert not any("DRAIN" in flags(n) for n in cloud_nodes(cluster).values())
        permit = json.loads((state_of(cluster, tmp_path) / "lease-permit.json").read_text())
        assert permit["enforce"] is False
        assert d.daemon.backend.actions["node_drain"] == 0
    finally:
        d.stop()
    assert os.path.exists(state_of(cluster, tmp_path) / "leasing.json")
    assert not any("DRAIN" in flags(n) for n in cloud_nodes(cluster).values())  # shadow: no drain, even on stop
