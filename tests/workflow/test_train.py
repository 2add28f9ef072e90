"""rlsched train: models per seed, resumable chunked training, local pool and Dask give the same models."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rlsched.core.classify import ClassRule
from rlsched.core.objective import Objective
from rlsched.core.policies import load_policy, read_policy_spec
from rlsched.core.view import JobClass
from rlsched.sim.traces.swf import read_swf
from rlsched.workflow.site import load_site
from rlsched.workflow.train import (
    TrainError,
    checkpoint_path_for,
    read_progress,
    run_tasks,
    train_one,
    train_plan,
    write_models,
)
from rlsched.workflow.train_task import TrainResult

POLICY = "sarsa-esn:pretrain_decisions=50"


def arrays(model: bytes, tmp: Path) -> dict[str, np.ndarray]:
    path = tmp / "look.npz"
    path.write_bytes(model)
    with np.load(path, allow_pickle=False) as data:
        return {k: data[k] for k in data.files if not k.startswith("meta")}


def same_model(a: bytes, b: bytes, tmp: Path) -> bool:
    x, y = arrays(a, tmp), arrays(b, tmp)
    return x.keys() == y.keys() and all(np.array_equal(x[k], y[k]) for k in x)


def test_only_learned_policies_train(small_swf: Path, tmp_path: Path) -> None:
    with pytest.raises(TrainError, match="not a learned policy"):
        train_plan(read_swf(small_swf), "easy", tmp_path / "m.npz")


def test_a_model_per_seed_with_the_class_rule_and_vos_of_the_config(
    small_swf: Path, site_config: Path, tmp_path: Path
) -> None:
    tasks = train_plan(read_swf(small_swf), POLICY, tmp_path / "m.npz", seeds=[3, 4], site=load_site(site_config))
    assert [t.model_path.name for t in tasks] == ["m.seed3.npz", "m.seed4.npz"]
    assert [t.seed for t in tasks] == [3, 4]
    results = run_tasks(tasks)
    write_models(results)
    for r in results:
        spec, _ = read_policy_spec(r.model_path)
        assert spec.vos == ("physics", "chem", "other")
        assert spec.class_rule == load_site(site_config).class_rule.to_dict()
        assert r.decisions > 0
    assert not same_model(results[0].model, results[1].model, tmp_path)  # the seed matters


def test_the_learner_is_rewarded_for_the_objective_unless_its_reward_is_given(small_swf: Path, tmp_path: Path) -> None:
    """Issue 23: "the learner is trained for [the objective]"; the saved model's spec says so and loads with it."""
    objective = Objective("wait", {"interactive": 3.0})
    (task,) = train_plan(read_swf(small_swf), POLICY, tmp_path / "m.npz", objective=objective)
    assert (task.spec.params["reward"], task.spec.params["reward_weights"]) == ("wait", "interactive=3")
    (result,) = run_tasks([task])
    write_models([result])
    agent, _ = load_policy(result.model_path, mode="gate")
    assert agent.reward == objective
    (given,) = train_plan(read_swf(small_swf), POLICY + ",reward=W", tmp_path / "w.npz", objective=objective)
    assert (given.spec.params["reward"], given.spec.params["reward_weights"]) == ("W", "")


def test_without_config_the_default_rule_is_recorded_and_applied(small_swf: Path, tmp_path: Path) -> None:
    (task,) = train_plan(read_swf(small_swf), POLICY, tmp_path / "m.npz")
    assert task.spec.class_rule == ClassRule().to_dict()
    assert np.array_equal(task.workload.job_class == int(JobClass.INTERACTIVE), task.workload.req_time <= 900)


def test_a_killed_chunked_run_resumes_to_the_same_model(small_swf: Path, tmp_path: Path) -> None:
    w = read_swf(small_swf)
    (whole,) = train_plan(w, POLICY, tmp_path / "a.npz", checkpoint_every=150)
    uninterrupted = train_one(whole)
    assert uninterrupted.chunks == 3 and uninterrupted.resumed_after_chunk is None

    (task,) = train_plan(w, POLICY, tmp_path / "b.npz", checkpoint_every=150)
    killed = type(task)(**{**task.__dict__, "stop_after_chunks": 2})
    with pytest.raises(TrainError, match="stopped"):
        train_one(killed)
    ckpt = checkpoint_path_for(tmp_path / "b.npz")
    progress = read_progress(ckpt)
    assert progress is not None and progress["chunk"] == 1
    resumed = train_one(task)
    assert resumed.resumed_after_chunk == 1
    assert same_model(uninterrupted.model, resumed.model, tmp_path)
    assert resumed.decisions == uninterrupted.decisions


def test_chunked_and_single_run_training_both_learn_every_job(small_swf: Path, tmp_path: Path) -> None:
    w = read_swf(small_swf)
    (single,) = train_plan(w, POLICY, tmp_path / "s.npz")
    (chunked,) = train_plan(w, POLICY, tmp_path / "c.npz", checkpoint_every=100)
    a, b = train_one(single), train_one(chunked)
    # Every job is decided on once in both (gate mode: one release decision per job at least).
    assert a.decisions >= len(w) and b.decisions >= len(w)
    assert a.mean_w is not None and b.mean_w is not None
    # Chunks start from an empty machine: at most as much queueing as the single run, not wildly different.
    assert abs(a.mean_w - b.mean_w) < 0.2


def test_a_checkpoint_of_other_arguments_is_refused_or_started_afresh(small_swf: Path, tmp_path: Path) -> None:
    w = read_swf(small_swf)
    (task,) = train_plan(w, POLICY, tmp_path / "m.npz", checkpoint_every=200)
    train_one(task)
    (other,) = train_plan(w, "sarsa-esn:pretrain_decisions=60", tmp_path / "m.npz", checkpoint_every=200)
    with pytest.raises(TrainError, match=r"other arguments.*--fresh"):
        train_one(other)
    (fresh,) = train_plan(w, "sarsa-esn:pretrain_decisions=60", tmp_path / "m.npz", checkpoint_every=200, fresh=True)
    result = train_one(fresh)
    assert any("afresh" in note for note in result.notes)
    assert result.resumed_after_chunk is None


def test_the_local_pool_gives_the_serial_models(small_swf: Path, tmp_path: Path) -> None:
    tasks = train_plan(read_swf(small_swf), POLICY, tmp_path / "m.npz", seeds=[0, 1])
    serial = run_tasks(tasks)
    finished: dict[int, bytes] = {}

    def keep(i: int, result: TrainResult) -> None:
        assert i not in finished
        finished[i] = result.model

    pooled = run_tasks(tasks, workers=2, finished=keep)
    for a, b in zip(serial, pooled, strict=True):
        assert a.model_path == b.model_path
        assert same_model(a.model, b.model, tmp_path)
    # Each result is handed on as it finishes (a caller keeps it before the others end), once, by its task.
    assert finished == {i: result.model for i, result in enumerate(pooled)}


def test_the_saved_model_loads_for_its_vos_and_rule(small_swf: Path, site_config: Path, tmp_path: Path) -> None:
    site = load_site(site_config)
    (task,) = train_plan(read_swf(small_swf), POLICY, tmp_path / "m.npz", site=site)
    write_models(run_tasks([task]))
    _, spec = load_policy(tmp_path / "m.npz", expect_vos=site.vos, expect_class_rule=site.class_rule.to_dict())
    assert spec.name == "sarsa-esn"
    other = ClassRule(interactive_max_time_s=1800).to_dict()
    with pytest.raises(ValueError, match=r"class rule .*interactive_max_time_s=900.*interactive_max_time_s=1800"):
        load_policy(tmp_path / "m.npz", expect_vos=site.vos, expect_class_rule=other)


def test_zero_length_jobs_without_a_time_limit_train(tmp_path: Path) -> None:
    """LPC-EGEE has them: an estimated runtime of 0 for a job submitted at the last view made the
    waiting-loss W 0/0 and stopped training with a NaN reward."""
    rng = np.random.default_rng(1)
    lines, t = ["; MaxProcs: 8"], 0
    for i in range(300):
        t += int(rng.exponential(30))
        run = 0 if i % 3 == 0 else int(rng.integers(1, 600))
        lines.append(f"{i + 1} {t} 0 {run} 1 -1 -1 1 -1 -1 1 {i % 4 + 1} {i % 2 + 1} -1 1 1 -1 -1")
    path = tmp_path / "zero.swf"
    path.write_text("\n".join(lines) + "\n")
    (task,) = train_plan(read_swf(path), "sarsa-esn:pretrain_decisions=20", tmp_path / "m.npz")
    result = train_one(task)
    assert result.decisions >= 300 and result.mean_w is not None and 0 < result.mean_w <= 1


def test_a_result_pickled_before_the_pass_records_existed_reads_back_without_them(tmp_path: Path) -> None:
    import pickle

    result = TrainResult(0, tmp_path / "m.npz", b"", "sarsa-esn", 10, 5, 1, None, 1.0, validation_scores=[2.0])
    del result.pass_decisions, result.pass_pretraining  # what a result of an earlier version held
    back = pickle.loads(pickle.dumps(result))
    assert back.pass_pretraining == [] and back.pass_decisions == [] and back.best_pass_pretraining is None
    assert back.validation_scores == [2.0] and back.best_score == 2.0
