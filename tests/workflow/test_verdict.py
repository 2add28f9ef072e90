"""Never deploy a loser: epochs selected on validation, the candidate rules from the registry, the verdict."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from rlsched.core.objective import Objective
from rlsched.core.policies import POLICIES, read_verdict, resolve
from rlsched.sim.policies import simulate_policy
from rlsched.sim.traces.swf import read_swf
from rlsched.sim.workload import Workload, with_class_rule
from rlsched.workflow.site import trace_class_rule
from rlsched.workflow.split import Deployment, TimeSplit
from rlsched.workflow.train import (
    TrainError,
    checkpoint_path_for,
    judge_and_write,
    rule_windows,
    run_tasks,
    train_one,
    train_plan,
    validation_score,
)
from rlsched.workflow.verdict import (
    RuleScores,
    candidate_rules,
    carryover_line,
    config_line,
    judge,
    rank_carryover,
    spec_text,
)

POLICY = "sarsa-esn:pretrain_decisions=50"
GATE = Deployment("gate")


def windows(path: Path) -> tuple[Workload, Workload, Workload]:
    """The train and validation windows of the default split, and the whole trace."""
    w = read_swf(path)
    return TimeSplit().window(w, "train"), TimeSplit().window(w, "validation"), w


def test_the_candidates_are_the_registrys_rules_and_new_ones_join(monkeypatch: pytest.MonkeyPatch) -> None:
    specs, skipped = candidate_rules(("vo0",), GATE)
    names = {s.name for s in specs}
    assert names == {n for n, e in POLICIES.items() if e.family == "rule"}
    # A rule taking a runtime model runs once per live one; the oracle (simulator-only) is left out, saying why.
    runtime = POLICIES["edf"].param("runtime_model")
    assert runtime.choices is not None and "oracle" in runtime.choices
    live_models = {c for c in runtime.choices if c not in (runtime.default, "oracle")}
    assert "requested" in live_models
    assert {spec_text(s) for s in specs if s.name == "edf"} == {"edf", *(f"edf:runtime_model={c}" for c in live_models)}
    assert any(line.startswith("edf:runtime_model=oracle") and "only a simulator" in line for line in skipped)
    monkeypatch.setitem(POLICIES, "newrule", replace(POLICIES["sjf"], name="newrule"))
    assert "newrule" in {s.name for s in candidate_rules(("vo0",), GATE)[0]}


def test_boost_mode_leaves_out_the_rules_that_need_gate_mode() -> None:
    specs, skipped = candidate_rules(("vo0",), Deployment("boost"))
    assert "interactive-first-keepidle" not in {s.name for s in specs}
    assert any(line.startswith("interactive-first-keepidle") and "gate mode" in line for line in skipped)


def rules(**scores: float) -> RuleScores:
    return RuleScores(scores=dict(scores), specs={k: resolve(k) for k in scores})


def test_the_verdict_is_against_the_best_rule_and_ties_within_the_seed_spread() -> None:
    bsld = Objective("bsld")
    field = rules(easy=20.0, **{"easy-sjf": 10.0})
    beats = judge(bsld, GATE, 8.8, [8.8, 9.0, 9.2], field)
    assert beats.outcome == "beats" and beats.rule == "easy-sjf" and beats.gain == pytest.approx(0.12)
    assert beats.line().startswith("model beats easy-sjf by 12 % on validation bsld")
    loses = judge(bsld, GATE, 10.4, [10.4], field)
    assert loses.outcome == "loses" and loses.loses
    assert loses.line().startswith(
        'model loses to easy-sjf by 4 % on validation bsld: deploy easy-sjf (`[agent] kind = "easy-sjf"`)'
    )
    # 0.4 worse, but the seeds spread by more: a tie, not a loss.
    ties = judge(bsld, GATE, 10.4, [10.4, 11.4, 9.6], field)
    assert ties.outcome == "ties" and ties.spread == pytest.approx(np.std([10.4, 11.4, 9.6]))
    assert "the 4 % difference is within the spread over seeds" in ties.line()
    # Equal scores tie whatever the spread (one seed: none).
    equal = judge(bsld, GATE, 10.0, [10.0], field)
    assert equal.outcome == "ties" and "ties with easy-sjf on validation bsld: the scores are equal" in equal.line()
    # Higher is better for W.
    w = judge(Objective("W"), GATE, 0.9, [0.9], rules(easy=0.8, fcfs=0.7))
    assert w.outcome == "beats" and w.rule == "easy"


def test_a_loss_under_half_a_percent_is_not_printed_as_zero() -> None:
    """LLNL-Thunder's verdict read "loses to saf by 0 % (model 1.1, saf 1.1)": now the digits that decided it."""
    loses = judge(Objective("bsld"), GATE, 1.1004, [1.1004], rules(saf=1.1001))
    assert loses.outcome == "loses"
    assert "loses to saf by 0.027 % on validation bsld" in loses.line()
    assert "(model 1.1004, saf 1.1001, one seed: no spread" in loses.line()


def test_the_config_line_names_the_rules_parameters() -> None:
    assert config_line(resolve("edf:runtime_model=requested")) == '[agent] kind = "edf", runtime_model = "requested"'
    assert config_line(resolve("easy")) == '[agent] kind = "easy"'


def test_each_pass_is_scored_on_validation_and_the_best_one_is_kept(small_swf: Path, tmp_path: Path) -> None:
    train, validation, _ = windows(small_swf)
    (task,) = train_plan(train, POLICY, tmp_path / "m.npz", validation=validation, epochs=3, deployment=GATE)
    result = train_one(task)
    assert len(result.validation_scores) == 3 and result.epochs == 3
    assert result.best_epoch == int(np.argmin(result.validation_scores))
    # The model returned is that pass's: replayed greedy on validation it scores what was recorded for it.
    path = tmp_path / "best.npz"
    path.write_bytes(result.model)
    assert validation_score(path, task) == pytest.approx(result.validation_scores[result.best_epoch])


def test_a_killed_run_with_passes_resumes_to_the_same_model_and_scores(small_swf: Path, tmp_path: Path) -> None:
    train, validation, _ = windows(small_swf)
    (whole,) = train_plan(
        train, POLICY, tmp_path / "a.npz", validation=validation, epochs=2, checkpoint_every=120, deployment=GATE
    )
    uninterrupted = train_one(whole)
    (task,) = train_plan(
        train, POLICY, tmp_path / "b.npz", validation=validation, epochs=2, checkpoint_every=120, deployment=GATE
    )
    with pytest.raises(TrainError, match="stopped"):
        train_one(replace(task, stop_after_chunks=3))  # killed in the second pass
    assert checkpoint_path_for(tmp_path / "b.npz").is_file()
    resumed = train_one(task)
    assert resumed.resumed_after_chunk == 2
    assert resumed.validation_scores == uninterrupted.validation_scores
    assert resumed.best_epoch == uninterrupted.best_epoch
    assert resumed.model == uninterrupted.model


def test_the_best_seed_is_judged_against_every_rule_and_the_verdict_written(small_swf: Path, tmp_path: Path) -> None:
    train, validation, whole = windows(small_swf)
    tasks = train_plan(
        train, POLICY, tmp_path / "m.npz", seeds=[0, 1], validation=validation, epochs=2, deployment=GATE
    )
    results = run_tasks(tasks)
    out = tmp_path / "m.npz"
    verdict = judge_and_write(
        results,
        tasks,
        out,
        about={
            "workload": whole.name,
            "jobs": len(whole),
            "split": TimeSplit().to_dict(),
            "windows": TimeSplit().windows(whole),
        },
    )
    best = min(results, key=lambda r: r.best_score or np.inf)
    assert verdict.model_score == best.best_score and verdict.extra["selected"]["seed"] == best.seed
    assert verdict.seeds == 2
    # The rules' scores are their replays of the validation window, by the objective.
    seen = with_class_rule(validation, trace_class_rule(validation))
    easy = simulate_policy(seen, "easy").schedule
    assert verdict.extra["rules"]["easy"] == pytest.approx(
        Objective().score(easy.run, easy.wait, easy.workload.job_class)
    )
    assert verdict.rule == min(verdict.extra["rules"], key=verdict.extra["rules"].get)
    expected = (
        "ties"
        if abs(verdict.model_score - verdict.rule_score) <= verdict.spread
        else "beats"
        if verdict.model_score < verdict.rule_score
        else "loses"
    )
    assert verdict.outcome == expected
    recorded = read_verdict(out)
    assert recorded is not None and recorded["outcome"] == verdict.outcome and recorded["rule"] == verdict.rule
    assert recorded["windows"]["validation"]["jobs"] == [200, 300] and recorded["mode"]["mode"] == "gate"
    assert recorded["objective"] == {"name": "bsld", "class_weights": {}}


def test_in_boost_mode_the_rules_are_replayed_as_the_daemon_would_run_them(small_swf: Path) -> None:
    from rlsched.workflow.verdict import score_rules

    _, validation, _ = windows(small_swf)
    seen = with_class_rule(validation, trace_class_rule(validation))
    boost = Deployment("boost", poll_interval_s=30.0, max_boosted=4)
    scores = score_rules(seen, boost, Objective())
    direct = simulate_policy(seen, "easy-sjf", mode="boost", boost=boost.settings()).schedule
    assert direct.mode == "boost"
    assert scores.scores["easy-sjf"] == pytest.approx(
        Objective().score(direct.run, direct.wait, direct.workload.job_class)
    )
    assert "interactive-first-keepidle" not in scores.scores


def test_boost_twins_are_replayed_once_and_a_process_pool_scores_every_rule_alike(
    small_swf: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import rlsched.workflow.verdict as verdict

    _, validation, _ = windows(small_swf)
    seen = with_class_rule(validation, trace_class_rule(validation))
    boost = Deployment("boost", poll_interval_s=30.0, max_boosted=4)
    replayed: list[str] = []
    replay = verdict._replay_score

    def counted(job: verdict._Replay) -> tuple[float, str | None]:
        replayed.append(spec_text(job[3]))
        return replay(job)

    monkeypatch.setattr(verdict, "_replay_score", counted)
    here = verdict.score_rules(seen, boost, Objective())
    # The batch system backfills in boost mode: a rule and its easy- twin rank alike and are replayed once.
    for a, b in (
        ("fcfs", "easy"),
        ("sjf", "easy-sjf"),
        ("sjf:runtime_model=learned", "easy-sjf:runtime_model=learned"),
    ):
        assert here.scores[a] == here.scores[b]
        assert (a in replayed) != (b in replayed)
    assert len(replayed) == len(set(replayed)) < len(here.scores)
    direct = simulate_policy(seen, "sjf", mode="boost", boost=boost.settings()).schedule
    assert here.scores["easy-sjf"] == pytest.approx(
        Objective().score(direct.run, direct.wait, direct.workload.job_class)
    )
    # In gate mode the rule's own backfill counts: every rule is replayed.
    replayed.clear()
    gate = verdict.score_rules(seen, GATE, Objective())
    assert len(replayed) == len(gate.scores)
    monkeypatch.undo()
    pooled = verdict.score_rules(seen, boost, Objective(), workers=2)
    assert pooled.scores == here.scores and list(pooled.specs) == list(here.specs)


def test_a_higher_is_better_objective_keeps_the_highest_pass(small_swf: Path, tmp_path: Path) -> None:
    train, validation, _ = windows(small_swf)
    objective = Objective("W", {"interactive": 3})
    (task,) = train_plan(
        train, POLICY, tmp_path / "m.npz", validation=validation, epochs=2, deployment=GATE, objective=objective
    )
    result = train_one(task)
    assert result.best_epoch == int(np.argmax(result.validation_scores))
    path = tmp_path / "best.npz"
    path.write_bytes(result.model)
    assert validation_score(path, task) == pytest.approx(max(result.validation_scores))


def test_the_rule_over_windows_is_the_best_geometric_mean_of_ratios_to_each_windows_best() -> None:
    from rlsched.workflow.verdict import rule_over_windows

    # a is best once and bad elsewhere; b is second everywhere; c was not replayed in one window.
    windows = {
        "train 1/2": RuleScores(scores={"a": 10.0, "b": 12.0, "c": 1.0}),
        "train 2/2": RuleScores(scores={"a": 40.0, "b": 22.0}),
        "validation": RuleScores(scores={"a": 30.0, "b": 21.0, "c": 5.0}),
    }
    chosen, means = rule_over_windows(Objective(), windows)
    assert set(means) == {"a", "b"} and chosen == "b"
    assert means["b"] == pytest.approx((1.2 * 1.0 * 1.0) ** (1 / 3))
    assert means["a"] == pytest.approx((1.0 * 40 / 22 * 30 / 21) ** (1 / 3))
    # Higher is better (W): the ratios turn over.
    w = {"v": RuleScores(scores={"a": 0.9, "b": 0.6}), "t": RuleScores(scores={"a": 0.5, "b": 0.8})}
    chosen_w, means_w = rule_over_windows(Objective("W"), w)
    assert means_w["a"] == pytest.approx((1.0 * 0.8 / 0.5) ** 0.5) and chosen_w == "b"  # b: (1.5 · 1) ** 0.5


def test_with_three_windows_the_verdict_names_the_rule_they_pick(small_swf: Path, tmp_path: Path) -> None:
    train_w, validation, _ = windows(small_swf)
    tasks = train_plan(train_w, POLICY, tmp_path / "m.npz", seeds=(0,), validation=validation)
    results = run_tasks(tasks)
    one = judge_and_write(results, tasks, tmp_path / "one.npz", about={})
    three = judge_and_write(results, tasks, tmp_path / "three.npz", about={}, windows=3)
    # One window: validation's best rule itself, even where others tie with it (no tie broken by name).
    assert one.replacement == (one.rule, one.rule_config) and one.deploy_windows == 1
    assert "windows" not in one.line()
    assert three.rule == one.rule and three.deploy_windows == len(rule_windows(tasks[0], 3))
    recorded = read_verdict(tmp_path / "three.npz")
    assert recorded is not None and recorded["deploy_rule"] == three.replacement[0]
    assert set(recorded["rule_windows"]) == {k for k in rule_windows(tasks[0], 3) if k != "validation"}
    ratios = recorded["rule_geomean_ratio"]
    assert ratios[three.replacement[0]] == min(ratios.values())
    if three.loses and three.replacement[0] != three.rule:
        assert "the best rule over" in three.line()


def test_with_one_window_a_tie_on_validation_deploys_validations_best_rule_itself(
    small_swf: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # sjf and easy-sjf order alike in boost mode, so they tie; the rule named is the verdict's, not the
    # first of the tied ones by name.
    import rlsched.workflow.verdict as verdict_module

    def tied(*_: object, **__: object) -> RuleScores:
        return RuleScores(
            scores={"sjf": 5.0, "easy-sjf": 5.0}, specs={"sjf": resolve("sjf"), "easy-sjf": resolve("easy-sjf")}
        )

    train_w, validation, _ = windows(small_swf)
    tasks = train_plan(train_w, POLICY, tmp_path / "m.npz", seeds=(0,), validation=validation)
    results = run_tasks(tasks)
    monkeypatch.setattr(verdict_module, "score_rules", tied)
    verdict = judge_and_write(results, tasks, tmp_path / "one.npz", about={})
    assert verdict.rule == "sjf" and verdict.replacement[0] == "sjf" and "windows" not in verdict.line()


def test_a_rule_prior_picks_over_the_other_traces_windows_for_its_objective_only(tmp_path: Path) -> None:
    from rlsched.workflow.verdict import RulePrior

    results = tmp_path / "results.json"
    traces = [
        {"trace": "site", "rules": {"a": {"validation": 1.0}, "b": {"validation": 9.0}}},
        {"trace": "x", "rules": {"a": {"validation": 5.0}, "b": {"validation": 2.0}, "c": {"validation": 1.0}}},
        {"trace": "y", "rules": {"a": {"validation": 4.0}, "b": {"validation": 2.0}, "c": {"validation": 9.0}}},
    ]
    results.write_text(json.dumps({"settings": {"objective": Objective().to_dict()}, "traces": traces}))
    prior = RulePrior.from_results(results)
    assert set(prior.windows) == {"site", "x", "y"}
    # Ratios to each window's best among the candidates a, b: site a 1, b 9; x a 2.5, b 1; y a 2, b 1.
    assert prior.pick(Objective(), ["a", "b"]) == "a"  # a (1 · 2.5 · 2) ** ⅓ = 1.71 < b 9 ** ⅓ = 2.08
    assert prior.without("site").pick(Objective(), ["a", "b"]) == "b"  # without the site's own window
    # With c a candidate too: x a 5, b 2, c 1; y a 2, b 1, c 4.5: b (2 · 1) ** ½ beats c (1 · 4.5) ** ½.
    assert prior.without("site").pick(Objective(), ["a", "b", "c"]) == "b"
    with pytest.raises(ValueError, match="measured for bsld; this run judges by W"):
        prior.pick(Objective("W"), ["a", "b"])
    with pytest.raises(ValueError, match="no trace but the one trained on"):
        prior.without("site").without("x").without("y").check(Objective())
    broken = tmp_path / "broken.json"
    broken.write_text('{"settings": {}}')
    with pytest.raises(ValueError, match=f"{broken}: not a learning run's results.json"):
        RulePrior.from_results(broken)
    broken.write_text("{")
    with pytest.raises(ValueError, match=f"{broken}: not a JSON file"):
        RulePrior.from_results(broken)
    with pytest.raises(ValueError, match="cannot read the rule prior"):
        RulePrior.from_results(tmp_path / "missing.json")


def test_the_shipped_rule_prior_is_the_committed_12k_tables_validation_windows() -> None:
    # A regenerated table must be followed by `python scripts/export_rule_prior.py`.
    from importlib.resources import files

    from rlsched.workflow.verdict import PUBLIC_PRIOR_FILE, RulePrior, prior_projection

    source = "docs/results/learning-12k/results.json"
    committed = json.loads((Path(__file__).resolve().parents[2] / source).read_text())
    shipped = json.loads((files("rlsched.workflow") / PUBLIC_PRIOR_FILE).read_text())
    assert shipped == json.loads(json.dumps(prior_projection(committed, source)))
    prior = RulePrior.public()
    assert len(prior.windows) == 9 and prior.objective == Objective()
    # What `train --rule-prior public` deploys on a trace of the table is the 12k report's column "rule the other
    # traces pick" for it.
    from rlsched.workflow.learning_report import other_traces_picks

    column = other_traces_picks(committed["traces"], Objective())
    assert len(column) == 9
    for row in committed["traces"]:
        assert prior.without(row["trace"]).pick(Objective(), row["rules"]) == column[row["trace"]]


def test_with_a_prior_a_losing_model_is_replaced_by_the_priors_rule_and_the_line_says_where_from() -> None:
    from rlsched.workflow.verdict import RulePrior

    field = rules(easy=20.0, f4=12.0, **{"easy-sjf": 10.0})
    prior = RulePrior("ref.json", Objective(), {"x": {"f4": 1.0, "easy-sjf": 3.0}, "y": {"f4": 2.0, "easy-sjf": 2.5}})
    loses = judge(Objective(), GATE, 10.4, [10.4], field, prior=prior)
    # Still judged against validation's best (easy-sjf); the prior only names the replacement.
    assert loses.loses and loses.rule == "easy-sjf" and loses.replacement == ("f4", '[agent] kind = "f4"')
    assert loses.deploy_prior == "the validation windows of 2 other traces (ref.json)"
    assert loses.line().startswith(
        'model loses to easy-sjf by 4 % on validation bsld: deploy f4 (`[agent] kind = "f4"`, the rule the '
        "validation windows of 2 other traces (ref.json) picks)"
    )
    assert loses.to_dict()["deploy_prior"] == loses.deploy_prior
    beats = judge(Objective(), GATE, 8.8, [8.8, 9.0, 9.2], field, prior=prior)
    assert beats.outcome == "beats" and "picks" not in beats.line()


def test_rank_carryover_ranks_each_windows_best_rule_on_the_next() -> None:
    first = {"a": 1.0, "b": 2.0, "c": 3.0, "d": 4.0}
    second = {"a": 3.0, "b": 1.0, "c": 2.0, "d": 4.0, "only-here": 0.5}
    third = {"a": 7.0, "b": 7.0, "c": 7.0, "d": 7.0, "only-here": 7.0}
    carried = rank_carryover(Objective(), [("w1", first), ("w2", second), ("w3", third)])
    one, two = carried
    # "a" is best on w1 and third of the four rules both windows scored ("only-here" is not one of them).
    assert (one.rule, one.rank, one.rules, one.tied) == ("a", 3, 4, 0)
    assert one.correlation == pytest.approx(0.4)  # ranks (1, 2, 3, 4) against (3, 1, 2, 4)
    # w3 scores every rule alike: the best of w2 shares the first rank, and there is no order to correlate.
    assert (two.rule, two.rank, two.rules, two.correlation) == ("only-here", 1, 5, None)
    # Higher is better: the order turns round.
    (w,) = rank_carryover(Objective("W"), [("w1", first), ("w2", second)])
    assert (w.rule, w.rank) == ("d", 1)


def test_rank_carryover_names_the_first_of_tied_rules_and_has_no_best_where_all_tie() -> None:
    tied = {"b": 1.0, "a": 1.0, "c": 2.0}
    later = {"a": 5.0, "b": 5.0, "c": 1.0}
    (c,) = rank_carryover(Objective(), [("w1", tied), ("w2", later)])
    assert (c.rule, c.tied, c.rank) == ("a", 1, 2)
    (flat,) = rank_carryover(Objective(), [("w1", dict.fromkeys("abc", 3.0)), ("w2", later)])
    assert flat.rank is None and flat.correlation is None
    assert carryover_line([flat]) == (
        "rules window to window: every rule scored alike on w1. A rule best by a small margin on one window is not "
        "thereby the best on the next."
    )
    assert "the best on w1 (a and 1 tied with it) ranked 2nd of 3 on w2" in carryover_line([c])
    assert carryover_line([]) == ""
