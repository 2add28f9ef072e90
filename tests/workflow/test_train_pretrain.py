"""``train --pretrain-rule``: pretraining from a named rule, or from the best rule on the training window."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from rlsched.cli import main
from rlsched.core.objective import Objective
from rlsched.core.policies import load_policy, read_policy_spec, read_verdict
from rlsched.sim.traces.swf import read_swf
from rlsched.sim.workload import Workload, with_class_rule
from rlsched.workflow import verdict as verdict_module
from rlsched.workflow.site import trace_class_rule
from rlsched.workflow.split import Deployment, TimeSplit, simulate_in
from rlsched.workflow.train import TrainError, train_one, train_plan
from rlsched.workflow.verdict import schedule_score
from tests.workflow.conftest import write_swf

POLICY = "sarsa-esn:pretrain_decisions=30"
BOOST = Deployment("boost")


def _windows(path: Path) -> tuple[Workload, Workload, Workload]:
    w = read_swf(path)
    return TimeSplit().window(w, "train"), TimeSplit().window(w, "validation"), TimeSplit().window(w, "test")


def _seen(w: Workload) -> Workload:
    return with_class_rule(w, trace_class_rule(w))


def test_best_is_the_best_rule_on_the_train_window_and_never_reads_another(
    small_swf: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    train, validation, test = _windows(small_swf)
    scored: list[Workload] = []
    real = verdict_module.score_rules

    def spy(window: Workload, *args: object, **kwargs: object) -> verdict_module.RuleScores:
        scored.append(window)
        return real(window, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(verdict_module, "score_rules", spy)
    (task,) = train_plan(
        train, POLICY, tmp_path / "m.npz", validation=validation, deployment=BOOST, pretrain_rule="best"
    )
    # The rules were replayed once, on the train window's jobs alone.
    assert len(scored) == 1
    np.testing.assert_array_equal(scored[0].submit, train.submit)
    choice = task.pretrain_choice
    assert choice is not None and choice["window"] == "train" and choice["jobs"] == len(train)
    scores = choice["scores"]
    assert choice["label"] == min(scores, key=scores.get) and choice["score"] == min(scores.values())
    assert task.spec.params["pretrain_rule"] == choice["rule"]
    # Each score is the rule's own replay of the train window in boost mode (checked for the best and two others).
    for label in {choice["label"], "easy", "fcfs"}:
        ran = simulate_in(BOOST, _seen(train), label, None)
        assert scores[label] == pytest.approx(schedule_score(Objective(), ran.schedule))
    # Another validation window (here the test window) changes nothing: the choice reads the train window only.
    (other,) = train_plan(train, POLICY, tmp_path / "o.npz", validation=test, deployment=BOOST, pretrain_rule="best")
    assert other.pretrain_choice is not None and other.pretrain_choice["rule"] == choice["rule"]


def test_best_finds_the_rule_a_hand_made_train_window_favours(tmp_path: Path) -> None:
    """One core, every job queued behind a long one: shortest-first orders win, FCFS and LJF lose by far."""
    lines = ["; MaxProcs: 1", "; UnixStartTime: 1000000000"]
    # A 10,000 s job at t=0, then at each second a job alternately long (5,000 s) and short (10 s).
    jobs = [(0, 10_000)] + [(k, 5_000 if k % 2 else 10) for k in range(1, 41)]
    for i, (submit, run) in enumerate(jobs):
        lines.append(f"{i + 1} {submit} -1 {run} 1 -1 -1 1 {run} -1 1 1 1 -1 1 1 -1 -1")
    path = tmp_path / "h.swf"
    path.write_text("\n".join(lines) + "\n")
    w = read_swf(path)
    (task,) = train_plan(w, POLICY, tmp_path / "m.npz", validation=w, deployment=BOOST, pretrain_rule="best")
    assert task.pretrain_choice is not None
    scores = task.pretrain_choice["scores"]
    best = task.pretrain_choice["label"]
    assert scores[best] < scores["fcfs"] / 2 and scores[best] < scores["ljf"] / 2
    assert best.split(":")[0] in {
        "sjf",
        "easy-sjf",
        "saf",
        "interactive-first-sjf",
        "f1",
        "f2",
        "f3",
        "f4",
        "edf",
        "wfp3",
        "unicep",
    }


def test_a_named_pretrain_rule_is_set_and_a_bad_one_is_one_line(small_swf: Path, tmp_path: Path) -> None:
    train, validation, _ = _windows(small_swf)
    (task,) = train_plan(train, POLICY, tmp_path / "m.npz", validation=validation, pretrain_rule="f4")
    assert task.spec.params["pretrain_rule"] == "f4" and task.pretrain_choice is None
    (kept,) = train_plan(train, POLICY + ",pretrain_rule=saf", tmp_path / "m.npz", validation=validation)
    assert kept.spec.params["pretrain_rule"] == "saf"
    with pytest.raises(TrainError, match="--pretrain-rule"):
        train_plan(train, POLICY, tmp_path / "m.npz", validation=validation, pretrain_rule="sarsa-esn")


def test_the_command_pretrains_from_the_best_rule_and_the_model_records_it(tmp_path: Path) -> None:
    swf = write_swf(tmp_path / "t.swf", n=240)
    out = tmp_path / "m.npz"
    result = CliRunner().invoke(
        main,
        [
            "train",
            "--workload",
            str(swf),
            "--policy",
            POLICY,
            "--epochs",
            "1",
            "--mode",
            "boost",
            "--pretrain-rule",
            "best",
            "--out",
            str(out),
            "-q",
        ],
    )
    assert result.exit_code == 0, result.output
    verdict = read_verdict(out)
    assert verdict is not None
    choice = verdict["pretrain_choice"]
    assert (
        f"pretraining on {choice['rule']}: the best of {len(choice['scores'])} rules on the train window"
        in result.output
    )
    spec, _ = read_policy_spec(out)
    assert spec.params["pretrain_rule"] == choice["rule"] == verdict["pretrain_rule"]
    agent, _ = load_policy(out, mode="boost")
    assert agent.pretrain_rule is not None
    assert choice["jobs"] == len(_windows(swf)[0])


def test_the_default_leaves_the_checkpoint_fingerprint_as_before(small_swf: Path, tmp_path: Path) -> None:
    """A checkpoint written before ``pretrain_rule`` existed still resumes; another rule does not."""
    train, validation, _ = _windows(small_swf)
    (task,) = train_plan(train, POLICY, tmp_path / "m.npz", validation=validation, checkpoint_every=100)
    old_params = {k: v for k, v in task.spec.params.items() if k != "pretrain_rule"}
    before = replace(task, spec=replace(task.spec, params=old_params))
    assert before.fingerprint() == task.fingerprint()
    (saf,) = train_plan(
        train, POLICY, tmp_path / "m.npz", validation=validation, checkpoint_every=100, pretrain_rule="saf"
    )
    assert saf.fingerprint() != task.fingerprint()


def test_each_pass_records_its_decisions_and_whether_it_still_followed_the_pretraining_rule(
    small_swf: Path, tmp_path: Path
) -> None:
    train, validation, _ = _windows(small_swf)
    # Pretraining that no train window reaches: both passes end as the pretraining rule.
    (never,) = train_plan(
        train, "sarsa-esn:pretrain_decisions=1000000", tmp_path / "n.npz", validation=validation, deployment=BOOST
    )
    never = replace(never, epochs=2)
    still = train_one(never)
    assert still.pass_pretraining == [True, True] and still.best_pass_pretraining is True
    assert 0 < still.pass_decisions[0] < still.pass_decisions[1] == still.decisions
    # Thirty decisions are made within the first pass: the Q-function ranks from then on.
    (soon,) = train_plan(train, POLICY, tmp_path / "s.npz", validation=validation, deployment=BOOST)
    learned = train_one(replace(soon, epochs=2))
    assert learned.pass_decisions[0] >= 30 and learned.pass_pretraining == [False, False]
    # A chunked run stopped inside its second pass resumes with the first pass's record (chunks start from an
    # empty machine: compared with the same chunking uninterrupted).
    chunked = replace(never, checkpoint_every=len(train) // 2 + 1)
    at_once = train_one(replace(chunked, checkpoint_path=tmp_path / "a.ckpt.npz"))
    stopped = replace(chunked, checkpoint_path=tmp_path / "b.ckpt.npz")
    with pytest.raises(TrainError, match="stopped"):
        train_one(replace(stopped, stop_after_chunks=3))
    resumed = train_one(stopped)
    assert resumed.resumed_after_chunk == 2 and at_once.resumed_after_chunk is None
    assert (resumed.pass_decisions, resumed.pass_pretraining) == (at_once.pass_decisions, at_once.pass_pretraining)
    assert resumed.pass_pretraining == [True, True]


def test_the_command_says_when_the_selected_pass_is_still_the_pretraining_rule(tmp_path: Path) -> None:
    swf = write_swf(tmp_path / "t.swf", n=240)
    out = tmp_path / "m.npz"
    args = ["train", "--workload", str(swf), "--epochs", "1", "--mode", "boost", "--out", str(out), "-q"]
    result = CliRunner().invoke(main, [*args, "--policy", "sarsa-esn:pretrain_decisions=1000000"])
    assert result.exit_code == 0, result.output
    assert "still pretraining after pass 1" in result.output
    assert "that pass ended still following its pretraining rule edf" in result.output
    verdict = read_verdict(out)
    assert verdict is not None and verdict["selected"]["pretraining"] is True
    assert verdict["selected"]["decisions"] < 1000000
    learned = CliRunner().invoke(main, [*args, "--policy", POLICY])
    assert learned.exit_code == 0, learned.output
    assert "still pretraining" not in learned.output and "its pretraining rule" not in learned.output
    learned_verdict = read_verdict(out)
    assert learned_verdict is not None and learned_verdict["selected"]["pretraining"] is False
