"""The multifactor emulation against the real thing: Slurm 22.05 with slurmdbd (``scripts/slurm-up.sh``).

Jobs of several accounts and users run first, across one of Slurm's decay passes (so their decayed
usage differs), a 16-CPU blocker
fills node1, and a batch of jobs of various accounts, users, sizes and partitions waits behind it.
Right after one of Slurm's decay passes (PriorityCalcPeriod = 1 min on the test cluster) the
emulation — fed with the cluster's slurm.conf, ``sshare`` usage and the pending jobs' accrue times,
sizes, associations and partitions — computes every factor and the queue order; they must equal
what ``sprio`` reports.

Tolerances (see docs/multifactor.md, "Checked against Slurm"): sprio prints factors to 7 decimals
and Slurm's clock is whole seconds, so age may differ by 1 s / PriorityMaxAge (600 s) ≈ 0.0017
(allowed: 0.002); fair-share is a rank among the users in Fair Tree, computed from sshare's
RawUsage, which sshare rounds to whole CPU-seconds: equal unless two usages lie within a second of
each other (the jobs below make them differ by far more), so allowed: 1e-6; job size and partition
are ratios of integers: 1e-6; the priority is truncated from the weighted sum: ±2 (age's rounding
times PriorityWeightAge 1000 gives up to 1.7).
"""

from __future__ import annotations

import json
import struct
import time
from pathlib import Path

import numpy as np
import pytest

pytest.register_assert_rewrite("tests.slurm_cluster")

from rlsched.backends.common.runner import CommandExecutor, SubprocessRunner  # noqa: E402
from rlsched.backends.slurm.priority import read_slurm_conf, read_sprio, read_sshare, site_params  # noqa: E402
from rlsched.core.multifactor import AssocTree, job_factors, queue_order  # noqa: E402
from tests.slurm_cluster import SlurmTestCluster, wait_for  # noqa: E402

pytestmark = [pytest.mark.slurm, pytest.mark.timeout(300)]

AGE_TOL = 0.002
EXACT_TOL = 1e-6
PRIORITY_TOL = 2.0


def last_decay_pass(cluster: SlurmTestCluster) -> int:
    """When Slurm's decay thread last ran: the first 64-bit big-endian time of its state file."""
    data = (cluster.base / "state" / "priority_last_decay_ran").read_bytes()
    return int(struct.unpack(">q", data[:8])[0])


def submit(cluster: SlurmTestCluster, account: str | None, user: str, cpus: int, partition: str, sleep_s: float) -> int:
    argv = [
        "sbatch",
        "--parsable",
        "-o",
        "/dev/null",
        "-D",
        "/tmp",
        "-n",
        str(cpus),
        "-p",
        partition,
        *(["-A", account] if account else []),
        "--wrap",
        f"sleep {sleep_s:g}",
    ]
    if user != "root":
        argv = ["runuser", "-u", user, "--", *argv]
    return int(cluster.run(*argv).stdout.strip().split(";")[0])


def cluster_size(cluster: SlurmTestCluster) -> tuple[float, float]:
    """(CPUs, nodes) of every node in slurm.conf: Slurm's job size factor divides by these."""
    cpus = {}
    for line in cluster.run("sinfo", "-h", "-N", "-o", "%N %c").stdout.splitlines():
        name, count = line.split()
        cpus[name] = int(count)
    return float(sum(cpus.values())), float(len(cpus))


def test_emulated_factors_and_order_equal_sprio(slurm: SlurmTestCluster) -> None:
    # 1. Usage that differs by account and user: Slurm charges running jobs at its decay passes (and, without
    #    AccountingStorageEnforce=limits, nothing at their end), so these run across one pass, then stop.
    usage_jobs = [
        submit(slurm, "alpha", "root", 6, "debug", 300),
        submit(slurm, "beta", "nobody", 3, "debug", 300),
        submit(slurm, "gamma", "root", 1, "debug", 300),
        submit(slurm, "beta", "root", 2, "short", 300),
    ]
    wait_for(lambda: all(slurm.state(j) == "RUNNING" for j in usage_jobs), 30, "the usage jobs to start")
    started_at = int(time.time())
    wait_for(lambda: last_decay_pass(slurm) > started_at + 1, 80, "a decay pass while they run", every_s=0.5)
    slurm.run("scancel", *map(str, usage_jobs))
    wait_for(
        lambda: all(slurm.state(j) not in ("RUNNING", "COMPLETING") for j in usage_jobs), 30, "the usage jobs to stop"
    )
    # 2. node1 full, then a batch of waiting jobs, a few seconds apart (ages differ).
    blocker = submit(slurm, "gamma", "nobody", 16, "debug", 600)
    wait_for(lambda: slurm.state(blocker) == "RUNNING", 30, "the blocker to start")
    batch = [
        ("alpha", "root", 2, "debug"),
        ("beta", "nobody", 1, "high"),
        ("gamma", "root", 4, "short"),
        ("gamma", "nobody", 1, "debug"),
        ("beta", "root", 8, "high"),
        ("alpha", "nobody", 3, "debug"),
        (None, "root", 1, "debug"),
        ("beta", "root", 2, "debug"),
    ]
    waiting = []
    for k, (account, user, cpus, partition) in enumerate(batch):
        waiting.append(submit(slurm, account, user, cpus, partition, 60))
        if k % 2:
            time.sleep(2.5)
    submitted_at = int(time.time())
    # 3. Wait for a decay pass after every job is queued and accruing age, then read everything between
    #    two passes (the pass time must not move while we read).
    wait_for(lambda: last_decay_pass(slurm) > submitted_at + 1, 80, "a priority decay pass", every_s=0.5)
    executor = CommandExecutor(SubprocessRunner(slurm.env), timeout_s=20)
    for _ in range(3):
        pass_s = last_decay_pass(slurm)
        sprio = {r.job_id: r for r in read_sprio(executor)}
        rows, tree, usage = read_sshare(executor)
        jobs = json.loads(slurm.run("squeue", "--json", "-t", "PD").stdout)["jobs"]
        if last_decay_pass(slurm) == pass_s:
            break
    else:
        pytest.fail("Slurm's decay pass moved during every read")
    jobs = sorted((j for j in jobs if j["job_id"] in waiting), key=lambda j: j["job_id"])
    assert [j["job_id"] for j in jobs] == waiting
    assert sorted(sprio) == waiting, executor.run_once(["sprio", "-l"]).stdout

    params = site_params(read_slurm_conf(slurm.conf), rows)
    cpus_total, nodes_total = cluster_size(slurm)
    ids = np.array([j["job_id"] for j in jobs])
    emulated = job_factors(
        params,
        tree,
        usage,
        float(pass_s),
        eligible_s=np.array([float(j["accrue_time"]) for j in jobs]),
        cpus=np.array([j["cpus"] for j in jobs]),
        nodes=np.array([j["node_count"] for j in jobs]),
        assoc=[AssocTree.key(j["account"], j["user_name"]) for j in jobs],
        partitions=[j["partition"] for j in jobs],
        qos=[j["qos"] for j in jobs],
        cluster_cpus=cpus_total,
        cluster_nodes=nodes_total,
    )
    real = {
        name: np.array([getattr(sprio[i], name) for i in ids.tolist()])
        for name in ("age", "fairshare", "job_size", "partition", "qos", "priority")
    }
    diffs = {name: float(np.max(np.abs(getattr(emulated, name) - real[name]))) for name in real}
    print(
        f"\nmultifactor vs sprio, largest |difference| over {len(ids)} jobs: "
        + ", ".join(f"{k} {v:.2g}" for k, v in diffs.items())
    )
    Path("/tmp/rlsched-multifactor-vs-sprio.json").write_text(
        json.dumps(
            {
                "pass_s": pass_s,
                "diffs": diffs,
                "jobs": ids.tolist(),
                "emulated": {k: getattr(emulated, k).tolist() for k in real},
                "sprio": {k: v.tolist() for k, v in real.items()},
            },
            indent=1,
        )
    )
    assert diffs["age"] <= AGE_TOL
    assert diffs["fairshare"] <= EXACT_TOL
    assert diffs["job_size"] <= EXACT_TOL
    assert diffs["partition"] <= EXACT_TOL
    assert diffs["qos"] <= EXACT_TOL
    assert diffs["priority"] <= PRIORITY_TOL
    # The fair-share factors differ between the associations (the check is not vacuous) …
    assert len(set(np.round(real["fairshare"], 6).tolist())) >= 4
    # … and the queue order is Slurm's: sprio's priorities, highest first, ties by job id.
    slurm_order = ids[queue_order(real["priority"], ids)].tolist()
    assert ids[queue_order(emulated.priority, ids)].tolist() == slurm_order
