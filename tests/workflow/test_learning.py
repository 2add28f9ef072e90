"""Issue 23's table (rlsched/workflow/learning.py): one quick row on a small trace, the report from its data."""

from __future__ import annotations

import json
import math
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rlsched.cli._common import load_workload
from rlsched.core.objective import Objective
from rlsched.core.policies.registry import resolve
from rlsched.sim.workload import Workload
from rlsched.workflow.learning import LearningSettings, learning_trace, quick_settings, replay_cores
from rlsched.workflow.learning_report import (
    WITH_WINDOWS,
    carryover_section,
    goals,
    render_report,
    replays_on_test,
    rule_windows_of,
    still_pretraining,
    write_outputs,
)
from tests.workflow.conftest import write_swf


def _quick(folder: Path) -> tuple[Workload, LearningSettings]:
    """The small trace and the quick settings every full row of this module runs on."""
    swf = write_swf(folder / "small.swf", n=300, interarrival_s=60.0)
    return load_workload(str(swf)), quick_settings(seeds=(0, 1), max_jobs=300)


@pytest.fixture(scope="module")
def quick_row(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    workload, settings = _quick(tmp_path_factory.mktemp("learning"))
    return {"settings": settings.to_dict(), "traces": [learning_trace(workload, settings)]}


def test_a_quick_row_scores_every_rule_and_both_learned_policies_on_the_test_window(quick_row: dict[str, Any]) -> None:
    row = quick_row["traces"][0]
    assert row["windows"] == {"train": "jobs 0–149", "validation": "jobs 150–224", "test": "jobs 225–299"}
    rules = row["rules"]
    assert len(rules) > 20 and {"easy", "f4:runtime_model=user-last2"} <= set(rules)
    assert {v["runtime"] for v in rules.values()} >= {"requested", "user-last2", "learned"}
    best = row["best_rule_test"]
    assert best["test"] == min(v["test"] for v in rules.values()) == rules[best["rule"]]["test"]
    assert len(row["learned"]["test"]["seeds"]) == len(row["scored"]["searches"]) == 2
    # The deployed choice follows train's verdict: the verdict's rule when the model loses, the model otherwise.
    verdict, deployed = row["learned"]["verdict"], row["deployed"]
    if verdict["outcome"] == "loses":
        assert deployed == {
            "kind": "rule",
            "what": verdict["deploy_rule"],
            "test": rules[verdict["deploy_rule"]]["test"],
            "spread": 0.0,
        }
    else:
        assert deployed["kind"] == "model" and deployed["test"] == row["learned"]["selected"]["test"]
    assert row["ratios"]["deployed"] == pytest.approx(deployed["test"] / best["test"])
    # The scored search goes through train too: its own verdict, against the same rules' validation scores.
    scored, scored_deployed = row["scored"]["verdict"], row["deployed_scored"]
    assert scored["rule"] == verdict["rule"] and scored["rule_score"] == verdict["rule_score"]
    assert scored["model_score"] == min(s["validation"] for s in row["scored"]["searches"])
    if scored["outcome"] == "loses":
        assert scored_deployed["what"] == scored["deploy_rule"]
        assert scored_deployed["test"] == rules[scored["deploy_rule"]]["test"]
    else:
        assert scored_deployed["test"] == row["scored"]["selected"]["test"]
    assert row["ratios"]["deployed_scored"] == pytest.approx(scored_deployed["test"] / best["test"])
    # The rule deployed instead of a loser: the best geometric mean of ratios to each window's best rule, over the
    # train window (150 jobs: one part, as parts under 100 jobs are not made) and validation.
    picked = row["windows_pick"]
    assert picked["windows"] == 2
    # By default (rule_windows 1, train's) the rule deployed instead is validation's best.
    assert verdict["deploy_rule"] == verdict["rule"] == row["validation_pick"]["rule"]
    assert all(set(v["train"]) == {"train 1/1"} for v in rules.values())
    windows = [{k: v["train"]["train 1/1"] for k, v in rules.items()}, {k: v["validation"] for k, v in rules.items()}]
    geomean = {k: math.exp(sum(math.log(w[k] / min(w.values())) for w in windows) / 2) for k in rules}
    assert picked["geomean_ratio"] == pytest.approx(min(geomean.values()))
    assert geomean[picked["rule"]] == pytest.approx(min(geomean.values()))
    # The same jittered replays of the test window for every rule and for each learner's selected model.
    jittered = row["jittered"]
    assert set(jittered["rules"]) == set(rules) and set(jittered["models"]) == {"sarsa-esn", "scored"}
    replays = [*jittered["rules"].values(), *jittered["models"].values()]
    assert all(len(j["seeds"]) == 3 and j["spread"] >= 0 for j in replays)
    # Goal 1 compares the deployed choice with the best rule over those replays and the recorded one.
    like = replays_on_test(row, higher=False)
    assert like is not None
    means = {k: (v["test"] + sum(jittered["rules"][k]["seeds"])) / 4 for k, v in rules.items()}
    assert like["best"]["mean"] == pytest.approx(min(means.values()))
    assert means[like["best"]["what"]] == pytest.approx(min(means.values()))
    if deployed["kind"] == "model":
        model = [row["learned"]["selected"]["test"], *jittered["models"]["sarsa-esn"]["seeds"]]
        assert like["deployed"]["seeds"] == model
    assert set(row["prediction"]) == {"requested", "user-last2", "learned"}
    assert all(math.isfinite(p["mae_s"]) for p in row["prediction"].values())
    # 150 train jobs cannot make sarsa-esn's 500 pretraining decisions: every seed's one pass is its pretraining
    # rule, and the report says so.
    assert row["learned"]["pass_pretraining"] == {str(s): [True] for s in (0, 1)}
    assert still_pretraining([row]) == [row["trace"]]
    assert f"**sarsa-esn is still its pretraining rule** on {row['trace']}:" in render_report(quick_row)


def _without_timings(value: Any) -> Any:
    """A row with its wall times left out, which differ from run to run: ``seconds``, ``train_seconds`` and the
    search's note's "…, 0.3 s)"."""
    if isinstance(value, dict):
        return {k: _without_timings(v) for k, v in value.items() if k not in {"seconds", "train_seconds"}}
    if isinstance(value, list):
        return [_without_timings(v) for v in value]
    if isinstance(value, str):
        return re.sub(r"[0-9.]+ s\)", "s)", value)
    return value


def test_a_row_run_on_two_processes_is_the_row_run_on_one(
    quick_row: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
) -> None:
    # --workers spreads the seeds and every rule replay over a pool: a whole trace's row in less wall time,
    # and the same numbers, so rows of one table may come from runs with different --workers.
    workload, settings = _quick(tmp_path_factory.mktemp("learning-pool"))
    row = learning_trace(workload, replace(settings, workers=2))
    assert _without_timings(row) == _without_timings(quick_row["traces"][0])


def test_a_row_stopped_in_the_middle_resumes_from_its_pieces_and_is_the_row_run_at_once(
    quick_row: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A whole trace's row is hours: a run stopped after the rules' replays and one seed's training keeps them,
    # and the run started again replays and trains only the rest, to the same row.
    from rlsched.workflow.pieces import PieceStore
    from rlsched.workflow.train_task import TrainResult

    class Stopped(Exception):
        pass

    put = PieceStore.put
    trained: list[object] = []

    def put_until_the_second_training(self: PieceStore, key: str, value: Any) -> None:
        if trained:
            raise Stopped  # killed before the second seed's training was kept
        if isinstance(value, TrainResult):
            trained.append(value)
        put(self, key, value)

    workload, settings = _quick(tmp_path)
    monkeypatch.setattr(PieceStore, "put", put_until_the_second_training)
    with pytest.raises(Stopped):
        learning_trace(workload, settings, pieces=PieceStore(tmp_path / "pieces"))
    monkeypatch.undo()
    kept = len(list((tmp_path / "pieces").iterdir()))
    assert len(trained) == 1 and kept > 20  # the rules on test and the first seed's training
    again = PieceStore(tmp_path / "pieces")
    row = learning_trace(workload, settings, pieces=again)
    assert again.reused == kept and again.kept > 0
    assert _without_timings(row) == _without_timings(quick_row["traces"][0])


def test_the_report_regenerates_from_results_json_alone(quick_row: dict[str, Any], tmp_path: Path) -> None:
    write_outputs(quick_row, tmp_path)
    report = (tmp_path / "report.md").read_text()
    again = json.loads((tmp_path / "results.json").read_text())
    assert render_report(again) == report
    assert "| small |" in report and "test window only" in report and (tmp_path / "ratios.png").stat().st_size > 0


def _row(
    deployed: float, spread: float, best: float = 10.0, trace: str = "t", requested_mae: float = 5.0
) -> dict[str, Any]:
    rules = {"easy": {"validation": best, "test": best, "runtime": "requested"}}
    return {
        "trace": trace,
        "deployed": {"kind": "model", "what": "m", "test": deployed, "spread": spread},
        "deployed_scored": {"kind": "rule", "what": "easy", "test": best, "spread": 0.0},
        "best_rule_test": {"rule": "easy", "test": best},
        "ratios": {
            "learned": deployed / best,
            "scored": 1.0,
            "deployed": deployed / best,
            "deployed_scored": 1.0,
            "validation_pick": 1.0,
        },
        "rules": rules,
        "prediction": {"requested": {"mae_s": requested_mae}, "user-last2": {"mae_s": 2.0}, "learned": {"mae_s": 1.0}},
    }


def test_a_deployed_choice_worse_than_the_best_rule_beyond_its_spread_misses_the_goal() -> None:
    settings = LearningSettings().to_dict()
    within = goals({"settings": settings, "traces": [_row(11.0, 2.0)]})
    beyond = goals({"settings": settings, "traces": [_row(11.0, 0.5)]})
    assert "reached" in within[0] and "missed on 1 of 1: t (+10 %)" in beyond[0]
    # The scored search's verdict deployed the best rule itself: reached either way.
    assert "(the scored search's verdict)" in beyond[1] and "reached" in beyond[1]


def _seeds(values: list[float]) -> dict[str, Any]:
    mean = sum(values) / len(values)
    return {"mean": mean, "spread": math.sqrt(sum((v - mean) ** 2 for v in values) / len(values)), "seeds": values}


def _replayed(row: dict[str, Any], best: list[float], other: list[float], model: list[float]) -> dict[str, Any]:
    """``row`` with jittered replays: rule easy's, another rule's and the deployed model's (first: as recorded)."""
    row["rules"]["other"] = {"validation": 1.0, "test": other[0], "runtime": "requested"}
    row["rules"]["easy"]["test"] = best[0]
    row["validation_pick"] = {"rule": "easy", "test": best[0]}
    row["learned"] = {"selected": {"test": model[0]}}
    row["scored"] = {"selected": {"test": best[0]}}
    row["deployed"]["test"] = model[0]
    row["jittered"] = {
        "jitter_s": 300.0,
        "jitter_seeds": [1, 2, 3],
        "rules": {"easy": _seeds(best[1:]), "other": _seeds(other[1:])},
        "models": {"sarsa-esn": _seeds(model[1:]), "scored": _seeds(best[1:])},
    }
    return row


def test_goal_one_judges_the_deployed_model_on_the_same_replays_as_the_rules() -> None:
    settings = LearningSettings().to_dict()
    # As recorded the model (9) beats easy (10), and easy is the best rule; over the four replays the model's mean
    # is 15 ± 3.5 and the best rule is "other" (mean 10.25, spread 0.43): worse beyond the spread.
    row = _replayed(_row(9.0, 0.0), [10.0, 12.0, 12.0, 12.0], [11.0, 10.0, 10.0, 10.0], [9.0, 17.0, 17.0, 17.0])
    like = replays_on_test(row, higher=False)
    assert like is not None and like["best"]["what"] == "other" and like["deployed"]["mean"] == 15.0
    line = goals({"settings": settings, "traces": [row]})[0]
    assert "like for like" in line and "missed on 1 of 1: t (+46 %)" in line
    # The same model with replays that spread as widely as its gap: a tie.
    row = _replayed(_row(9.0, 0.0), [10.0, 12.0, 12.0, 12.0], [11.0, 10.0, 10.0, 10.0], [5.0, 5.0, 17.0, 17.0])
    assert "reached" in goals({"settings": settings, "traces": [row]})[0]
    report = render_report({"settings": settings, "traces": [_full(row)]})
    assert "## Goal 1 like for like" in report and "| t | other: 10.2 ± 0.433 | m: 11.0 ± 6 (1.07) |" in report


def test_with_rule_windows_3_a_losing_verdict_deploys_the_windows_rule_and_a_model_stays() -> None:
    settings = LearningSettings().to_dict()
    # Over the four replays easy (validation's pick) is 11.5 ± 0.87 and "other" (the windows' pick) the best,
    # 10.25 ± 0.43; sarsa-esn's verdict deployed its model, the scored search's lost and deployed easy.
    row = _replayed(_row(9.0, 0.0), [10.0, 12.0, 12.0, 12.0], [11.0, 10.0, 10.0, 10.0], [10.0, 10.0, 10.0, 10.0])
    row["windows_pick"] = {"rule": "other", "test": 11.0}
    like = replays_on_test(row, higher=False)
    assert like is not None
    assert like["deployed" + WITH_WINDOWS] is like["deployed"] and like["deployed"]["what"] == "m"
    assert like["deployed_scored"]["what"] == "easy" and like["deployed_scored" + WITH_WINDOWS]["what"] == "other"
    lines = goals({"settings": settings, "traces": [row]})
    default = next(line for line in lines if line.startswith("**Deployed choice (the scored search's verdict)"))
    windows = next(line for line in lines if "the scored search's verdict with `--rule-windows 3`" in line)
    assert "missed on 1 of 1: t (+12 %)" in default and "reached on all 1 traces run" in windows
    report = render_report({"settings": settings, "traces": [_full(row)]})
    assert "| easy: 11.5 ± 0.866 (1.12) | other: 10.2 ± 0.433 (1) |" in report
    assert "the windows' rule 1 (with `--rule-windows 3`, that rule instead of a losing model: deployed by " in report
    # A row recorded before the windows' pick was measured has no such line.
    del row["windows_pick"]
    assert not any("--rule-windows 3" in line for line in goals({"settings": settings, "traces": [row]}))


def test_the_learners_are_set_beside_the_rule_validation_picks_over_the_same_replays() -> None:
    settings = LearningSettings().to_dict()

    def beside(model: list[float]) -> list[str]:
        row = _replayed(_row(9.0, 0.0), [10.0, 12.0, 12.0, 12.0], [11.0, 10.0, 10.0, 10.0], model)
        return [line for line in goals({"settings": settings, "traces": [row]}) if "rule validation picks" in line]

    # Validation picked easy (11.5 ± 0.87 over the four replays); the model's 8 ± 0 is 30 % better, beyond both
    # spreads; the scored search's selected seed replays exactly as easy.
    learned, scored = beside([8.0, 8.0, 8.0, 8.0])
    assert "learned model (sarsa-esn) against the rule validation picks" in learned
    assert "better beyond the spread on 1 of 1 traces (t), worse beyond it on 0; geometric-mean ratio 0.696" in learned
    assert "on 0 of 1 traces, worse beyond it on 0; geometric-mean ratio 1." in scored
    # As recorded the model (5) is far better, but over the four replays (11 ± 6) only as good as easy: a tie.
    learned, _ = beside([5.0, 5.0, 17.0, 17.0])
    assert "on 0 of 1 traces, worse beyond it on 0; geometric-mean ratio 0.957" in learned
    # Worse beyond the spread.
    learned, _ = beside([14.0, 14.0, 14.0, 14.0])
    assert "on 0 of 1 traces, worse beyond it on 1 (t); geometric-mean ratio 1.22" in learned


def _full(row: dict[str, Any]) -> dict[str, Any]:
    """What render_report reads of a row besides what goals reads."""
    return {
        **row,
        "jobs": 10,
        "cores": 4,
        "recorded_cores": 4,
        "core_fraction": 1.0,
        "seconds": 1.0,
        "rules_left_out": [],
        "windows": {"train": "a", "validation": "b", "test": "c"},
        "prediction": {k: {**v, "under_share": 0.5} for k, v in row["prediction"].items()},
        "learned": {
            **row["learned"],
            "test": {"mean": 9.0, "spread": 0.0, "seeds": [9.0]},
            "verdict": {"line": "v"},
            "epoch_validation": {},
            "train_seconds": [],
        },
        "scored": {
            "test": {"mean": 10.0, "spread": 0.0, "seeds": [10.0]},
            "verdict": {"line": "v"},
            "searches": [],
            "selected": {"spec": "s", "test": 10.0},
        },
    }


def test_three_wins_of_ten_percent_reach_the_learned_goal_and_two_miss_it() -> None:
    settings = LearningSettings().to_dict()
    three = [_row(8.0, 0.1) for _ in range(3)]
    two = [_row(8.0, 0.1), _row(8.0, 0.1), _row(10.0, 0.1)]
    assert "reached" in goals({"settings": settings, "traces": three})[2]
    assert "missed: 2 of 3" in goals({"settings": settings, "traces": two})[2]


def test_fewer_cores_bring_the_offered_load_to_about_the_target() -> None:
    workload = load_workload("lal", scale=0.05)
    cores, fraction = replay_cores(workload, 0.8)
    reduced = workload.with_max_procs(cores)
    assert cores < workload.max_procs and fraction == cores / workload.max_procs
    assert 0.7 < reduced.summary()["offered_load"] <= 0.8


def _hourly_jobs(path: Path, last_gap_s: int, n: int = 400, max_procs: int = 64) -> Path:
    """``n`` jobs of 4 cores for an hour, one an hour but one every ``last_gap_s`` in the last quarter (the test
    window): 0.06 of ``max_procs`` offered by the first three quarters."""
    gaps = np.where(np.arange(n) < 3 * n // 4, 3600, last_gap_s)
    lines = [f"; MaxProcs: {max_procs}", "; UnixStartTime: 1000000000"]
    for i, submit in enumerate(np.cumsum(gaps).tolist()):
        lines.append(f"{i + 1} {submit} 0 3600 4 -1 -1 4 7200 -1 1 {i % 5 + 1} 1 -1 1 1 -1 -1")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_fewer_cores_never_leave_a_measured_window_saturated(tmp_path: Path) -> None:
    """A trace whose whole offers 0.8 of the fewer cores, but its test window more than all of them: that replay
    would measure the backlog, so the cores are those that bring the busiest measured window to 0.8."""
    from rlsched.workflow.learning import SATURATED_LOAD, TARGET_LOAD

    workload = load_workload(str(_hourly_jobs(tmp_path / "burst.swf", 450)))  # the test window: 8 times more
    split = LearningSettings().split
    on_average, _ = replay_cores(workload, TARGET_LOAD)
    test_load = split.window(workload.with_max_procs(on_average), "test").summary()["offered_load"]
    assert test_load > SATURATED_LOAD  # the trace is what the test needs
    cores, fraction = replay_cores(workload, TARGET_LOAD, split=split)
    assert on_average < cores < workload.max_procs and fraction == cores / workload.max_procs
    reduced = workload.with_max_procs(cores)
    loads = {name: split.window(reduced, name).summary()["offered_load"] for name in ("validation", "test")}
    assert 0.7 < max(loads.values()) <= TARGET_LOAD
    # No measured window saturated: the split changes nothing.
    even = load_workload(str(_hourly_jobs(tmp_path / "even.swf", 3600)))
    assert replay_cores(even, TARGET_LOAD)[0] < even.max_procs
    assert replay_cores(even, TARGET_LOAD, split=split) == replay_cores(even, TARGET_LOAD)


def test_the_predictor_goal_leaves_out_a_trace_whose_request_is_the_runtime() -> None:
    # There the learned predictor, never above the request, is exact by construction: no comparison.
    settings = LearningSettings().to_dict()
    rows = [_row(10.0, 0.1, trace="real"), _row(10.0, 0.1, trace="filled", requested_mae=0.4)]
    # Requests recorded equal to the runtime but for a few jobs that ran 0 s (OSC-Clust): the runtime too.
    equal = _row(10.0, 0.1, trace="equal", requested_mae=3.0)
    equal["prediction"]["user-last2"]["mae_s"] = 6000.0
    line = next(
        g for g in goals({"settings": settings, "traces": [*rows, equal]}) if g.startswith("**Learned predictor")
    )
    assert "lower on 1 of the 1 traces run with a recorded request (real)" in line
    assert "not compared on filled, equal" in line


def test_a_trace_whose_replayed_jobs_barely_load_the_machine_is_replayed_on_fewer_cores() -> None:
    from rlsched.workflow.learning import LOW_LOAD, needs_fewer_cores

    assert needs_fewer_cores("LLNL-Thunder-2007-1.1-cln") and needs_fewer_cores("OSC-Clust-2000-3.1-cln", 0.9)
    assert needs_fewer_cores("SDSC-DS-2004-2.1-cln", 0.41)
    # So little load that the replay would be another machine (LPC-EGEE's first jobs: 0.04): as recorded.
    assert not needs_fewer_cores("LPC-EGEE-2004-1.2-cln", 0.04)
    assert not needs_fewer_cores("KTH-SP2-1996-2.1-cln", 0.67) and not needs_fewer_cores("x", LOW_LOAD)


def _stub_row(whole: Workload) -> dict[str, Any]:
    """A row as learning_trace returns one, for a test that replaces it: the trace on its recorded cores."""
    cores = int(whole.max_procs)
    return {"trace": whole.name, "jobs": len(whole), "cores": cores, "recorded_cores": cores, "prediction": {}}


def _stubbed_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], Path, LearningSettings]:
    """learning_trace replaced by :func:`_stub_row`: the names of the traces it ran (growing as it runs), a
    small trace, and quick settings for its first 100 jobs."""
    import rlsched.workflow.learning as learning

    ran: list[str] = []

    def fake_row(whole: Any, settings: Any, **_: Any) -> dict[str, Any]:
        ran.append(whole.name)
        return _stub_row(whole)

    monkeypatch.setattr(learning, "learning_trace", fake_row)
    swf = write_swf(tmp_path / "small.swf", n=120, interarrival_s=60.0)
    return ran, swf, learning.quick_settings((0,), max_jobs=100)


def test_each_finished_row_is_kept_and_a_run_started_again_resumes_from_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import rlsched.workflow.learning as learning

    ran, swf, settings = _stubbed_rows(tmp_path, monkeypatch)
    rows = tmp_path / "rows"
    first = learning.run_learning(lambda name, procs: load_workload(name), [str(swf)], settings, rows_dir=rows)
    assert ran == ["small"] and (rows / (str(swf).replace("/", "_") + ".json")).is_file()
    again = learning.run_learning(lambda name, procs: load_workload(name), [str(swf)], settings, rows_dir=rows)
    assert ran == ["small"]  # resumed: not run again …
    # … but its runtime predictors measured again, on the 100 jobs the row replayed.
    kept = {k: v for k, v in again["traces"][0].items() if k != "prediction"}
    assert kept == {k: v for k, v in first["traces"][0].items() if k != "prediction"}
    assert again["traces"][0]["prediction"] == learning.predictor_scores(load_workload(str(swf)).select(np.arange(100)))
    other = learning.quick_settings((0, 1), max_jobs=100)
    learning.run_learning(lambda name, procs: load_workload(name), [str(swf)], other, rows_dir=rows)
    assert ran == ["small", "small"]  # other settings: run afresh
    # The same settings, but the row kept was replayed on other cores than this run's (an older rule for them).
    path = rows / (str(swf).replace("/", "_") + ".json")
    saved = json.loads(path.read_text())
    saved["row"]["cores"] -= 1
    path.write_text(json.dumps(saved))
    learning.run_learning(lambda name, procs: load_workload(name), [str(swf)], other, rows_dir=rows)
    assert ran == ["small", "small", "small"]


def test_a_row_another_code_computed_is_computed_again_unless_asked_and_the_report_says_which_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import rlsched.workflow.learning as learning
    from rlsched.workflow.learning_report import _provenance

    ran, swf, settings = _stubbed_rows(tmp_path, monkeypatch)
    rows = tmp_path / "rows"

    def run(**kwargs: Any) -> dict[str, Any]:
        return learning.run_learning(
            lambda name, procs: load_workload(name), [str(swf)], settings, rows_dir=rows, **kwargs
        )

    code = learning.computing_code()
    assert run()["traces"][0]["codes"] == [code] and ran == ["small"]
    report = _provenance(run()["traces"])
    assert f"Code: every row computed by rlsched code `{code}`" in report
    assert learning.numerical_platform() in report and "openblas" in learning.numerical_platform()
    assert ran == ["small"]  # the same code: read back
    path = rows / (str(swf).replace("/", "_") + ".json")
    saved = json.loads(path.read_text())
    saved["row"]["codes"] = ["0123456789abcdef"]  # as if the code changed since
    path.write_text(json.dumps(saved))
    said: list[str] = []
    assert run(say=said.append)["traces"][0]["codes"] == [code] and ran == ["small", "small"]
    assert any("computed by code 0123456789abcdef" in line for line in said)
    del saved["row"]["codes"]  # a row from before rows recorded their code
    path.write_text(json.dumps(saved))
    kept = run(other_code=True)["traces"]
    assert ran == ["small", "small"] and learning.row_codes(kept[0]) == ["unrecorded"]  # asked: read back
    assert _provenance(kept).startswith("Code: not recorded: the rows were computed before rows recorded")
    assert "small: code not recorded" in _provenance([*kept, {**kept[0], "trace": "x", "codes": [code]}])
    mixed = _provenance([{**kept[0], "codes": ["a", "b"]}, {**kept[0], "trace": "x", "codes": [code]}])
    assert "small: **resumed across code changes** (`--other-code`), from pieces of codes `a`, `b`" in mixed
    assert f"x: code `{code}`" in mixed


def test_a_row_finished_from_an_earlier_runs_pieces_says_its_wall_time_is_the_last_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import rlsched.workflow.learning as learning
    from rlsched.workflow.learning_report import _resumed

    class Stopped(Exception):
        pass

    def fake_row(whole: Any, settings: Any, *, pieces: Any, **_: Any) -> dict[str, Any]:
        first = pieces.computed("first piece", lambda: 1.0)
        if not pieces.reused:
            raise Stopped  # the first run stops after its first piece
        cores = int(whole.max_procs)
        return {"trace": whole.name, "cores": cores, "recorded_cores": cores, "seconds": first, "prediction": {}}

    monkeypatch.setattr(learning, "learning_trace", fake_row)
    swf = write_swf(tmp_path / "small.swf", n=120, interarrival_s=60.0)
    settings = learning.quick_settings((0,), max_jobs=100)
    with pytest.raises(Stopped):
        learning.run_learning(lambda name, procs: load_workload(name), [str(swf)], settings, rows_dir=tmp_path)
    row = learning.run_learning(lambda name, procs: load_workload(name), [str(swf)], settings, rows_dir=tmp_path)
    assert row["traces"][0]["pieces_reused"] == 1
    assert _resumed(row["traces"][0]) == " (its last run; 1 of its pieces from earlier runs)"
    assert _resumed({"seconds": 5.0}) == ""


def test_the_report_says_the_search_was_by_bounded_slowdown_only_for_a_run_that_searched_so() -> None:
    """A W run recorded before the search was trained for the run's objective (its settings do not name the
    search's objective) says its search was by bounded slowdown; a run now records the objective and says not."""
    committed = Path(__file__).resolve().parents[2] / "docs" / "results" / "learning-w" / "results.json"
    data = json.loads(committed.read_text())
    settings = LearningSettings(objective=Objective("W", {"interactive": 3.0}))
    data["settings"]["search"] = settings.to_dict()["search"]
    assert data["settings"]["search"]["objective"] == data["settings"]["objective"]
    assert "fitness is bounded slowdown all the same" not in render_report(data)
    del data["settings"]["search"]["objective"]
    assert "fitness is bounded slowdown all the same" in render_report(data)


def test_the_report_says_what_the_learner_was_rewarded_for() -> None:
    """A run records that train rewarded sarsa-esn for the objective; one recorded before says the λ-reward."""
    committed = Path(__file__).resolve().parents[2] / "docs" / "results" / "learning" / "results.json"
    data = json.loads(committed.read_text())
    data["settings"]["learned_reward"] = LearningSettings().to_dict()["learned_reward"]
    assert "rewarded for the objective" in render_report(data)
    del data["settings"]["learned_reward"]
    assert "trained on P-grid's λ-reward" in render_report(data)


def test_the_rule_the_other_traces_pick_never_rests_on_the_traces_own_window(quick_row: dict[str, Any]) -> None:
    from rlsched.workflow.learning_report import OTHER_TRACES, WITH_PRIOR, other_traces_picks

    row = quick_row["traces"][0]
    labels = sorted(row["rules"])
    mine, theirs = labels[0], labels[1]

    def like(name: str, best: str, other: float) -> dict[str, Any]:
        # A copy of the row whose validation window names ``best`` the best rule, the other one ``other`` times
        # worse, every other rule far behind.
        score = {mine: other, theirs: other, best: 1.0}
        rules = {k: {**v, "validation": score.get(k, 100.0)} for k, v in row["rules"].items()}
        return {**row, "trace": name, "rules": rules}

    rows = [like("a", mine, 10.0), like("b", theirs, 2.0), like("c", theirs, 2.0)]
    picks = other_traces_picks(rows, Objective())
    # With a's own window mine would win (geometric mean (1 · 2 · 2) ** ⅓ = 1.59 against theirs 10 ** ⅓ = 2.15);
    # left out, b and c pick theirs for a.  b's others are a (mine; theirs 10× worse) and c: mine.
    assert picks == {"a": theirs, "b": mine, "c": mine}
    assert other_traces_picks(rows[:1], Objective()) == {}
    like_a = replays_on_test(rows[0], higher=False, other_pick=picks["a"])
    assert like_a is not None and like_a[OTHER_TRACES]["what"] == theirs
    assert like_a[OTHER_TRACES]["seeds"] == [row["rules"][theirs]["test"], *row["jittered"]["rules"][theirs]["seeds"]]
    # With --rule-prior a verdict deploys the model unless it loses, then the other traces' rule.
    for key in ("deployed", "deployed_scored"):
        expected = like_a[OTHER_TRACES] if rows[0][key]["kind"] == "rule" else like_a[key]
        assert like_a[key + WITH_PRIOR] == expected
    report = render_report({**quick_row, "traces": rows})
    assert "rule the other traces pick |" in report
    assert "Deployed choice (sarsa-esn's verdict with `--rule-prior`: the model unless it loses" in report


def test_the_single_rule_yardstick_is_the_best_geometric_mean_on_the_test_windows() -> None:
    from rlsched.workflow.learning_report import single_rule_misses

    def row(a: float, b: float, jitter: float = 0.0) -> dict[str, Any]:
        return {
            "rules": {"a": {"test": a}, "b": {"test": b}},
            "jittered": {"rules": {"a": {"seeds": [a + jitter] * 3}, "b": {"seeds": [b] * 3}}},
        }

    # a: (1 · 3) ** ½ = 1.73, b: (2 · 1) ** ½ = 1.41; each is beyond the (zero) spread on one trace.
    assert single_rule_misses([row(1.0, 2.0), row(3.0, 1.0)], higher=False) == ("b", pytest.approx(2**0.5), 1, 1)
    # Where higher is better the ratios turn over: a (2 · 1) ** ½, b (1 · 3) ** ½.
    assert single_rule_misses([row(1.0, 2.0), row(3.0, 1.0)], higher=True)[:3] == ("a", pytest.approx(2**0.5), 1)
    # A gap inside the spread is no miss: a's replays on the first trace (1, 2, 2, 2) are 1.75 ± 0.43, b's 1.5.
    label, _, misses, fewest = single_rule_misses([row(1.0, 1.5, jitter=1.0), row(1.0, 3.0)], higher=False)
    assert (label, misses, fewest) == ("a", 0, 0)


def test_rules_on_the_learned_prediction_are_judged_against_their_user_last2_twins_beyond_the_spread() -> None:
    # Two pairs over the same four replays of the test window (the recorded one first): sjf on learned is better
    # by more than either spread; saf on learned is better on the recorded replay but worse on average, by less
    # than the spread (a tie).
    def rule(runtime: str, replays: list[float]) -> tuple[dict[str, Any], dict[str, Any]]:
        jittered = replays[1:]
        return {"runtime": runtime, "test": replays[0], "validation": 1.0}, {
            "seeds": jittered,
            "mean": float(np.mean(jittered)),
            "spread": float(np.std(jittered)),
        }

    scores = {
        "easy": rule("requested", [10.0, 10.0, 10.0, 10.0]),
        "sjf:runtime_model=learned": rule("learned", [2.0, 2.1, 1.9, 2.0]),
        "sjf:runtime_model=user-last2": rule("user-last2", [4.0, 4.2, 3.8, 4.0]),
        "saf:runtime_model=learned": rule("learned", [2.9, 3.6, 2.6, 3.9]),
        "saf:runtime_model=user-last2": rule("user-last2", [3.0, 3.1, 3.2, 3.1]),
    }
    row = {
        **_row(10.0, 0.1),
        "rules": {label: v for label, (v, _) in scores.items()},
        "jittered": {"rules": {label: j for label, (_, j) in scores.items()}},
    }
    line = next(g for g in goals({"settings": LearningSettings().to_dict(), "traces": [row]}) if "beat the same" in g)
    assert "better beyond the spread in 1, worse beyond it in 0, a tie in 1 of 2 rule × trace pairs" in line
    assert "on the recorded replay alone better in 2" in line and line.endswith("not everywhere.")


def test_the_report_ranks_each_windows_best_rule_on_the_next_window() -> None:
    rules = {
        "a": {"runtime": "requested", "train": {"train 1/2": 1.0, "train 2/2": 3.0}, "validation": 2.0, "test": 1.0},
        "b": {"runtime": "requested", "train": {"train 1/2": 2.0, "train 2/2": 1.0}, "validation": 1.0, "test": 3.0},
        "c": {"runtime": "requested", "train": {"train 1/2": 3.0, "train 2/2": 2.0}, "validation": 3.0, "test": 2.0},
    }
    row = {"trace": "t", "rules": rules}
    assert [label for label, _ in rule_windows_of(row)] == ["train 1/2", "train 2/2", "validation", "test"]
    lines = "\n".join(carryover_section([row], Objective()))
    assert "| t | a: 3 of 3 (ρ -0.50) | b: 1 of 3 (ρ 0.50) | b: 3 of 3 (ρ -0.50) |" in lines
    assert "validation → test 3 (the best again on 0 of 1)" in lines


def test_the_tables_sarsa_esn_takes_its_runtime_input_from_the_settings() -> None:
    committed = Path(__file__).resolve().parents[2] / "docs" / "results" / "learning-whole" / "results.json"
    data = json.loads(committed.read_text())
    # A table run on the class median records plain "sarsa-esn", as the committed rows were recorded while it was
    # the registry's default, so they still resume; it is trained with the runtime input named.
    median = LearningSettings(learned_runtime="estimated")
    assert median.to_dict()["learned_policy"] == data["settings"]["learned_policy"] == "sarsa-esn"
    assert median.learned_spec == "sarsa-esn:runtime_model=estimated"
    assert "--learned-runtime estimated" in data["command"]
    # The default is the registry's: the learned prediction.
    learned = LearningSettings()
    assert learned.learned_runtime == resolve("sarsa-esn").params["runtime_model"] == "learned"
    assert learned.learned_spec == learned.to_dict()["learned_policy"] == "sarsa-esn:runtime_model=learned"
    with pytest.raises(ValueError, match="learned_runtime must be one of estimated, user-last2, learned"):
        LearningSettings(learned_runtime="oracle")  # the actual runtime: no live scheduler has it
    assert (
        "sarsa-esn (`sarsa-esn:runtime_model=estimated`, `--learned-runtime estimated`) the request and P-grid's "
        "class median over a sliding window as its runtime input" in render_report(data)
    )
    data["settings"]["learned_policy"] = learned.to_dict()["learned_policy"]
    assert (
        "sarsa-esn (`sarsa-esn:runtime_model=learned`, `--learned-runtime learned`) the request and the learned "
        "prediction of each job as its runtime input" in render_report(data)
    )


def test_a_row_trains_sarsa_esn_with_the_settings_runtime_input(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import rlsched.workflow.learning as learning

    class Trained(Exception):
        pass

    trained: list[str] = []
    real = learning._train_and_judge

    def spy(tw: Any, policy: str, *args: Any, **kwargs: Any) -> Any:
        if policy.startswith("sarsa-esn"):
            trained.append(policy)
            raise Trained
        return real(tw, policy, *args, **kwargs)

    monkeypatch.setattr(learning, "_train_and_judge", spy)
    workload, settings = _quick(tmp_path)
    for runtime in ("user-last2", "estimated", "learned"):
        with pytest.raises(Trained):
            learning_trace(workload, replace(settings, learned_runtime=runtime, max_jobs=200))
        assert trained[-1] == f"sarsa-esn:runtime_model={runtime}"


def test_the_commands_runtime_choices_are_the_tables() -> None:
    from rlsched.cli.learning import LEARNED_RUNTIMES as CHOICES
    from rlsched.cli.learning import learning as command
    from rlsched.workflow.learning import LEARNED_RUNTIMES

    assert CHOICES == LEARNED_RUNTIMES
    # The CLI names its default without importing the registry: the same as the settings' (the registry's).
    assert next(p.default for p in command.params if p.name == "learned_runtime") == LearningSettings().learned_runtime


def test_a_table_reads_the_traces_programs_only_with_job_names_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import rlsched.workflow.learning as learning

    known: list[bool] = []

    def fake_row(whole: Any, settings: Any, **_: Any) -> dict[str, Any]:
        known.append(whole.programs_known)
        return _stub_row(whole)

    monkeypatch.setattr(learning, "learning_trace", fake_row)
    swf = write_swf(tmp_path / "small.swf", n=120, interarrival_s=60.0)
    plain = learning.quick_settings((0,), max_jobs=100)
    named = replace(plain, job_names=True)
    for settings in (plain, named):
        learning.run_learning(lambda name, procs: load_workload(name), [str(swf)], settings, rows_dir=tmp_path / "r")
    assert known == [False, True]  # the run with job names is not the resumed run without them
    # Recorded only when on: every run recorded before the setting resumes as it was.
    assert "job_names" not in plain.to_dict() and named.to_dict()["job_names"] is True
    committed = Path(__file__).resolve().parents[2] / "docs" / "results" / "learning" / "results.json"
    data = json.loads(committed.read_text())
    assert "Job names: not read" in render_report(data)
    data["settings"]["job_names"] = True
    assert "Job names: read (`--job-names`" in render_report(data)
