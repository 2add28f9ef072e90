"""rlsched train --policy scored: the direct policy search as a training (rlsched.workflow.train_scored)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from rlsched.core.objective import Objective
from rlsched.core.policies import load_model, read_policy_spec, read_verdict
from rlsched.core.scoring import ScoredRankAgent
from rlsched.sim.search import search_scoring
from rlsched.sim.traces.swf import read_swf
from rlsched.sim.workload import Workload
from rlsched.workflow.split import Deployment, TimeSplit, simulate_in
from rlsched.workflow.train import TrainError, judge_and_write, run_tasks, train_one, train_plan
from rlsched.workflow.train_scored import scored_search_config
from rlsched.workflow.train_task import TrainTask

#: A search small enough for a test: 4 weight vectors, one generation, one validation replay.
TINY = scored_search_config("requested", population=4, generations=1, validation_replays=1)


def windows(swf: Path) -> tuple[Workload, Workload]:
    whole, split = read_swf(swf), TimeSplit.parse("50/25/25")
    return split.window(whole, "train"), split.window(whole, "validation")


def plan(swf: Path, out: Path, seeds: list[int], **options: object) -> list[TrainTask]:
    train, validation = windows(swf)
    return train_plan(train, "scored", out, seeds=seeds, validation=validation, search=TINY, **options)  # type: ignore[arg-type]


def test_a_scored_training_writes_the_searched_policy_with_its_verdict(small_swf: Path, tmp_path: Path) -> None:
    out = tmp_path / "scored.npz"
    tasks = plan(small_swf, out, [0], deployment=Deployment("boost"))
    (task,) = tasks
    assert task.seed == 0 and task.search is not None and task.search.seed == 0
    (result,) = run_tasks(tasks)
    verdict = judge_and_write([result], tasks, out, about={"workload": "small"})
    # The model rebuilds (as the daemon does) the function the search finds on these windows and settings.
    agent, spec = load_model(out, mode="boost")
    assert isinstance(agent, ScoredRankAgent)
    found = search_scoring(task.workload, task.validation, task.search, task.cores)  # type: ignore[arg-type]
    assert agent.function == found.function and spec.label() == found.spec.label() == result.label
    assert result.decisions == found.evaluations and result.chunks == 1 and result.best_epoch == 0
    # Its verdict is in the file, and its score is the saved spec's replay in the deployment mode by the objective.
    recorded = read_verdict(out)
    assert recorded is not None and recorded["outcome"] == verdict.outcome
    run = simulate_in(task.deployment, task.validation, spec, task.cores, overrun=task.overrun).schedule  # type: ignore[arg-type]
    fresh = task.objective.score(run.run, run.wait, run.workload.job_class)
    assert result.validation_scores == [fresh] and verdict.model_score == fresh
    # The search's record (what it chose) is in the model, without its wall time, and in the result's note.
    _, meta = read_policy_spec(out)
    assert meta["search"]["chosen"] == list(found.chosen) and "seconds" not in meta["search"]
    assert "the search chose" in result.notes[0]
    assert "pretrain_rule" not in verdict.extra


def test_the_same_seed_gives_the_same_model_here_and_on_a_process_pool(small_swf: Path, tmp_path: Path) -> None:
    tasks = plan(small_swf, tmp_path / "m.npz", [0, 1])
    assert [t.seed for t in tasks] == [0, 1] and [t.model_path.name for t in tasks] == ["m.seed0.npz", "m.seed1.npz"]
    here = run_tasks(tasks)
    assert train_one(tasks[0]).model == here[0].model  # the very same bytes, run twice
    pooled = run_tasks(tasks, workers=2)
    assert [r.model for r in pooled] == [r.model for r in here]
    assert [r.seed for r in pooled] == [0, 1]


def test_the_same_seed_gives_the_same_model_on_dask(small_swf: Path, tmp_path: Path) -> None:
    distributed = pytest.importorskip("distributed")
    tasks = plan(small_swf, tmp_path / "m.npz", [0, 1])
    here = run_tasks(tasks)
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None
    ) as cluster:
        remote = run_tasks(tasks, dask_address=cluster.scheduler_address)
    assert [r.model for r in remote] == [r.model for r in here]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"epochs": 2}, "--epochs 2"),
        ({"checkpoint_every": 50}, "--checkpoint-every"),
        ({"pretrain_rule": "best"}, "--pretrain-rule"),
    ],
)
def test_what_means_nothing_to_a_search_is_refused(
    small_swf: Path, tmp_path: Path, options: dict[str, object], message: str
) -> None:
    with pytest.raises(TrainError, match=message):
        plan(small_swf, tmp_path / "m.npz", [0], **options)


def test_search_settings_are_refused_for_a_learned_policy_and_parameters_for_scored(
    small_swf: Path, tmp_path: Path
) -> None:
    train, validation = windows(small_swf)
    with pytest.raises(TrainError, match="for --policy scored"):
        train_plan(train, "sarsa-esn", tmp_path / "m.npz", validation=validation, search=TINY)
    with pytest.raises(TrainError, match="without parameters"):
        train_plan(train, "scored:weights=1/0/0/0", tmp_path / "m.npz", validation=validation)


def test_a_scored_training_needs_a_validation_window(small_swf: Path, tmp_path: Path) -> None:
    (task,) = plan(small_swf, tmp_path / "m.npz", [0])
    with pytest.raises(TrainError, match="validation window"):
        train_one(replace(task, validation=None))


def test_the_default_search_reads_the_learned_prediction(small_swf: Path, tmp_path: Path) -> None:
    train, validation = windows(small_swf)
    (task,) = train_plan(train, "scored", tmp_path / "m.npz", seeds=[5], validation=validation)
    assert task.search is not None and task.search.runtime_model == "learned" and "log_pred" in task.search.features
    assert task.search.seed == 5 and "seed" not in task.spec.params


def test_a_scored_training_searches_for_the_task_s_objective(small_swf: Path, tmp_path: Path) -> None:
    """The search's fitness and pick are the task's objective (here W, interactive ×3), and the model says so."""
    objective = Objective("W", {"interactive": 3.0})
    (task,) = plan(small_swf, tmp_path / "w.npz", [0], objective=objective)
    (result,) = run_tasks([task])
    (tmp_path / "w.npz").write_bytes(result.model)
    _, meta = read_policy_spec(tmp_path / "w.npz")
    assert meta["search"]["objective"] == objective.to_dict()
    agent, _ = load_model(tmp_path / "w.npz")
    found = search_scoring(task.workload, task.validation, replace(TINY, objective=objective), task.cores)  # type: ignore[arg-type]
    assert isinstance(agent, ScoredRankAgent) and agent.function == found.function
    assert meta["search"]["validation_W"] == found.selection_score
    assert f"W (interactive ×3) {found.selection_score:.4g} over its 1 validation replays" in result.notes[0]
