"""rlsched train on Dask: a LocalCluster on 127.0.0.1, and (live) dask-jobqueue's SLURMCluster on the test Slurm."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from rlsched.cli import main
from rlsched.core.policies import read_policy_spec
from rlsched.sim.traces.swf import read_swf
from rlsched.workflow.train import run_tasks, train_plan
from tests.slurm_cluster import SlurmTestCluster

distributed = pytest.importorskip("distributed")

POLICY = "sarsa-esn:pretrain_decisions=50"


def weights(model: bytes, tmp: Path) -> dict[str, np.ndarray]:
    path = tmp / "look.npz"
    path.write_bytes(model)
    with np.load(path, allow_pickle=False) as data:
        return {k: data[k] for k in data.files}


def test_a_local_dask_cluster_trains_the_serial_models(small_swf: Path, tmp_path: Path) -> None:
    tasks = train_plan(read_swf(small_swf), POLICY, tmp_path / "m.npz", seeds=[0, 1])
    serial = run_tasks(tasks)
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None
    ) as cluster:
        seen: list[int] = []
        remote = run_tasks(tasks, dask_address=cluster.scheduler_address, progress=seen.append)
    assert seen == [1, 2]
    for a, b in zip(serial, remote, strict=True):
        wa, wb = weights(a.model, tmp_path), weights(b.model, tmp_path)
        assert wa.keys() == wb.keys()
        assert all(np.array_equal(wa[k], wb[k]) for k in wa if not k.startswith("meta"))


@pytest.mark.slurm
@pytest.mark.timeout(300)  # a worker job Slurm never starts would leave the client waiting
def test_dask_slurm_submits_its_workers_to_the_site_slurm(
    slurm: SlurmTestCluster, small_swf: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`rlsched train --dask-slurm`: dask-jobqueue submits worker jobs with sbatch to the local test Slurm."""
    monkeypatch.setenv("SLURM_CONF", slurm.conf)
    monkeypatch.chdir(tmp_path)  # the worker jobs' slurm-*.out files
    before = set(slurm.squeue("%i"))
    out = tmp_path / "m.npz"
    result = CliRunner().invoke(
        main,
        [
            "train",
            "--workload",
            str(small_swf),
            "--policy",
            POLICY,
            "--out",
            str(out),
            "--seeds",
            "2",
            "--dask-slurm",
            "--slurm-cores",
            "1",
            "--slurm-memory",
            "1GB",
            "--slurm-walltime",
            "00:10:00",
            "--slurm-partition",
            "debug",
            "--slurm-jobs",
            "1",
            "--dask-host",
            "127.0.0.1",
            "--quiet",
            "--mode",
            "gate",
            "--epochs",
            "1",
        ],
    )
    assert result.exit_code == 0, result.output
    # Both seeds trained (on the worker) and scored on validation; the better one is the model.
    spec, meta = read_policy_spec(out)
    verdict = meta["policy"]["verdict"]
    assert set(verdict["seed_scores"]) == {"0", "1"} and spec.params["seed"] == verdict["selected"]["seed"]
    # The worker ran as a Slurm job (its log file), and no worker job outlives the cluster.
    assert list(tmp_path.glob("slurm-*.out")), "no Slurm job ran a Dask worker"
    deadline = time.monotonic() + 60
    while set(slurm.squeue("%i")) - before and time.monotonic() < deadline:
        time.sleep(1)
    assert set(slurm.squeue("%i")) <= before
