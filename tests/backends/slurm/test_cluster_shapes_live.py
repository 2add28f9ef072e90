"""The Slurm backend on the shapes of a real cluster (issue 16): job arrays, multi-node jobs, two partitions
sharing nodes, GRES and GRES-less jobs — against the test cluster's node2 (4 CPUs, one gpu) and node3 (4
CPUs, no GRES), which the partitions ``wide`` and ``accel`` share (scripts/slurm-up.sh)."""

from __future__ import annotations

import json

import pytest

pytest.register_assert_rewrite("tests.slurm_cluster")

from rlsched.backends.slurm import SlurmBackend, SlurmBackendConfig  # noqa: E402
from tests.slurm_cluster import SlurmTestCluster, wait_for  # noqa: E402

pytestmark = [pytest.mark.slurm, pytest.mark.timeout(180)]


def backend(cluster: SlurmTestCluster, *partitions: str) -> SlurmBackend:
    return SlurmBackend(
        SlurmBackendConfig(
            slurm_conf=cluster.conf, partitions=frozenset(partitions), vos=("atlas", "cms", "other"), default_vo="other"
        )
    )


def array_tasks(cluster: SlurmTestCluster, array_id: int) -> dict[str, str]:
    """Task id → state of every task of the array Slurm still lists (pending ones folded in one record)."""
    out = cluster.run("squeue", "-h", "-t", "all", "-r", "-j", str(array_id), "-o", "%K %T").stdout
    return dict(line.split() for line in out.splitlines() if line.strip())


def test_the_nodes_partitions_and_gres_are_as_configured(slurm: SlurmTestCluster) -> None:
    doc = json.loads(slurm.run("sinfo", "--json").stdout)
    nodes = {n["name"]: n for n in doc["nodes"]}
    assert {"node1", "node2", "node3"} <= set(nodes)
    assert nodes["node2"]["gres"] == "gpu:1" and not nodes["node3"]["gres"]
    assert set(nodes["node2"]["partitions"]) == set(nodes["node3"]["partitions"]) == {"wide", "accel"}
    config = slurm.run("scontrol", "show", "config").stdout
    assert "SlurmUser               = slurm(" in config  # not root
    assert "MULTIPLE_SLURMD         = Yes" in config  # Debian's 22.05 build: one slurmd per node here


def test_a_job_array_is_one_pending_record_and_releasing_it_releases_every_task(slurm: SlurmTestCluster) -> None:
    out = slurm.run(
        "sbatch",
        "--parsable",
        "-o",
        "/dev/null",
        "-p",
        "wide",
        "--array=0-5",
        "-c",
        "4",
        "-t",
        "2",
        "--hold",
        "--wrap",
        "sleep 2",
    ).stdout
    array_id = int(out.strip().split(";")[0])
    b = backend(slurm, "wide")
    view = b.view()
    rows = view.pending.job_id.tolist()
    assert rows == [array_id]  # six tasks, one pending record (Slurm splits them as they start)
    assert view.pending.held.tolist() == [True] and view.pending.cores.tolist() == [4]
    assert b.errors.total() == 0
    assert b.release_gated() == 1  # one release for the record ...
    # ... and every task runs (two at a time on node2 and node3) and ends: none is left held.
    wait_for(
        lambda: set(array_tasks(slurm, array_id).values()) <= {"COMPLETED"} and len(array_tasks(slurm, array_id)) == 6,
        60,
        "the six tasks to complete",
    )
    assert b.view().pending.job_id.tolist() == [] and b.errors.total() == 0


def test_a_multi_node_job_counts_all_its_cpus_and_a_boost_reaches_it(slurm: SlurmTestCluster) -> None:
    blocker = slurm.sbatch("-p", "wide", "-w", "node3", "-c", "1", "-t", "2", sleep_s=60)
    wait_for(lambda: slurm.state(blocker) == "RUNNING", 20, "a one-CPU job on node3")
    wide = slurm.sbatch("-p", "wide", "-N", "2", "--ntasks-per-node", "1", "-c", "4", "-t", "2", sleep_s=5)
    other = slurm.sbatch("-p", "wide", "-c", "4", "-t", "3", sleep_s=5)
    b = backend(slurm, "wide", "accel")
    view = b.view()
    pending = dict(zip(view.pending.job_id.tolist(), view.pending.cores.tolist(), strict=True))
    assert pending[wide] == 8  # two nodes of 4 CPUs
    assert view.total_cores == 8 and view.idle_cores == 7  # 4 on node2, 3 on node3: neither is enough
    b.boost([wide, other])
    nice = {job: int(fields[0]) for job, fields in slurm.squeue("%i %y").items()}
    assert nice[wide] < nice[other] <= 0
    b.undo()
    slurm.run("scancel", str(blocker))
    wait_for(lambda: slurm.state(wide) in ("RUNNING", "COMPLETED"), 30, "the two-node job to start")
    nodes = slurm.run("squeue", "-h", "-t", "all", "-j", str(wide), "-o", "%N").stdout.strip()
    assert nodes == "node[2-3]"
    assert b.errors.total() == 0


def test_gres_and_gres_less_jobs_share_the_nodes_and_the_partitions(slurm: SlurmTestCluster) -> None:
    gpu_jobs = [slurm.sbatch("-p", "accel", "--gres=gpu:1", "-c", "1", "-t", "2", sleep_s=30) for _ in range(2)]
    plain = slurm.sbatch("-p", "accel", "-c", "2", "-t", "2", sleep_s=30)
    both = slurm.sbatch("-p", "wide,accel", "--hold", "-c", "1", "-t", "2", sleep_s=1)
    wait_for(
        lambda: slurm.state(gpu_jobs[0]) == "RUNNING" and slurm.state(plain) == "RUNNING",
        20,
        "the first gpu job and the GRES-less job",
    )
    # One gpu in the cluster: the second gpu job waits although CPUs are idle.
    assert slurm.state(gpu_jobs[1]) == "PENDING"
    node = slurm.run("squeue", "-h", "-j", str(gpu_jobs[0]), "-o", "%N").stdout.strip()
    assert node == "node2"
    b = backend(slurm, "accel")
    view = b.view()
    assert set(view.pending.job_id.tolist()) == {gpu_jobs[1], both}  # a job of two partitions is in scope
    assert set(view.running.job_id.tolist()) == {gpu_jobs[0], plain}
    assert b.errors.total() == 0
    assert b.release_gated() == 1  # the held job of wide,accel
    wait_for(lambda: slurm.state(both) in ("RUNNING", "COMPLETED", "GONE"), 30, "the released job to run")
