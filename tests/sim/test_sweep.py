"""Sweeps give the same rows whatever runs them: serial, a process pool, a real local Dask cluster."""

from __future__ import annotations

from typing import Any

import pytest

from rlsched.sim.sweep import Task, execute, grid, rows
from tests.conftest import shared_trace


@pytest.fixture(scope="module")
def tasks() -> list[Task]:
    shared_trace("kth")  # skips without the traces
    return grid(["kth-quick"], ["constant", "random", "qlearning", "ours"], caps=list(range(0, 40, 3)),
                seeds=[0, 1], runs=3, thresholds=[1.0, 2.0], cost_weights=[1.0, 0.5], caps_per_task=5)


def _rows(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return rows(results)


def test_grid_shape(tasks: list[Task]) -> None:
    # per λ: 14 caps in 3 tasks, 2 seeds, 1 Q-learning, 2 thresholds
    assert len(tasks) == 2 * (3 + 2 + 1 + 2)
    with pytest.raises(ValueError, match="unknown policy"):
        Task("kth-quick", "greedy")


@pytest.mark.timeout(180)
def test_executors_agree(tasks: list[Task]) -> None:
    serial = _rows(execute(tasks, executor="serial"))
    seen: list[int] = []
    pooled = _rows(execute(tasks, executor="process", workers=2, progress=seen.append))
    assert seen == list(range(1, len(tasks) + 1))
    assert pooled == serial
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(processes=True, n_workers=2, threads_per_worker=1, host="127.0.0.1",
                                  dashboard_address=None) as cluster:
        on_dask = _rows(execute(tasks, executor="dask", scheduler_address=cluster.scheduler_address))
    assert on_dask == serial
    by_lambda = {r["lambda"] for r in serial}
    assert by_lambda == {1.0, 0.5}
    assert any(r["balance"] > 0 for r in serial)


def test_dask_needs_an_address(tasks: list[Task]) -> None:
    with pytest.raises(ValueError, match="scheduler-address"):
        execute(tasks[:1], executor="dask")


def test_daily_tasks_refuse_a_prior_they_cannot_have() -> None:
    with pytest.raises(ValueError, match="needs the setups"):
        Task("kth", "daily", transfer_days=5.0)
    with pytest.raises(ValueError, match="its own prior"):
        Task("kth", "daily", transfer_days=5.0, transfer_from=("kth", "ctc"))
    with pytest.raises(ValueError, match="hindsight task"):
        Task("kth", "daily", hindsight=True, jitter_seed=2)
    assert Task("kth", "daily", hindsight=True).hindsight
