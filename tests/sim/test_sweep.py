"""Sweeps give the same rows whatever runs them: serial, a process pool, a real local Dask cluster."""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from click.testing import CliRunner

from rlsched.cli import main
from rlsched.core.policies import registry
from rlsched.sim.sweep import Task, execute, grid, rows, run_task
from tests.conftest import shared_trace


@pytest.fixture(scope="module")
def tasks() -> list[Task]:
    shared_trace("kth")  # skips without the traces
    return grid(
        ["kth-quick"],
        ["constant", "random", "qlearning", "state-aware"],
        caps=list(range(0, 40, 3)),
        seeds=[0, 1],
        runs=3,
        thresholds=[1.0, 2.0],
        cost_weights=[1.0, 0.5],
        caps_per_task=5,
    )


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
    with distributed.LocalCluster(
        processes=True, n_workers=2, threads_per_worker=1, host="127.0.0.1", dashboard_address=None
    ) as cluster:
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


def test_the_former_policy_names_are_deprecated_aliases(monkeypatch: pytest.MonkeyPatch) -> None:
    """``ours`` / ``ours-daily`` are ``state-aware`` / ``state-aware-daily`` for one release, with one warning
    per old name."""
    monkeypatch.setattr(registry, "_warned_lease_names", set())
    with pytest.warns(FutureWarning) as caught:
        tasks = grid(["kth-quick"], ["ours", "ours-daily"], thresholds=[1.0])
    assert [str(w.message).split(":")[0] for w in caught] == [
        "the leasing policy name 'ours' is deprecated",
        "the leasing policy name 'ours-daily' is deprecated",
    ]
    assert all(w.filename == __file__ for w in caught)  # the caller's line
    assert [t.policy for t in tasks] == ["state-aware", "state-aware-daily"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert [t.policy for t in grid(["kth-quick"], ["ours"])] == ["state-aware"]  # once per name


@pytest.mark.timeout(120)
def test_a_task_under_a_former_name_runs_the_same(tasks: list[Task]) -> None:
    new, old = (
        run_task(Task("kth-quick", "state-aware", threshold=2.0)),
        run_task(Task("kth-quick", "ours", threshold=2.0)),
    )
    assert old["task"]["policy"] == "ours" and old["balance"] == new["balance"]
    assert rows([old])[0]["threshold"] == 2.0


def test_the_sweep_command_warns_once_about_a_former_name(tasks: list[Task]) -> None:
    done = CliRunner().invoke(
        main,
        [
            "sim",
            "sweep",
            "--setup",
            "kth-quick",
            "--policy",
            "ours",
            "--policy",
            "ours",
            "--threshold",
            "2",
            "--executor",
            "serial",
            "--json",
        ],
    )
    assert done.exit_code == 0, done.output
    assert done.stderr.count("--policy ours is deprecated, use --policy state-aware") == 1
    assert '"policy": "state-aware"' in done.stdout
