"""The report of issue 23's table (``rlsched learning``): ``report.md`` and ``ratios.png`` from ``results.json``.

:func:`render_report` reads the rows :mod:`rlsched.workflow.learning` computed and nothing else, so a report
regenerates without a rerun (``rlsched learning --report-only``), and each goal of the issue is judged here, on the
rows (:func:`goals`).  This module computes no row: it is left out of the code a row records
(:data:`rlsched.workflow.pieces.REPORT_SOURCES`), so a change to a report's wording or to how a goal is
judged keeps every kept row and piece.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rlsched.core.objective import Objective
from rlsched.workflow.learning import (
    GEOMEAN_GOAL,
    JITTER_SEEDS,
    LEARNED_POLICY,
    LOW_LOAD,
    SATURATED_LOAD,
    TARGET_LOAD,
    WIN_RATIO,
    _ratio,
    label_runtime,
    learned_spec,
    replay_stats,
    row_codes,
)
from rlsched.workflow.pieces import UNRECORDED_CODE
from rlsched.workflow.split import TimeSplit
from rlsched.workflow.verdict import RulePrior, rank_carryover


def _fmt(v: float) -> str:
    if not math.isfinite(v):
        return str(v)
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.3g}" if abs(v) < 10 else f"{v:.1f}"


def _pm(stats: Mapping[str, Any]) -> str:
    return f"{_fmt(stats['mean'])} ± {_fmt(stats['spread'])}"


def _geomean(values: Sequence[float]) -> float:
    real = [v for v in values if math.isfinite(v) and v > 0]
    return float(np.exp(np.mean(np.log(real)))) if real else math.nan


def goals(data: Mapping[str, Any]) -> list[str]:
    """Each goal of issue 23's "What it must show", reached or by how much it is missed, on these rows."""
    rows = data["traces"]
    higher = bool(Objective.from_dict(data["settings"]["objective"]).higher_is_better)
    n = len(rows)
    out = []
    out.append(_deployed_goal(rows, higher, "deployed", f"Deployed choice ({LEARNED_POLICY}'s verdict)"))
    out.append(_deployed_goal(rows, higher, "deployed_scored", "Deployed choice (the scored search's verdict)"))
    picks = other_traces_picks(rows, Objective.from_dict(data["settings"]["objective"]))
    verdicts = (("deployed", f"{LEARNED_POLICY}'s verdict"), ("deployed_scored", "the scored search's verdict"))
    every = [replays_on_test(r, higher) for r in rows]
    if all(x is not None and WINDOWS in x for x in every):
        for key, by in verdicts:
            out.append(
                _deployed_goal(
                    rows,
                    higher,
                    key + WITH_WINDOWS,
                    f"Deployed choice ({by} with `--rule-windows 3`: the model unless it loses, then the rule the "
                    "train window's halves and validation pick together; not train's default)",
                )
            )
    if picks and all(x is not None for x in every):
        for key, by in verdicts:
            out.append(
                _deployed_goal(
                    rows,
                    higher,
                    key + WITH_PRIOR,
                    f"Deployed choice ({by} with `--rule-prior`: the model unless it loses, then the rule the "
                    f"other {n - 1} traces' validation windows pick, leave one trace out; not train's default)",
                    picks,
                )
            )
    # 2. The learned model beats the best rule by ≥ 10 % on ≥ 3 traces; geometric mean < 0.95.
    learners = (("learned", f"learned model ({LEARNED_POLICY})"), ("scored", "scored search"))
    for key, what in learners:
        ratios = [r["ratios"][key] for r in rows]
        wins = [r["trace"] for r in rows if r["ratios"][key] <= WIN_RATIO]
        g = _geomean(ratios)
        as_rule = still_pretraining(rows) if key == "learned" else []
        out.append(
            f"**{what} ≥ 10 % better than the best rule on ≥ 3 traces**: "
            + (
                f"reached ({', '.join(wins)})."
                if len(wins) >= 3
                else f"missed: {len(wins)} of {n} traces"
                + (f" ({', '.join(wins)})" if wins else "")
                + f"; best ratio {_fmt(min(ratios))}."
            )
            + f" Geometric-mean ratio over the {n} traces run {_fmt(g)} (goal < {GEOMEAN_GOAL} over the nine): "
            + ("below." if g < GEOMEAN_GOAL else f"missed by {_fmt(g - GEOMEAN_GOAL)}.")
            + (
                f" On {len(as_rule)} of them ({', '.join(as_rule)}) the model is still its pretraining rule "
                "(notes under the table)."
                if as_rule
                else ""
            )
        )
    out += [_against_validation_pick(rows, higher, key, what) for key, what in learners]
    out += _predictor_goals(rows, higher)
    w_run = (
        "this table"
        if data["settings"]["objective"]["name"] == "W"
        else "a run of its own with `--objective W --class-weight interactive=3` (docs/results/learning-w)"
    )
    out.append(
        f'**`objective = "W"` on the grid logs and LAL**: {w_run}; **CTC-SP2 training under 15 minutes**: '
        "`benchmarks/bench_workflow.py --protocol`."
    )
    return out


#: Each deployed choice of a row: its key, the learner whose verdict chose it (``jittered["models"]``) and that
#: learner's row.
DEPLOYED = (("deployed", LEARNED_POLICY, "learned"), ("deployed_scored", "scored", "scored"))


def replays_on_test(row: Mapping[str, Any], higher: bool, other_pick: str | None = None) -> dict[str, Any] | None:
    """Goal 1 like for like: every rule and each deployed choice scored over the same replays of the test
    window, the one as recorded and the jittered ones (``row["jittered"]``), mean ± spread; the best rule is the
    one with the best mean.  Keys ``best``, ``validation_pick`` and :data:`DEPLOYED`'s, each with ``what``;
    :data:`WINDOWS` (the rule the train window's halves and validation pick) and each :data:`DEPLOYED` key with
    :data:`WITH_WINDOWS` where the row has that rule; :data:`OTHER_TRACES` and each :data:`DEPLOYED` key with
    :data:`WITH_PRIOR` when ``other_pick`` names the rule the other traces pick (:func:`other_traces_picks`).
    None for a row recorded before the selected models were replayed jittered too."""
    jittered = row.get("jittered", {})
    if "models" not in jittered:
        return None
    rules = _rule_replays(row)
    sign = -1.0 if higher else 1.0
    best = min(rules, key=lambda label: (sign * rules[label]["mean"], label))
    pick = row["validation_pick"]["rule"]
    out = {"best": {"what": best, **rules[best]}, "validation_pick": {"what": pick, **rules[pick]}}
    if other_pick is not None:
        out[OTHER_TRACES] = {"what": other_pick, **rules[other_pick]}
    windows = row.get("windows_pick", {}).get("rule")
    if windows in rules:
        out[WINDOWS] = {"what": windows, **rules[windows]}
    for key, _learner, model in DEPLOYED:
        d = row[key]
        if d["kind"] == "rule":
            out[key] = {"what": d["what"], **rules[d["what"]]}
        else:
            out[key] = {"what": d["what"], **_model_replays(row, model)}
        if other_pick is not None:  # what train --rule-prior deploys: the prior's rule instead of a loser
            out[key + WITH_PRIOR] = out[OTHER_TRACES] if d["kind"] == "rule" else out[key]
        if WINDOWS in out:  # what train --rule-windows 3 deploys: the windows' rule instead of a loser
            out[key + WITH_WINDOWS] = out[WINDOWS] if d["kind"] == "rule" else out[key]
    return out


def _model_replays(row: Mapping[str, Any], model: str) -> dict[str, Any]:
    """The seed the verdict of ``model`` (``learned`` or ``scored``) selected: its mean ± spread over the test
    window's replays, as recorded and jittered."""
    learner = {m: name for _key, name, m in DEPLOYED}[model]
    return replay_stats([float(row[model]["selected"]["test"]), *row["jittered"]["models"][learner]["seeds"]])


def apart(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether two means ± spreads differ beyond the larger spread (else a tie)."""
    return bool(abs(a["mean"] - b["mean"]) > max(a["spread"], b["spread"]))


def _rule_replays(row: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Every rule's mean ± spread over the test window's replays, as recorded and jittered."""
    jittered = row["jittered"]["rules"]
    return {label: replay_stats([float(v["test"]), *jittered[label]["seeds"]]) for label, v in row["rules"].items()}


def single_rule_misses(rows: Sequence[Mapping[str, Any]], higher: bool) -> tuple[str, float, int, int]:
    """A yardstick for goal 1: the one rule that, run on every trace, has the best geometric-mean ratio to each
    test window's best rule — chosen in hindsight on the test windows themselves — its ratio and on how many
    traces it misses beyond the spread, and the fewest misses any single rule has.  A choice made before the
    test window that misses no more often does as well as any fixed rule could."""
    every = [_rule_replays(r) for r in rows]
    labels = sorted(set.intersection(*(set(rules) for rules in every)))
    sign = -1.0 if higher else 1.0
    bests = [min(rules.values(), key=lambda v: sign * v["mean"]) for rules in every]

    def judged(label: str) -> tuple[float, int]:
        ratios, misses = [], 0
        for rules, best in zip(every, bests, strict=True):
            mine = rules[label]
            ratios.append(_ratio(higher, mine["mean"], best["mean"]))
            misses += apart(mine, best) and sign * (mine["mean"] - best["mean"]) > 0
        return _geomean(ratios), misses

    scored = {label: judged(label) for label in labels}
    best_label = min(labels, key=lambda label: (scored[label][0], label))
    return best_label, scored[best_label][0], scored[best_label][1], min(m for _, m in scored.values())


#: :func:`replays_on_test`'s key for the rule the other traces pick, and the suffix of each :data:`DEPLOYED` key for
#: the choice its verdict makes with that rule as the replacement (``train --rule-prior``).
OTHER_TRACES = "other_traces"
WITH_PRIOR = "_with_prior"
#: The same for the rule the train window's halves and validation pick together (``row["windows_pick"]``) and the
#: choice each verdict makes with it as the replacement (``train --rule-windows 3``).
WINDOWS = "windows_pick"
WITH_WINDOWS = "_with_windows"


def other_traces_picks(rows: Sequence[Mapping[str, Any]], objective: Objective) -> dict[str, str]:
    """Leave one trace out: for each row, the rule the *other* rows' validation windows pick together
    (:meth:`RulePrior.pick`, what ``rlsched train --rule-prior`` deploys), among the rules this row replayed — the
    rule a site would deploy on the evidence of other sites' logs rather than its own validation window; a trace
    never informs its own pick.  Empty with fewer than two rows."""
    if len(rows) < 2:
        return {}
    prior = RulePrior(
        "this table",
        objective,
        {row["trace"]: {label: float(v["validation"]) for label, v in row["rules"].items()} for row in rows},
    )
    picks = {}
    for row in rows:
        try:
            picks[row["trace"]] = prior.without(row["trace"]).pick(objective, row["rules"])
        except ValueError:  # no rule scored on every other trace: no pick
            continue
    return picks


def _deployed_goal(
    rows: Sequence[Mapping[str, Any]], higher: bool, key: str, what: str, picks: Mapping[str, str] | None = None
) -> str:
    """Goal 1: ``what`` — the choice ``key`` names (a :data:`DEPLOYED` key, or one with :data:`WITH_PRIOR`, which
    needs ``picks``: the rule the other traces pick for each trace) — never worse than the best rule beyond the
    spread: both over the same replays of the test window where the row has them (:func:`replays_on_test`), else
    the model's seeds against the rules' jittered replays."""
    n = len(rows)
    worse, ties = [], []
    picks = picks or {}
    every = [replays_on_test(r, higher, picks.get(r["trace"])) for r in rows]
    replayed = bool(rows) and all(x is not None for x in every)
    for r, replays in zip(rows, every, strict=True):
        if replays is not None:
            if key not in replays:  # a trace the other traces pick no rule for
                continue
            best, best_spread = replays["best"]["mean"], replays["best"]["spread"]
            mean, spread = replays[key]["mean"], replays[key]["spread"]
        elif key not in r:  # a choice only the replays know (with the other traces' pick)
            continue
        else:
            d = r[key]
            best, best_spread = _rule_test(r, r["best_rule_test"]["rule"])
            mean, spread = _rule_test(r, d["what"]) if d["kind"] == "rule" else (d["test"], d["spread"])
        gap = (best - mean) if higher else (mean - best)
        if gap > max(spread, best_spread):
            worse.append(f"{r['trace']} ({100 * (_ratio(higher, mean, best) - 1):+.0f} %)")
        elif gap > 0:
            ties.append(
                f"{r['trace']} ({100 * (_ratio(higher, mean, best) - 1):+.0f} %, spread "
                f"{_fmt(max(spread, best_spread))})"
            )
    jittered = "jittered" in rows[0] if rows else False
    if replayed:
        how = (
            " (like for like: the choice and every rule over the same replays of the test window, as "
            "recorded and with jittered submits; the best rule is the best mean; the spread is the larger of the "
            "two)"
        )
    else:
        how = " (a rule's spread: its test replays with jittered submits)" if jittered else ""
    return (
        f"**{what} never worse than the best rule on test beyond the spread**"
        + how
        + ": "
        + (
            "reached on all " + str(n) + " traces run"
            if not worse
            else f"missed on {len(worse)} of {n}: " + ", ".join(worse)
        )
        + (f"; worse but within the spread (a tie) on {', '.join(ties)}" if ties else "")
        + "."
    )


def _against_validation_pick(rows: Sequence[Mapping[str, Any]], higher: bool, model: str, what: str) -> str:
    """The learner (``model``: the row's ``learned`` or ``scored``) against the rule validation picks, the rule a
    site deploys without a model, chosen with the information the model had; the goal above measures against
    the best rule on the test window itself, a choice no one can make before it.  Like for like: the seed the
    verdict selected and the rule over the same replays of the test window (as recorded and jittered)."""
    ratios: dict[str, float] = {}
    wins, losses = [], []
    for r in rows:
        replays = replays_on_test(r, higher)
        if replays is None:
            continue
        pick, mine = replays["validation_pick"], _model_replays(r, model)
        ratio = ratios[r["trace"]] = _ratio(higher, mine["mean"], pick["mean"])
        if apart(mine, pick):
            if ratio <= WIN_RATIO:
                wins.append(r["trace"])
            elif ratio > 1.0:
                losses.append(r["trace"])
    if not ratios:
        return f"Beside it: the {what} against the rule validation picks needs the test window's jittered replays."
    return (
        f"Beside it (not the issue's goal): the **{what} against the rule validation picks** (the rule a site "
        "would deploy without a model, chosen on the validation window as the model was; the selected seed and "
        "the rule over the same replays of the test window, as goal 1): ≥ 10 % better beyond the spread on "
        f"{len(wins)} of {len(ratios)} traces" + (f" ({', '.join(wins)})" if wins else "") + ", worse beyond it on "
        f"{len(losses)}" + (f" ({', '.join(losses)})" if losses else "") + "; geometric-mean ratio "
        f"{_fmt(_geomean(list(ratios.values())))}."
    )


def _predictor_goals(rows: Sequence[Mapping[str, Any]], higher: bool) -> list[str]:
    """Goal 3: the learned predictor's MAE below user-last2 on ≥ 7 of 9, and the rules on it beat the same rules on
    user-last2."""
    out = []
    # 3. The learned predictor's MAE below user-last2 on ≥ 7 of 9; rules on it beat the same rules on user-last2.
    # Where the request is the runtime, the predictor (never above the request) is exact by construction: no
    # comparison there.
    exact = request_is_runtime(rows)
    compared = [r for r in rows if r["trace"] not in exact]
    lower = [
        r["trace"] for r in compared if r["prediction"]["learned"]["mae_s"] < r["prediction"]["user-last2"]["mae_s"]
    ]
    out.append(
        f"**Learned predictor's MAE below user-last2 on ≥ 7 of the nine**: lower on {len(lower)} of the "
        f"{len(compared)} traces run with a recorded request"
        + (f" ({', '.join(lower)})" if lower else "")
        + (f"; not compared on {', '.join(exact)} (the request is the runtime)" if exact else "")
        + "."
    )
    ordered = [
        r
        for r in compared
        if None
        not in (r["prediction"]["learned"].get("order_agreement"), r["prediction"]["user-last2"].get("order_agreement"))
    ]
    if ordered:
        better = [
            r["trace"]
            for r in ordered
            if r["prediction"]["learned"]["order_agreement"] > r["prediction"]["user-last2"]["order_agreement"]
        ]
        out.append(
            "Beside it (no goal of its own): the learned predictor **orders the jobs submitted together better than "
            f"user-last2** (order agreement, the predictors' table below) on {len(better)} of the {len(ordered)} "
            "traces run with a recorded request" + (f" ({', '.join(better)})" if better else "") + "."
        )
    out.append(_rule_pairs_goal(rows, higher))
    return out


def _rule_pairs_goal(rows: Sequence[Mapping[str, Any]], higher: bool) -> str:
    """Goal 3(b): each rule on the learned prediction against the same rule on user-last2, over the same replays of
    the test window (as recorded and jittered) where the row has them, a difference inside the larger spread a
    tie; and on the recorded replay alone."""
    sign = -1.0 if higher else 1.0
    pairs, won, lost, won_recorded = 0, 0, 0, 0
    for r in rows:
        replays = _rule_replays(r) if "rules" in r.get("jittered", {}) else None
        for label, v in r["rules"].items():
            twin = label.replace("runtime_model=learned", "runtime_model=user-last2")
            if v["runtime"] != "learned" or twin not in r["rules"]:
                continue
            pairs += 1
            won_recorded += sign * (v["test"] - r["rules"][twin]["test"]) < 0
            if replays is not None:
                mine, other = replays[label], replays[twin]
                gap = sign * (mine["mean"] - other["mean"])
                beyond = apart(mine, other)
                won += beyond and gap < 0
                lost += beyond and gap > 0
    head = "**Rules on the learned prediction beat the same rules on user-last2** (test): "
    if not pairs:
        return head + "no pair to compare."
    verdict = " — reached." if won == pairs else " — not everywhere."
    if all("rules" in r.get("jittered", {}) for r in rows):
        return (
            head + f"better beyond the spread in {won}, worse beyond it in {lost}, a tie in {pairs - won - lost} of "
            f"{pairs} rule × trace pairs (the mean of the test window's replays, as recorded and jittered; the "
            f"spread is the larger of the two); on the recorded replay alone better in {won_recorded}" + verdict
        )
    return (
        head
        + f"{won_recorded} of {pairs} rule × trace pairs (the recorded replay)"
        + (" — reached." if won_recorded == pairs else " — not everywhere.")
    )


def _rule_test(row: Mapping[str, Any], rule: str) -> tuple[float, float]:
    """A rule's test score and spread: the mean and spread over the jittered replays where the row has them,
    else the recorded replay's score and no spread."""
    jittered = row.get("jittered", {}).get("rules", {}).get(rule)
    if jittered is not None:
        return float(jittered["mean"]), float(jittered["spread"])
    return float(row["rules"][rule]["test"]), 0.0


#: A requested time whose mean absolute error is under this share of user-last2's (or under 1 s) is the runtime
#: itself: OSC-Clust's log records every request equal to the runtime (MAE 3.3 s on its first 4,000 jobs against
#: user-last2's 6,479 s; the seconds come from jobs that ran 0 s with a request of 0, which the class prior
#: replaces), SDSC-Par's records none and the reader fills it in.
REQUEST_IS_RUNTIME_SHARE = 0.01


def request_is_runtime(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The traces whose requested time is the runtime: its MAE under 1 s or under
    :data:`REQUEST_IS_RUNTIME_SHARE` of user-last2's."""
    return [
        r["trace"]
        for r in rows
        if r["prediction"]["requested"]["mae_s"]
        < max(1.0, REQUEST_IS_RUNTIME_SHARE * r["prediction"]["user-last2"]["mae_s"])
    ]


def render_report(data: Mapping[str, Any]) -> str:
    """``report.md`` from ``results.json``'s data alone."""
    s = data["settings"]
    objective = Objective.from_dict(s["objective"])
    rows = data["traces"]
    lines = [
        "# Learned scheduling against the field's rules (issue 23)",
        "",
        f"Regenerate: `{data.get('command', 'rlsched learning')}` (the report alone: add `--report-only`).",
        "",
        f"Mode: {s['deployment_label']}; EASY backfilling with reservations from the time limit. Objective: "
        f"{objective.label()} ({'higher' if objective.higher_is_better else 'lower'} is better"
        + (
            "; the scored search's fitness is bounded slowdown all the same"
            if objective.name != "bsld" and "objective" not in s["search"]
            else ""
        )
        + f"). Split {TimeSplit.from_dict(s['split']).text()} by job count: "
        "each learned model is **trained on the train window, its pass and seed selected on the validation "
        "window; every number below is on the test window only** unless a column says validation. "
        f"Seeds {', '.join(map(str, s['seeds']))}; {LEARNED_POLICY}: {s['epochs']} epoch(s); scored search: "
        f"population {s['search']['population']}, {s['search']['generations']} generation(s), "
        f"{s['search']['sequences']} sequence(s) of {s['search']['sequence_jobs']} jobs, runtime "
        f"{s['search']['runtime_model']}."
        + (f" **Quick setting: the first {s['max_jobs']:,} jobs of each trace.**" if s.get("max_jobs") else ""),
        "",
        _information(s),
        "",
        _provenance(rows),
        "",
        "## The table (test window)",
        "",
        "| trace | jobs (cores) | best rule on test (hindsight) | rule validation picks | rule the windows "
        "pick | sarsa-esn | scored search | deployed (sarsa-esn's verdict) | deployed (scored's verdict) | "
        "sarsa / best | scored / best | deployed / best (sarsa's, scored's) | wall time |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    lines += [_table_row(r) for r in rows]
    lines += [
        "",
        f"Geometric means over the {len(rows)} traces: sarsa-esn / best "
        f"{_fmt(_geomean([r['ratios']['learned'] for r in rows]))}, scored / best "
        f"{_fmt(_geomean([r['ratios']['scored'] for r in rows]))}, deployed / best "
        f"{_fmt(_geomean([r['ratios']['deployed'] for r in rows]))} (sarsa-esn's verdict), "
        f"{_fmt(_geomean([r['ratios']['deployed_scored'] for r in rows]))} (the scored search's verdict), "
        "validation's rule / best "
        f"{_fmt(_geomean([r['ratios']['validation_pick'] for r in rows]))}"
        + (
            f", the windows' rule / best {_fmt(_geomean([r['ratios']['windows_pick'] for r in rows]))}"
            if all("windows_pick" in r["ratios"] for r in rows)
            else ""
        )
        + ".",
        "",
        "The rule the windows pick is the one `train --rule-windows 3` deploys when the model loses: the best "
        "geometric mean, over the train window's halves and the validation window, of its score relative "
        "to each window's best rule (`rlsched.workflow.verdict.rule_over_windows`); the rule validation "
        "picks is the best on the validation window alone, the one train deploys by default (`--rule-windows "
        "1`) and the table's deployed columns.",
        "",
    ]
    lines += _notes(rows)
    lines += _sections(data, objective)
    lines += ["![ratios](ratios.png)", ""]
    return "\n".join(lines)


def _information(s: Mapping[str, Any]) -> str:
    """The report's paragraph on the spread and on what each policy knows of the jobs' runtimes."""
    return (
        "Rules are deterministic (spread 0 in the table; their spread under jittered submits is below "
        "it, and goal 1 is judged on those replays: see its section); a learned row is mean ± standard "
        "deviation over the seeds' test scores, and a difference inside it is a tie. Information: the rules say theirs "
        "(`runtime_model`, the request by default); "
        + _learned_information(s.get("learned_policy", LEARNED_POLICY))
        + ", "
        + (
            "rewarded for the objective (`reward` = its name: the objective's growth while jobs queue, counted "
            "on the actual runtimes of the replay) and selected by it"
            if s.get("learned_reward") == "objective"
            else "trained on P-grid's λ-reward and selected by the objective"
        )
        + "; the scored search the request"
        + (
            ""
            if s["search"]["runtime_model"] == "requested"
            else f" and the {s['search']['runtime_model']} prediction (feature `log_pred`)"
        )
        + ". Job names: "
        + (
            "read (`--job-names`: each job's SWF executable id, field 14, as its program; the learned predictor "
            "keeps each user's runtimes per program, as the daemon does by job name; user-last2 stays per user)."
            if s.get("job_names")
            else "not read (the learned predictor keeps each user's runtimes, not per program; `--job-names` reads "
            "the traces' executable ids)."
        )
    )


def _provenance(rows: Sequence[Mapping[str, Any]]) -> str:
    """The report's sentence on what computed each row (:func:`row_codes`)."""
    by_codes: dict[tuple[str, ...], list[str]] = {}
    for r in rows:
        by_codes.setdefault(tuple(row_codes(r)), []).append(str(r["trace"]))
    platforms = sorted({str(r["platform"]) for r in rows if "platform" in r})
    what = (
        "(`rlsched.workflow.pieces.computing_code`: the sources of rlsched's core, sim and workflow and the "
        "numerical platform, "
        + (" or ".join(platforms) if platforms else "not recorded")
        + ", as another BLAS kernel set can round a learned model otherwise); `rlsched learning` reads back a row "
        "or a piece only from the same code, so a rerun by other code computes them again"
    )
    (codes, _), *others = by_codes.items()
    if not others and codes == (UNRECORDED_CODE,):
        return (
            f"Code: not recorded: the rows were computed before rows recorded their code {what} (`--other-code` "
            "reads back the rows kept)."
        )
    if not others and len(codes) == 1:
        return f"Code: every row computed by rlsched code `{codes[0]}` {what}."
    parts = []
    for codes, traces in by_codes.items():
        if codes == (UNRECORDED_CODE,):
            parts.append(f"{', '.join(traces)}: code not recorded (computed before rows recorded it)")
        elif len(codes) == 1:
            parts.append(f"{', '.join(traces)}: code `{codes[0]}`")
        else:
            parts.append(
                f"{', '.join(traces)}: **resumed across code changes** (`--other-code`), from pieces of codes "
                + ", ".join(f"`{c}`" for c in codes)
            )
    return f"Code: the rows were computed by different codes {what}. " + "; ".join(parts) + "."


def _learned_information(label: str) -> str:
    """What the table's sarsa-esn reads of each job's runtime, for the report's "Information" sentence."""
    runtime = label_runtime(label)
    read = (
        "P-grid's class median over a sliding window"
        if runtime == "estimated"
        else f"the {runtime} prediction of each job"
    )
    return (
        f"{LEARNED_POLICY} (`{learned_spec(runtime)}`, `--learned-runtime {runtime}`) the request and {read} as "
        "its runtime input"
    )


def _table_row(r: Mapping[str, Any]) -> str:
    """One trace's line of the report's table."""
    frac = f", {100 * r['core_fraction']:.0f} % of {r['recorded_cores']}" if r["core_fraction"] < 1 else ""
    d, ds = r["deployed"], r["deployed_scored"]
    picked = r.get("windows_pick")
    return (
        f"| {r['trace']} | {r['jobs']:,} ({r['cores']}{frac}) | {r['best_rule_test']['rule']}: "
        f"{_fmt(r['best_rule_test']['test'])} | {r['validation_pick']['rule']}: "
        f"{_fmt(r['validation_pick']['test'])} | "
        + (f"{picked['rule']}: {_fmt(picked['test'])}" if picked else "-")
        + f" | {_pm(r['learned']['test'])} | {_pm(r['scored']['test'])} | "
        f"{d['kind']} {d['what']}: {_fmt(d['test'])} | {ds['kind']} {ds['what']}: {_fmt(ds['test'])} | "
        f"{_fmt(r['ratios']['learned'])} | {_fmt(r['ratios']['scored'])} | {_fmt(r['ratios']['deployed'])}, "
        f"{_fmt(r['ratios']['deployed_scored'])} | {r['seconds']:.0f} s{_resumed(r)} |"
    )


def _resumed(r: Mapping[str, Any]) -> str:
    """The wall-time cell's note for a row finished from pieces earlier runs kept: its seconds are the last run's."""
    reused = r.get("pieces_reused")
    return f" (its last run; {reused} of its pieces from earlier runs)" if reused else ""


def _notes(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The notes under the table: the rules' jittered spread, the traces replayed on fewer cores, the traces whose
    request is the runtime."""
    lines: list[str] = []
    if any("jittered" in r for r in rows):
        lines += [
            "Rules' spread on test: the test window replayed with every submit moved by up to "
            f"±{rows[0]['jittered']['jitter_s']:.0f} s (seeds {', '.join(map(str, JITTER_SEEDS))}), mean ± "
            "standard deviation, for the rules the table names: "
            + "; ".join(
                f"{r['trace']}: " + ", ".join(f"{k} {_pm(r['jittered']['rules'][k])}" for k in sorted(_named_rules(r)))
                for r in rows
                if "jittered" in r
            )
            + ".",
            "",
        ]
    fewer = [r for r in rows if r["core_fraction"] < 1]
    if fewer:
        lines += [
            "Replayed on fewer cores (the same for every policy, for an offered load of about "
            f"{TARGET_LOAD}, or for {TARGET_LOAD} in the busier of the validation and test windows where one of them "
            f"would offer more than {SATURATED_LOAD:g}; the traces that never queue at their recorded size, and "
            f"those whose replayed jobs offer less than {LOW_LOAD}): "
            + "; ".join(
                f"{r['trace']} on {r['cores']} of {r['recorded_cores']} cores ({100 * r['core_fraction']:.1f} %)"
                for r in fewer
            )
            + ".",
            "",
        ]
    as_rule = still_pretraining(rows)
    if as_rule:
        lines += [
            f"**{LEARNED_POLICY} is still its pretraining rule** on " + ", ".join(as_rule) + ": the selected seed's "
            "pass ended before the agent's `pretrain_decisions` decisions, so that model ranks as its "
            "pretraining rule (EDF, the default) and its scores are that rule's, not a learned ranking's (in boost "
            "mode a decision is a job started from the ranking, and few jobs queue in these train windows; "
            "`python -m benchmarks.diag_sarsa_passes` prints each pass's decisions).",
            "",
        ]
    exact = request_is_runtime(rows)
    if exact:
        lines += [
            "**The request is the runtime** on " + ", ".join(exact) + " (its requested-time MAE is under "
            f"1 s or {100 * REQUEST_IS_RUNTIME_SHARE:.0f} % of user-last2's: the log records each request equal "
            "to the runtime, or none and the reader fills it in with the runtime), so there every rule on "
            "`requested` is an oracle rule that no live scheduler has, and the policies that read the request "
            "(every one) read the runtime.",
            "",
        ]
    return lines


def still_pretraining(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The traces whose selected sarsa-esn pass ended still following its pretraining rule (rows that record
    each pass's ``pass_pretraining``; older rows say nothing)."""
    out = []
    for r in rows:
        passes = r.get("learned", {}).get("pass_pretraining")
        if not passes:
            continue
        selected = r["learned"]["selected"]
        by_pass, epoch = passes.get(str(selected["seed"]), []), int(selected["epoch"])
        if len(by_pass) > epoch and by_pass[epoch]:
            out.append(str(r["trace"]))
    return out


def _named_rules(row: Mapping[str, Any]) -> set[str]:
    """The rules a row's table line names (test's best, the picks, the rules deployed instead of a model), those
    of them the row replayed jittered."""
    named = {row[k]["rule"] for k in ("best_rule_test", "validation_pick", "windows_pick") if k in row}
    named |= {row[key]["what"] for key, _, _ in DEPLOYED if row[key]["kind"] == "rule"}
    return named & set(row["jittered"]["rules"])


def _deployed_with(replays: Sequence[Mapping[str, Any]], higher: bool, suffix: str) -> str:
    """Each verdict's deployed choice with another replacement rule (``suffix``: :data:`WITH_WINDOWS` or
    :data:`WITH_PRIOR`): the geometric mean of its ratio to the best rule over :func:`replays_on_test`'s rows."""
    sarsa, scored = (
        _geomean([_ratio(higher, x[key + suffix]["mean"], x["best"]["mean"]) for x in replays if key + suffix in x])
        for key, _, _ in DEPLOYED
    )
    return f"deployed by sarsa-esn's verdict {_fmt(sarsa)}, by the scored verdict {_fmt(scored)}"


def _like_for_like(rows: Sequence[Mapping[str, Any]], objective: Objective) -> list[str]:
    """Goal 1's table: the deployed choices, validation's rule, the rule the other traces pick and the best rule
    over the same replays of the test window."""
    higher = objective.higher_is_better
    picks = other_traces_picks(rows, objective)
    replays = [x for x in (replays_on_test(r, higher, picks.get(r["trace"])) for r in rows) if x is not None]
    if not rows or len(replays) < len(rows):
        return []
    n = 1 + len(rows[0]["jittered"]["jitter_seeds"])
    lines = [
        f"## Goal 1 like for like: every choice over the same {n} replays of the test window",
        "",
        f"The test window as recorded and with every submit moved by up to ±{rows[0]['jittered']['jitter_s']:.0f} s "
        f"(seeds {', '.join(map(str, rows[0]['jittered']['jitter_seeds']))}); a deployed model is the seed its "
        "verdict selected, replayed like the rules. Mean ± standard deviation over the replays, (ratio to the "
        "best rule's mean). The best rule here is the best mean over these replays, which need not be the "
        "recorded replay's best (the table above). The rule the other traces pick: the best geometric mean of "
        "its ratio to each window's best rule over the validation windows of every other trace of this table, "
        "never this trace's own (leave one trace out; `rlsched train --rule-prior` deploys it so). The rule the "
        "windows pick: the table's column of that name (`rlsched train --rule-windows 3` deploys it so).",
        "",
        "| trace | best rule | deployed (sarsa-esn's verdict) | deployed (scored's verdict) | rule validation picks "
        "| rule the windows pick | rule the other traces pick |",
        "|---|---|---|---|---|---|---|",
    ]
    ratios: dict[str, list[float]] = {
        "deployed": [],
        "deployed_scored": [],
        "validation_pick": [],
        WINDOWS: [],
        OTHER_TRACES: [],
    }
    for r, x in zip(rows, replays, strict=True):
        best = x["best"]["mean"]
        cells = [f"{x['best']['what']}: {_pm(x['best'])}"]
        for key, got in ratios.items():
            if key not in x:
                cells.append("-")
                continue
            got.append(_ratio(higher, x[key]["mean"], best))
            cells.append(f"{x[key]['what']}: {_pm(x[key])} ({_fmt(got[-1])})")
        lines.append(f"| {r['trace']} | " + " | ".join(cells) + " |")
    others = ""
    if ratios[WINDOWS]:
        others += (
            f", the windows' rule {_fmt(_geomean(ratios[WINDOWS]))} (with `--rule-windows 3`, that rule instead of a "
            f"losing model: {_deployed_with(replays, higher, WITH_WINDOWS)})"
        )
    if ratios[OTHER_TRACES]:
        others += (
            f", the rule the other traces pick {_fmt(_geomean(ratios[OTHER_TRACES]))}; with `--rule-prior` (that rule "
            f"instead of a losing model) {_deployed_with(replays, higher, WITH_PRIOR)}"
        )
    label, ratio, misses, fewest = single_rule_misses(rows, higher)
    lines += [
        "",
        "Geometric means of the ratio to the best rule's mean: "
        f"deployed (sarsa-esn's verdict) {_fmt(_geomean(ratios['deployed']))}, deployed (the scored verdict) "
        f"{_fmt(_geomean(ratios['deployed_scored']))}, validation's rule {_fmt(_geomean(ratios['validation_pick']))}"
        f"{others}.",
        "",
        f"A yardstick: the single rule best on these test windows in hindsight, {label}, run on every trace, has a "
        f"geometric-mean ratio of {_fmt(ratio)} and is worse than the best rule beyond the spread on {misses} of "
        f"{len(rows)} traces"
        + (
            f"; no single rule misses on fewer than {fewest}. A choice made before the test window that misses no "
            "more often does as well as any one rule could: what is left to win is per trace."
            if fewest
            else ": one rule would reach goal 1 on every trace here."
        ),
        "",
    ]
    return lines


def rule_windows_of(row: Mapping[str, Any]) -> list[tuple[str, dict[str, float]]]:
    """A row's windows in time order (the train window's parts, validation, test), each with every rule's score."""
    rules = row["rules"]
    parts = sorted({part for v in rules.values() for part in (v.get("train") or {})}, key=_part_order)

    def scores(window: str) -> dict[str, float]:
        # A rule a window could not replay has no score there (rank_carryover counts the rules scored on both).
        found = {label: (v.get("train") or {}).get(window, v.get(window)) for label, v in rules.items()}
        return {label: float(s) for label, s in found.items() if isinstance(s, (int, float))}

    return [(window, scores(window)) for window in (*parts, "validation", "test")]


def _part_order(part: str) -> int:
    """``train 2/3`` → 2 (the order :func:`rlsched.workflow.train.rule_windows` names them in)."""
    return int(part.split()[-1].split("/")[0])


def carryover_section(rows: Sequence[Mapping[str, Any]], objective: Objective) -> list[str]:
    """How far each window's best rule carried to the next (:func:`rlsched.workflow.verdict.rank_carryover`): why
    a choice made before the test window misses goal 1."""
    carried = {r["trace"]: rank_carryover(objective, rule_windows_of(r)) for r in rows}
    pairs = [f"{c.earlier} → {c.later}" for c in next((v for v in carried.values() if v), [])]
    if not pairs:
        return []
    lines = [
        "## How far one window's best rule carries to the next",
        "",
        "Every rule's score on each window in time order (the train window's halves, validation, test; recorded "
        "replays): each cell names the best rule of the earlier window and its rank among the rules on the later "
        "one (1: the best there too; equal scores share a rank; of rules tied for the best, the first by name), "
        "with Spearman's rank correlation of all the "
        "rules' scores on the two windows. `rlsched train --rule-windows 3` prints the same for a site's own "
        "windows (`rlsched.workflow.verdict.rank_carryover`).",
        "",
        "| trace | " + " | ".join(pairs) + " |",
        "|---|" + "---|" * len(pairs),
    ]
    ranks: dict[str, list[int]] = {pair: [] for pair in pairs}
    for trace, items in carried.items():
        by_pair = {f"{c.earlier} → {c.later}": c for c in items}
        cells = []
        for pair in pairs:
            c = by_pair.get(pair)
            if c is None:
                cells.append("-")
                continue
            if c.rank is None:
                cells.append(f"every rule alike on {c.earlier}")
                continue
            if c.correlation is not None:  # a later window that scores every rule alike says nothing either
                ranks[pair].append(c.rank)
            rho = "every rule alike on the later" if c.correlation is None else f"ρ {c.correlation:.2f}"
            tied = f" (and {c.tied} tied)" if c.tied else ""
            cells.append(f"{c.rule}{tied}: {c.rank} of {c.rules} ({rho})")
        lines.append(f"| {trace} | " + " | ".join(cells) + " |")
    counted = [(pair, v) for pair, v in ranks.items() if v]
    if counted:
        lines += [
            "",
            "Median rank of the earlier window's best rule on the later one, over the traces whose rules differ: "
            + ", ".join(
                f"{pair} {float(np.median(v)):.0f} (the best again on {sum(k == 1 for k in v)} of {len(v)})"
                for pair, v in counted
            )
            + ". Where a rule best on one window is seldom near the top of the next — between the windows a site "
            "can see as between validation and test — a choice made before the test window, the verdict's "
            "included, rests on margins that do not carry over (see the yardstick above).",
        ]
    return [*lines, ""]


def _sections(data: Mapping[str, Any], objective: Objective) -> list[str]:
    """The report after the table: goals, windows, verdicts, predictors, then every rule per trace."""
    rows = data["traces"]
    lines: list[str] = []
    lines += ["## Goals of the issue", ""] + [f"- {g}" for g in goals(data)] + [""]
    lines += _like_for_like(rows, objective)
    lines += carryover_section(rows, objective)
    lines += [
        "## Windows",
        "",
        "| trace | train (learns) | validation (selects, verdict) | test (reported) |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| {r['trace']} | {r['windows']['train']} | {r['windows']['validation']} | {r['windows']['test']} |"
        for r in rows
    ]
    lines += ["", "## The verdicts (validation window)", ""]
    lines += [
        f"- {r['trace']}: sarsa-esn: {r['learned']['verdict']['line']}; scored: {r['scored']['verdict']['line']}"
        for r in rows
    ]
    lines += [
        "",
        "## Runtime predictors (the table's jobs as recorded)",
        "",
        "Each cell: MAE in s (share under-predicted); order agreement — the share of pairs of jobs submitted "
        "within an hour of each other, among the next 20, whose runtimes differ by over 10 %, that the prediction "
        "orders as the runtimes are ordered (ties half); mean |log(prediction / runtime)|; under 1 min: of the jobs "
        "that ran under a minute, the share predicted so (recall), and of those predicted so, the share that ran so "
        "(precision). The MAE is decided by the long jobs; the order of the jobs waiting together is what a rule on "
        "predictions uses, and the jobs that end within a minute are most of what knowing the runtimes would gain "
        "(docs/rules.md; `rlsched.sim.prediction_errors`).",
        "",
        "| trace | requested | user-last2 | learned |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| {r['trace']} | "
        + " | ".join(_prediction_cell(r["prediction"].get(m)) for m in ("requested", "user-last2", "learned"))
        + " |"
        for r in rows
    ]
    return lines + _every_rule(rows, objective)


def _prediction_cell(p: Mapping[str, Any] | None) -> str:
    """One model's cell of the predictors' table (a row recorded before the order measures: MAE only; a measure
    with nothing to measure: a dash)."""
    if p is None:
        return "-"
    cell = f"{_fmt(p['mae_s'])} ({100 * p['under_share']:.0f} %)"
    if "order_agreement" in p:
        log_error = "-" if p["mean_log_error"] is None else f"{p['mean_log_error']:.2f}"
        cell += f"; order {_fmt_share(p['order_agreement'])}; log error {log_error}"
    if "short_recall" in p:
        cell += f"; under 1 min {_fmt_share(p['short_recall'])} / {_fmt_share(p['short_precision'])}"
    return cell


def _fmt_share(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f} %"


def _every_rule(rows: Sequence[Mapping[str, Any]], objective: Objective) -> list[str]:
    """Per trace: every rule's validation and test score, the learned rows per seed, the rules left out."""
    lines: list[str] = []
    lines += ["", "## Every rule (validation, test)", ""]
    for r in rows:
        lines += [f"### {r['trace']}", "", "| rule | runtime used | validation | test |", "|---|---|---|---|"]
        sign = -1.0 if objective.higher_is_better else 1.0
        for label, v in sorted(r["rules"].items(), key=lambda kv: (sign * kv[1]["test"], kv[0])):
            lines.append(f"| {label} | {v['runtime']} | {_fmt(v['validation'])} | {_fmt(v['test'])} |")
        lines += [
            "",
            f"sarsa-esn per seed (test): {', '.join(_fmt(v) for v in r['learned']['test']['seeds'])}; "
            f"validation by epoch: {r['learned']['epoch_validation']}; training "
            f"{r['learned']['train_seconds']} s per seed.",
            f"scored per seed (test): {', '.join(_fmt(x['test']) for x in r['scored']['searches'])}; selected "
            f"`{r['scored']['selected']['spec']}`.",
            "",
        ]
        if r["rules_left_out"]:
            lines += ["Left out: " + "; ".join(r["rules_left_out"]), ""]
    return lines


def write_figure(data: Mapping[str, Any], path: Path) -> None:
    """A bar chart of each row's ratio to the best rule on test."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = data["traces"]
    names = [r["trace"].split("-19")[0].split("-20")[0] for r in rows]
    keys = ("learned", "scored", "deployed", "deployed_scored", "validation_pick")
    x = np.arange(len(rows))
    fig, ax = plt.subplots(figsize=(max(4.0, 1.4 * len(rows) + 2), 3.2))
    for k, key in enumerate(keys):
        ax.bar(x + (k - 2) * 0.16, [r["ratios"][key] for r in rows], 0.16, label=key.replace("_", " "))
    ax.axhline(1.0, color="black", lw=0.8)
    ax.axhline(WIN_RATIO, color="grey", lw=0.8, ls="--")
    ax.set_xticks(x, names)
    ax.set_ylabel("test score / best rule")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100, metadata={"Software": None})
    plt.close(fig)


def write_outputs(data: Mapping[str, Any], out: Path, *, results: bool = True) -> list[Path]:
    """``results.json`` (with ``results``), ``report.md`` and ``ratios.png`` in ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    if results:
        (out / "results.json").write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
        written.append(out / "results.json")
    (out / "report.md").write_text(render_report(data))
    write_figure(data, out / "ratios.png")
    return [*written, out / "report.md", out / "ratios.png"]


def read_results(out: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((out / "results.json").read_text())
    return data
