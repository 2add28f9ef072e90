"""rlsched evaluate: the same jobs for every policy, spreads over windows/seeds, ties within the spread."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rlsched.core.classify import ClassRule
from rlsched.core.measures import responsiveness
from rlsched.core.view import JobClass
from rlsched.sim.policies import simulate_policy
from rlsched.sim.traces.swf import read_swf
from rlsched.sim.workload import with_class_rule
from rlsched.workflow.evaluate import (
    Evaluation,
    _spread,
    evaluate,
    first_seed,
    judge,
    parse_contender,
    parts_of,
    report_markdown,
    split_windows,
    write_outputs,
)
from rlsched.workflow.site import load_site
from rlsched.workflow.train import run_tasks, train_plan, write_models


def test_windows_are_consecutive_and_cover_the_trace(small_swf: Path) -> None:
    w = read_swf(small_swf)
    parts = split_windows(w, 3)
    assert sum(len(p) for p in parts) == len(w)
    assert np.array_equal(np.concatenate([p.job_id for p in parts]), w.job_id)
    with pytest.raises(ValueError, match="fewer than"):
        split_windows(w.select(np.arange(2)), 3)


def test_the_table_is_the_measures_of_each_window(small_swf: Path) -> None:
    w = read_swf(small_swf)
    ev = evaluate(w, [parse_contender("easy"), parse_contender("fcfs")], windows=2)
    assert [(r.contender, r.window) for r in ev.runs] == [("easy", 0), ("easy", 1), ("fcfs", 0), ("fcfs", 1)]
    # Recompute mean W of the interactive jobs of window 1 under easy by hand.
    part = split_windows(w, 2)[1]
    seen = with_class_rule(part, ClassRule())
    sched = simulate_policy(seen, "easy").schedule
    inter = seen.job_class == int(JobClass.INTERACTIVE)
    expected = float(responsiveness(sched.run[inter], sched.wait[inter]).mean())
    cell = ev.table["easy"]["interactive"]["mean_w"]
    assert cell["n"] == 2 and cell["values"][1] == pytest.approx(expected)
    assert cell["mean"] == pytest.approx(np.mean(cell["values"]))
    assert ev.table["easy"]["all"]["jobs"]["total"] == len(w)


def test_recorded_replays_the_trace_start_times(small_swf: Path) -> None:
    w = read_swf(small_swf)
    ev = evaluate(w, [parse_contender("recorded"), parse_contender("easy")])
    assert parse_contender("native").label == "recorded"
    mean_wait = ev.table["recorded"]["all"]["mean_wait_s"]["mean"]
    assert mean_wait == pytest.approx(float(w.recorded_wait.mean()))
    assert "recorded start times" in report_markdown(ev, [])


def test_with_one_window_deterministic_policies_tie_only_when_equal(small_swf: Path) -> None:
    w = read_swf(small_swf)
    ev = evaluate(w, [parse_contender("easy"), parse_contender("fcfs"), parse_contender("easy-sjf")], windows=1)
    for v in ev.verdicts:
        a = ev.table[v["best"]][v["group"]][v["measure"]]["mean"]
        if v["runner_up"] is not None:
            b = ev.table[v["runner_up"]][v["group"]][v["measure"]]["mean"]
            # One window and deterministic policies: a tie only for equal values.
            assert v["tie"] == (a == b)


def test_a_difference_within_the_window_spread_is_a_tie(small_swf: Path) -> None:
    ev = Evaluation("x", 1, 1, 3, 1, "", ("vo0",), (1.0,), [])

    def runs(values: list[float]) -> list[tuple[int, dict[str, dict[str, float]]]]:
        return [(k, {"all": {"mean_w": v}}) for k, v in enumerate(values)]

    per_run = {"a": runs([0.5, 0.9, 0.7]), "b": runs([0.6, 0.5, 0.75]), "c": runs([0.1, 0.2, 0.15])}
    ev.table = {k: {"all": {"mean_w": _spread([m["all"]["mean_w"] for _, m in r])}} for k, r in per_run.items()}
    verdict = judge(ev, per_run, "all", "mean_w", True)
    assert verdict is not None and verdict["best"] == "a"
    assert verdict["tie"] and verdict["tied_with"] == ["b"]  # paired differences -0.1, 0.4, -0.05
    assert "c" not in verdict["tied_with"]
    # A small difference every window agrees on is not a tie, even inside the windows' spread.
    per_run = {"a": runs([0.5, 0.9, 0.7]), "b": runs([0.49, 0.89, 0.69])}
    ev.table = {k: {"all": {"mean_w": _spread([m["all"]["mean_w"] for _, m in r])}} for k, r in per_run.items()}
    verdict = judge(ev, per_run, "all", "mean_w", True)
    assert verdict is not None and verdict["best"] == "a" and not verdict["tie"]


def test_a_trained_model_runs_greedy_beside_the_rules(small_swf: Path, site_config: Path, tmp_path: Path) -> None:
    w = read_swf(small_swf)
    site = load_site(site_config)
    tasks = train_plan(w, "sarsa-esn:pretrain_decisions=50", tmp_path / "m.npz", site=site)
    write_models(run_tasks(tasks))
    contenders = [
        parse_contender(str(tmp_path / "m.npz")),
        parse_contender("easy"),
        parse_contender("easy-sjf"),
        parse_contender("recorded"),
    ]
    ev = evaluate(w, contenders, site=site, windows=2)
    assert ev.vos == ("physics", "chem", "other") and ev.shares == pytest.approx((0.6, 0.3, 0.1))
    assert set(ev.table) == {"m", "easy", "easy-sjf", "recorded"}
    assert "vo:physics" in ev.table["m"]
    written = write_outputs(ev, tmp_path / "out")
    for name in ("wait_cdf.png", "fairness_over_time.png", "vo_share_over_time.png"):
        assert written[name].stat().st_size > 1000
    report = written["report"].read_text()
    assert "saved model" in report and "## By VO" in report and "vo:chem" in report
    data = json.loads(written["results"].read_text())
    assert {p["label"] for p in data["policies"]} == set(ev.table)


def test_a_model_for_another_class_rule_is_refused(small_swf: Path, site_config: Path, tmp_path: Path) -> None:
    w = read_swf(small_swf)
    site = load_site(site_config)
    write_models(run_tasks(train_plan(w, "sarsa-esn:pretrain_decisions=50", tmp_path / "m.npz", site=site)))
    # Without the config: the default rule (and the trace's own VOs) — not what the model was built for.
    with pytest.raises(ValueError, match="was built for"):
        evaluate(w, [parse_contender(str(tmp_path / "m.npz"))])


def test_learned_policies_by_name_are_seeded(small_swf: Path) -> None:
    w = read_swf(small_swf)
    ev = evaluate(w, [parse_contender("sarsa-esn:pretrain_decisions=50"), parse_contender("easy")], seeds=2)
    runs = [(r.contender, r.seed) for r in ev.runs]
    assert runs == [("sarsa-esn:pretrain_decisions=50", 0), ("sarsa-esn:pretrain_decisions=50", 1), ("easy", None)]


def test_with_a_split_only_the_test_window_is_replayed_ranked_by_the_objective(small_swf: Path) -> None:
    from rlsched.core.objective import Objective
    from rlsched.workflow.split import Deployment, TimeSplit

    w = read_swf(small_swf)
    ev = evaluate(
        w,
        [parse_contender("fcfs"), parse_contender("easy-sjf")],
        split=TimeSplit(),
        deployment=Deployment("gate"),
        objective=Objective("wait"),
    )
    assert ev.jobs == 100 and ev.window is not None and ev.window["jobs"] == [300, 400]
    (run,) = [r for r in ev.runs if r.contender == "fcfs"]
    assert np.array_equal(run.schedule.workload.submit, w.submit[300:])
    # Ranked by mean wait (the objective) first: the table lists the lower first, its verdict comes first.
    means = {label: ev.table[label]["all"]["objective"]["mean"] for label in ev.table}
    assert list(ev.table) == sorted(means, key=lambda label: means[label])
    assert ev.verdicts[0]["measure"] == "objective" and ev.verdicts[0]["best"] == next(iter(ev.table))
    assert means["fcfs"] == pytest.approx(ev.table["fcfs"]["all"]["mean_wait_s"]["mean"])
    assert all("in gate mode" in c.information(ev.class_rule) for c in ev.contenders)


def test_a_model_is_refused_on_a_test_window_overlapping_its_training(small_swf: Path, tmp_path: Path) -> None:
    from rlsched.workflow.split import Deployment, SplitError, TimeSplit
    from rlsched.workflow.train import judge_and_write

    w = read_swf(small_swf)
    split = TimeSplit()
    tasks = train_plan(
        split.window(w, "train"),
        "sarsa-esn:pretrain_decisions=50",
        tmp_path / "m.npz",
        validation=split.window(w, "validation"),
        deployment=Deployment("gate"),
    )
    judge_and_write(
        run_tasks(tasks),
        tasks,
        tmp_path / "m.npz",
        about={"workload": w.name, "jobs": len(w), "split": split.to_dict(), "windows": split.windows(w)},
    )
    model = parse_contender(str(tmp_path / "m.npz"))
    ev = evaluate(w, [model], split=split, deployment=Deployment("gate"))
    assert ev.contenders[0].provenance is not None and "trained on jobs 0–199" in ev.contenders[0].provenance
    with pytest.raises(SplitError, match="selected on jobs 200–299"):
        evaluate(w, [model], split=TimeSplit.parse("40/20/40"), deployment=Deployment("gate"))


def test_evaluate_takes_the_split_the_models_record_and_refuses_two(lal_model: Path, tmp_path: Path) -> None:
    from rlsched.core.policies import VERDICT_KEY, add_policy_metadata
    from rlsched.workflow.evaluate import recorded_split
    from rlsched.workflow.split import SplitError, TimeSplit

    paths = []
    for name, split in (("a", TimeSplit(60, 20, 20)), ("b", TimeSplit(50, 25, 25))):
        path = tmp_path / f"{name}.npz"
        add_policy_metadata(lal_model, path, {VERDICT_KEY: {"split": split.to_dict()}})
        paths.append(path)
    assert recorded_split([parse_contender(str(paths[0])), parse_contender("easy")]) == TimeSplit(60, 20, 20)
    assert recorded_split([parse_contender("easy"), parse_contender(str(lal_model))]) == TimeSplit()
    with pytest.raises(SplitError, match="different splits"):
        recorded_split([parse_contender(str(p)) for p in paths])


def test_multifactor_from_a_slurm_conf_runs_in_boost_mode(small_swf: Path, tmp_path: Path) -> None:
    from rlsched.workflow.split import Deployment, TimeSplit

    conf = tmp_path / "slurm.conf"
    conf.write_text("PriorityType=priority/multifactor\nPriorityWeightAge=7\nPriorityMaxAge=1-0\n")
    from rlsched.core.policies import resolve
    from rlsched.sim.policies import expand_site_files

    w = read_swf(small_swf)
    # The file read into explicit values (its absent keys at Slurm's defaults): what the named file must give.
    explicit = expand_site_files(resolve(f"multifactor:slurm_conf={conf}"))
    assert explicit.params["weight_age"] == 7.0
    ev = evaluate(
        w,
        [parse_contender(f"multifactor:slurm_conf={conf}"), parse_contender(explicit.label())],
        split=TimeSplit(),
        deployment=Deployment("boost"),
    )
    a, b = (r.schedule for r in ev.runs)
    assert a.mode == b.mode == "boost" and np.array_equal(a.start, b.start)


def test_the_vo_figure_folds_beyond_a_dozen_vos_and_keeps_its_legend_off_the_panels(tmp_path: Path) -> None:
    from matplotlib.colors import to_rgba

    from rlsched.workflow.evaluate import vo_share_figure
    from tests.cli.test_evaluate import many_vo_swf

    w = read_swf(many_vo_swf(tmp_path / "vos.swf", groups=40))
    ev = evaluate(w, [parse_contender("easy"), parse_contender("fcfs")])
    fig = vo_share_figure(ev, float(w.submit.min()))
    fig.tight_layout()
    fig.canvas.draw()
    legend = fig.axes[0].get_legend()
    names = [t.get_text() for t in legend.get_texts()]
    assert len(names) == 13 and names[-1] == "28 other VOs"
    colours = [to_rgba(h.get_facecolor()) for h in legend.legend_handles]
    assert len(set(colours)) == 13, "every band its own colour"
    box = legend.get_window_extent()
    for ax in fig.axes:
        assert not box.overlaps(ax.get_window_extent()), "the legend covers a panel"


# ------------------------------------------------------------------------------ --jitter
def test_with_jitter_every_simulated_policy_replays_each_window_as_recorded_and_jittered(small_swf: Path) -> None:
    w = read_swf(small_swf)
    contenders = [parse_contender(p) for p in ("easy", "fcfs", "sarsa-esn:pretrain_decisions=30", "recorded")]
    ev = evaluate(w, contenders, windows=2, seeds=2, jitter=2)
    for label, seeds in (("easy", 1), ("fcfs", 1), ("sarsa-esn:pretrain_decisions=30", 2)):
        runs = [(r.window, r.jitter, r.seed) for r in ev.runs if r.contender == label]
        seed_list = [0, 1] if seeds == 2 else [None]
        assert runs == [(k, j, s) for k in range(2) for j in range(3) for s in seed_list]
        # windows × (1 + jitter) replays (× seeds): the table's replicates.
        assert ev.table[label]["all"]["mean_w"]["n"] == 2 * 3 * seeds
        # Jittered replays keep every job: the jobs are counted once per window.
        assert ev.table[label]["all"]["jobs"]["total"] == ev.jobs
    # `recorded` cannot be jittered: its recorded replays only, one per window.
    assert [(r.window, r.jitter) for r in ev.runs if r.contender == "recorded"] == [(0, 0), (1, 0)]
    assert ev.table["recorded"]["all"]["mean_w"]["n"] == 2
    # The figures' series per window are the windows as recorded.
    assert [(r.window, r.jitter) for r in first_seed(parts_of(ev, "easy"))] == [(0, 0), (1, 0)]


def test_jittered_replays_move_the_submits_alike_for_every_policy(small_swf: Path) -> None:
    w = read_swf(small_swf)
    ev = evaluate(w, [parse_contender("easy"), parse_contender("fcfs")], windows=2, jitter=2)
    runs = {(r.contender, r.window, r.jitter): r.schedule for r in ev.runs}
    part = split_windows(w, 2)[1]
    recorded_submits = runs["easy", 1, 0].workload.submit
    assert np.array_equal(recorded_submits, part.submit)
    for j in (1, 2):
        jittered = runs["easy", 1, j].workload
        # The same jobs, other arrival seconds (within ±300 s), and another schedule.
        assert sorted(jittered.job_id) == sorted(part.job_id)
        assert not np.array_equal(jittered.submit, recorded_submits)
        assert np.array_equal(jittered.submit, part.jittered(j, 300.0).submit)  # jitter seeds 1..N, ±300 s
        moved = dict(zip(jittered.job_id, jittered.submit, strict=True))
        assert max(abs(moved[i] - s) for i, s in zip(part.job_id, part.submit, strict=True)) <= 300
        # The same replay (window, jitter seed) is the same arrivals for every policy: what the tie rule pairs.
        assert np.array_equal(runs["fcfs", 1, j].workload.submit, jittered.submit)
    values = ev.table["easy"]["all"]["mean_wait_s"]["values"]
    assert len(set(values)) == len(values) == 6, "the jittered replays differ from the recorded one"


def test_two_rules_closer_than_their_jittered_spread_tie_with_jitter_and_not_without(small_swf: Path) -> None:
    w = read_swf(small_swf)
    rules = [parse_contender("fcfs"), parse_contender("f1")]
    plain = evaluate(w, rules)
    jittered = evaluate(w, rules, jitter=2)
    without, with_jitter = (ev.verdicts[0] for ev in (plain, jittered))
    assert without["measure"] == with_jitter["measure"] == "objective"
    # On the window as recorded fcfs is ahead by a little: one deterministic replay has no spread, so a win.
    assert without["best"] == "fcfs" and without["diff"] > 0 and not without["tie"]
    # Its jittered replays put either ahead; the recorded difference is smaller than their spread.
    fcfs, f1 = (jittered.table[label]["all"]["objective"] for label in ("fcfs", "f1"))
    assert fcfs["values"][0] == plain.table["fcfs"]["all"]["objective"]["mean"]
    d = np.array(fcfs["values"]) - np.array(f1["values"])
    assert (d > 0).any() and (d < 0).any()
    assert without["diff"] < fcfs["std"] + f1["std"]
    assert with_jitter["tie"] and with_jitter["tied_with"] == [with_jitter["runner_up"]]
    assert {with_jitter["best"], with_jitter["runner_up"]} == {"fcfs", "f1"}


def _synthetic(jitter: int, values: dict[str, list[float]]) -> tuple[Evaluation, Any]:
    """One window, ``jitter`` jittered replays; each policy's objective on replays 0, 1, … (lower is better)."""
    ev = Evaluation("x", 1, 1, 1, 1, "", ("vo0",), (1.0,), [], jitter=jitter)
    per_run = {label: [(k, {"all": {"mean_wait_s": v}}) for k, v in enumerate(vs)] for label, vs in values.items()}
    ev.table = {k: {"all": {"mean_wait_s": _spread(list(vs))}} for k, vs in values.items()}
    return ev, per_run


def test_with_jitter_the_tie_rule_pairs_the_same_replay_across_policies() -> None:
    # b is 0.1 s behind a on every replay, far inside either one's spread over the replays: paired, a real win.
    ev, per_run = _synthetic(2, {"a": [10.0, 20.0, 30.0], "b": [10.1, 20.1, 30.1]})
    verdict = judge(ev, per_run, "all", "mean_wait_s", False)
    assert verdict is not None and verdict["best"] == "a" and not verdict["tie"]
    # The same means and spreads, the replays in another order: the winner changes from replay to replay: a tie.
    ev, per_run = _synthetic(2, {"a": [10.0, 20.0, 30.0], "b": [30.1, 10.1, 20.1]})
    verdict = judge(ev, per_run, "all", "mean_wait_s", False)
    assert verdict is not None and verdict["tie"]


def test_with_jitter_recorded_is_judged_on_its_recorded_replays_only() -> None:
    # A rule whose jittered spread would cover the gap: recorded has no spread to lend, and on the window as
    # recorded (the one replay both have) the rule is ahead: a win, as without --jitter.
    ev, per_run = _synthetic(2, {"easy": [10.0, 5.0, 15.0], "recorded": [11.0]})
    verdict = judge(ev, per_run, "all", "mean_wait_s", False)
    assert verdict is not None and verdict["best"] == "easy" and not verdict["tie"]
    # Ranked first on its mean over the jittered replays, but behind recorded on the window as recorded: no win.
    ev, per_run = _synthetic(2, {"easy": [12.0, 5.0, 13.0], "recorded": [11.0]})
    verdict = judge(ev, per_run, "all", "mean_wait_s", False)
    assert verdict is not None and verdict["best"] == "easy" and verdict["tie"]


def test_the_report_and_results_say_how_many_jittered_replays_and_which_spread(small_swf: Path, tmp_path: Path) -> None:
    from rlsched.workflow.evaluate import to_json, window_line

    w = read_swf(small_swf)
    contenders = [parse_contender("easy"), parse_contender("recorded")]
    plain = evaluate(w, contenders)
    assert "jitter" not in to_json(plain) and "Jitter" not in window_line(plain)
    assert all("jitter" not in run for run in to_json(plain)["runs"])
    ev = evaluate(w, contenders, windows=2, jitter=3, jitter_s=120)
    line = window_line(ev)
    assert "as recorded and 3 more times with every submit moved by up to ±120 s (seeds 1–3)" in line
    assert "recorded cannot be jittered" in line
    written = write_outputs(ev, tmp_path / "out", figures=False)
    report = written["report"].read_text()
    assert line in report and "each window as recorded and 3 times jittered (±120 s); not recorded" in report
    assert "recorded has no jittered replays: it is compared with a policy only on the windows as recorded" in report
    # Without `recorded` among the rows, the report does not speak of it.
    alone = evaluate(w, [parse_contender("easy")], jitter=1)
    assert "seed 1)" in window_line(alone) and "recorded cannot" not in report_markdown(alone, [])
    data = json.loads(written["results"].read_text())
    assert data["jitter"]["replays"] == 3 and data["jitter"]["spread_s"] == 120
    assert data["jitter"]["seeds"] == [1, 2, 3] and data["jitter"]["not_jittered"] == ["recorded"]
    assert [(r["window"], r["jitter"]) for r in data["runs"] if r["policy"] == "easy"] == [
        (k, j) for k in range(2) for j in range(4)
    ]
    with pytest.raises(ValueError, match="--jitter must be >= 0"):
        evaluate(w, contenders, jitter=-1)
    with pytest.raises(ValueError, match="--jitter-s must be >= 0"):
        evaluate(w, contenders, jitter=1, jitter_s=-5.0)
