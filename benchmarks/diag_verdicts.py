"""Does a validation verdict carry to the test window, and what should a tie deploy?

``rlsched train`` deploys the model unless it *loses* to the best rule on validation; a tie (a difference within
the spread over seeds) deploys the model.  For every row of the committed ``rlsched learning`` tables named
(their ``results.json`` only: nothing is replayed), and each learner's verdict (sarsa-esn's, the scored
search's), this compares the selected model with the rule the verdict measured it against, on the test window,
like for like: both over the same replays (as recorded and with jittered submits), mean ± spread, as the
reports judge goal 1.  Per learner and verdict outcome it prints how many rows, how often the model was better,
tied or worse on test beyond the larger spread, and the geometric mean and worst of the model's test score over
the rule's (above 1: the model worse, whichever way the objective goes).

Then, per learner, each way of deploying by a verdict (:data:`DEPLOY_RULES`: a tie deploying the model, as
``train`` does, or the rule; the verdict measured against the rule the train window's halves pick instead of
validation's; always the model; always the rule): goal 1's count (the deployed choice worse than the test
window's best rule beyond the spread) and the geometric mean of its ratio to that rule.  Last, selection's
optimism (:func:`optimism`): how much of its lead over the median rule the rule validation picks, and each
selected model, keeps from validation to test.  It is evidence from the test windows, seen after the fact, not a
selection: docs/workflow.md ("What a tie deploys") quotes it.

Run: ``python -m benchmarks.diag_verdicts --table docs/results/learning --table docs/results/learning-12k …``
(default: the four tables docs/workflow.md cites).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.learning_table import CommittedTable, read_table
from rlsched.workflow.learning_report import DEPLOYED, _model_replays, _rule_replays, apart, rule_windows_of
from rlsched.workflow.learning_report import _geomean as geomean
from rlsched.workflow.verdict import RuleScores, outcome_of, rule_over_windows

TABLES = ("learning", "learning-w", "learning-12k", "learning-whole")
OUTCOMES = ("beats", "ties", "loses")


@dataclass(frozen=True)
class Compared:
    """One learner's verdict on one row, and what the test window's replays say of it."""

    table: str
    trace: str
    learner: str
    outcome: str
    rule: str
    #: The model's mean test score over the rule's, oriented so that above 1 is the model worse.
    ratio: float
    #: "better", "tie" or "worse": the model against the rule beyond the larger spread.
    on_test: str
    #: The model's and the verdict's rule's ratio to the test window's best rule, and whether each is worse than
    #: it beyond the larger spread (goal 1's miss).
    model_over_best: float
    rule_over_best: float
    model_misses: bool
    rule_misses: bool
    #: The verdict's outcome had the model been measured, on validation, against the rule the train window's
    #: halves pick instead (:func:`train_halves_pick`; a rule is as untried there as on validation); the
    #: verdict's own outcome where the row has no train-window scores.
    outcome_vs_train_pick: str = ""


def _worse(table: CommittedTable, a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """``a`` worse than ``b`` (means ± spreads) beyond the larger of their spreads."""
    return apart(a, b) and table.sign * (a["mean"] - b["mean"]) > 0


def train_halves_pick(table: CommittedTable, row: Mapping[str, Any]) -> str | None:
    """The rule ``--rule-windows`` would pick on the train window's parts alone, without validation
    (:func:`rlsched.workflow.verdict.rule_over_windows`); None without train-window scores."""
    parts = {
        window: RuleScores(scores=scores)
        for window, scores in rule_windows_of(row)
        if window.startswith("train") and scores
    }
    if not parts:
        return None
    return rule_over_windows(table.objective, parts)[0]


def compare_row(name: str, table: CommittedTable, row: Mapping[str, Any]) -> Iterator[Compared]:
    """Each learner's verdict on ``row`` against the test window (rows without jittered replays of the selected
    models, recorded before they were made, give nothing)."""
    if "models" not in row.get("jittered", {}):
        return
    rules = _rule_replays(row)
    best = rules[min(rules, key=lambda label: (table.sign * rules[label]["mean"], label))]
    train_pick = train_halves_pick(table, row)
    for _key, learner, model in DEPLOYED:
        verdict = row[model]["verdict"]
        against_train_pick = (
            outcome_of(
                table.objective,
                float(verdict["model_score"]),
                float(row["rules"][train_pick]["validation"]),
                float(verdict["spread"]),
            )
            if train_pick is not None
            else str(verdict["outcome"])
        )
        rule = str(verdict.get("deploy_rule") or verdict["rule"])
        mine, theirs = _model_replays(row, model), rules[rule]
        on_test = "worse" if _worse(table, mine, theirs) else "better" if _worse(table, theirs, mine) else "tie"
        yield Compared(
            table=name,
            trace=str(row["trace"]),
            learner=learner,
            outcome=str(verdict["outcome"]),
            rule=rule,
            ratio=table.over_best(mine["mean"], theirs["mean"]),
            on_test=on_test,
            model_over_best=table.over_best(mine["mean"], best["mean"]),
            rule_over_best=table.over_best(theirs["mean"], best["mean"]),
            model_misses=_worse(table, mine, best),
            rule_misses=_worse(table, theirs, best),
            outcome_vs_train_pick=against_train_pick,
        )


def outcome_lines(rows: Sequence[Compared]) -> list[str]:
    """Per learner and verdict outcome: the test window's word on it."""
    lines = []
    for learner in dict.fromkeys(c.learner for c in rows):
        for outcome in OUTCOMES:
            these = [c for c in rows if c.learner == learner and c.outcome == outcome]
            if not these:
                continue
            counts = {w: sum(c.on_test == w for c in these) for w in ("better", "tie", "worse")}
            worst = max(these, key=lambda c: c.ratio)
            lines.append(
                f"{learner} {outcome} ({len(these)}): on test the model better {counts['better']}, tie "
                f"{counts['tie']}, worse {counts['worse']}; model / rule geometric mean "
                f"{geomean([c.ratio for c in these]):.3g}, worst {worst.ratio:.3g} ({worst.table} {worst.trace})"
            )
    return lines


#: What a way of deploying by the verdict deploys: True the model, False the verdict's rule.
DEPLOY_RULES: dict[str, Callable[[Compared], bool]] = {
    "the model unless it loses (train today: a tie deploys the model)": lambda c: c.outcome != "loses",
    "the model only when it beats (a tie deploys the rule)": lambda c: c.outcome == "beats",
    "the model unless it loses to the rule the train window's halves pick": lambda c: (
        c.outcome_vs_train_pick != "loses"
    ),
    "always the model": lambda c: True,
    "always the verdict's rule": lambda c: False,
}


def deploy_rule_lines(rows: Sequence[Compared]) -> list[str]:
    """Goal 1 and the deployed choice's ratio to the test window's best rule, per learner, for each way of
    deploying by the verdict (:data:`DEPLOY_RULES`)."""
    lines = []
    for learner in dict.fromkeys(c.learner for c in rows):
        mine = [c for c in rows if c.learner == learner]
        for what, deploys_model in DEPLOY_RULES.items():
            chosen = [deploys_model(c) for c in mine]
            misses = sum(c.model_misses if m else c.rule_misses for c, m in zip(mine, chosen, strict=True))
            ratios = [c.model_over_best if m else c.rule_over_best for c, m in zip(mine, chosen, strict=True)]
            lines.append(
                f"{learner}, {what}: goal 1 missed on {misses} of {len(mine)} rows; deployed / best rule "
                f"geometric mean {geomean(ratios):.3g}"
            )
    return lines


def optimism(table: CommittedTable, row: Mapping[str, Any]) -> dict[str, tuple[float, float]] | None:
    """Selection's optimism on one row: the rule validation picks and each learner's selected model, each as its
    score over the median rule's on the validation window and on the test window (above 1: worse than the
    median, whichever way the objective goes).  A choice made on validation looks better there than it is:
    the drop from one to the other is what the verdict cannot see.  None where every rule scores the same on
    either window (nothing to pick)."""
    rules = row["rules"]
    validation = {label: float(v["validation"]) for label, v in rules.items() if v.get("validation") is not None}
    test = {label: float(v["test"]) for label, v in rules.items()}
    medians = statistics.median(validation.values()), statistics.median(test.values())
    if len(set(validation.values())) == 1 or len(set(test.values())) == 1:
        return None
    pick = min(validation, key=lambda label: (table.sign * validation[label], label))
    out = {"the rule validation picks": (validation[pick], test[pick])}
    for _key, learner, model in DEPLOYED:
        out[learner] = (float(row[model]["verdict"]["model_score"]), float(row[model]["selected"]["test"]))
    return {what: (table.over_best(v, medians[0]), table.over_best(t, medians[1])) for what, (v, t) in out.items()}


def optimism_lines(tables: Sequence[tuple[str, CommittedTable]]) -> list[str]:
    """:func:`optimism` per table and choice: geometric means over the rows where rules differ."""
    lines = []
    for name, table in tables:
        every = [x for x in (optimism(table, row) for row in table.rows) if x is not None]
        if not every:
            continue
        cells = [
            f"{what} {geomean([x[what][0] for x in every]):.3g} → {geomean([x[what][1] for x in every]):.3g}"
            for what in every[0]
        ]
        lines.append(f"{name} ({len(every)} rows), over the median rule, validation → test: " + "; ".join(cells))
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--table", type=Path, action="append", help="a committed table's folder (repeatable)")
    args = parser.parse_args()
    folders = args.table or [Path("docs/results") / name for name in TABLES]
    tables = [(folder.name, read_table(folder)) for folder in folders]
    rows = [c for name, table in tables for row in table.rows for c in compare_row(name, table, row)]
    for c in rows:
        print(
            f"{c.table:16} {c.trace[:22]:22} {c.learner:9} {c.outcome:5} vs {c.rule:34} test: model {c.on_test:6} "
            f"model/rule {c.ratio:6.3g}  over the best rule: model {c.model_over_best:6.3g}, "
            f"rule {c.rule_over_best:6.3g}"
        )
    print()
    print("\n".join(outcome_lines(rows)))
    print("\n".join(deploy_rule_lines(rows)))
    print("\n".join(optimism_lines(tables)))


if __name__ == "__main__":
    main()
