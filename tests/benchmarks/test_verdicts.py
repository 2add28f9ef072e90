"""benchmarks/diag_verdicts.py: a verdict against the test window's replays, and what each way of deploying by it
would have deployed."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.diag_verdicts import (
    Compared,
    compare_row,
    deploy_rule_lines,
    optimism,
    optimism_lines,
    outcome_lines,
    train_halves_pick,
)
from benchmarks.learning_table import CommittedTable


def _table(higher: bool = False) -> CommittedTable:
    return CommittedTable({"objective": {"name": "W" if higher else "bsld"}}, [])


def _row(model_tests: dict[str, list[float]], outcomes: dict[str, str]) -> dict[str, Any]:
    """Rules a (test 10, jittered 10 and 12: mean 10.67) and b (20, 20, 20); each learner's selected model scored
    ``model_tests`` (as recorded, then jittered), its verdict ``outcomes[model]`` against rule b."""
    learner = {"learned": "sarsa-esn", "scored": "scored"}
    return {
        "trace": "T",
        "rules": {"a": {"test": 10.0}, "b": {"test": 20.0}},
        "jittered": {
            "rules": {"a": {"seeds": [10.0, 12.0]}, "b": {"seeds": [20.0, 20.0]}},
            "models": {learner[m]: {"seeds": tests[1:]} for m, tests in model_tests.items()},
        },
        **{
            m: {"selected": {"test": tests[0]}, "verdict": {"outcome": outcomes[m], "rule": "b", "deploy_rule": ""}}
            for m, tests in model_tests.items()
        },
    }


def test_each_verdict_is_judged_against_its_rule_and_the_best_over_the_same_replays() -> None:
    row = _row({"learned": [30.0, 30.0, 30.0], "scored": [9.0, 11.0, 10.0]}, {"learned": "ties", "scored": "loses"})
    learned, scored = compare_row("t", _table(), row)
    assert (learned.learner, learned.outcome, learned.rule, learned.on_test) == ("sarsa-esn", "ties", "b", "worse")
    assert learned.ratio == pytest.approx(1.5)
    assert learned.model_misses and learned.rule_misses  # both worse than a beyond the spread
    # The scored model lost on validation, yet beats b on test and ties with the best rule, a.
    assert scored.on_test == "better" and scored.ratio == pytest.approx(0.5)
    assert not scored.model_misses and scored.rule_misses
    assert scored.model_over_best == pytest.approx(10.0 / (32.0 / 3))


def test_higher_is_better_turns_the_ratios() -> None:
    row = _row({"learned": [40.0, 40.0, 40.0], "scored": [20.0, 20.0, 20.0]}, {"learned": "beats", "scored": "ties"})
    learned, scored = compare_row("t", _table(higher=True), row)
    assert learned.on_test == "better" and learned.ratio == pytest.approx(0.5)  # 40 is better than b's 20
    assert not learned.model_misses and scored.on_test == "tie" and scored.ratio == pytest.approx(1.0)


def test_the_train_halves_pick_is_judged_on_validation_against_the_model() -> None:
    row = _row({"learned": [30.0, 30.0, 30.0], "scored": [9.0, 11.0, 10.0]}, {"learned": "ties", "scored": "loses"})
    # a is best on each half (1.0, 1.0); b 2× and 1.5× behind: a's geometric mean 1 wins.  On validation a
    # scores 50: the learned model (40 ± 5) beats it, the scored one (52 ± 1) loses by more than its spread.
    row["rules"]["a"].update(train={"train 1/2": 10.0, "train 2/2": 20.0}, validation=50.0)
    row["rules"]["b"].update(train={"train 1/2": 20.0, "train 2/2": 30.0}, validation=30.0)
    row["learned"]["verdict"].update(model_score=40.0, spread=5.0)
    row["scored"]["verdict"].update(model_score=52.0, spread=1.0)
    table = _table()
    assert train_halves_pick(table, row) == "a"
    learned, scored = compare_row("t", table, row)
    assert (learned.outcome_vs_train_pick, scored.outcome_vs_train_pick) == ("beats", "loses")
    del row["rules"]["b"]["train"]["train 2/2"]  # a rule without every part is not a candidate
    assert train_halves_pick(table, row) == "a"
    for rule in row["rules"].values():
        rule.pop("train")
    learned, _scored = compare_row("t", table, row)
    assert train_halves_pick(table, row) is None and learned.outcome_vs_train_pick == "ties"  # the verdict's own


def test_a_row_recorded_before_the_models_were_replayed_gives_nothing() -> None:
    row = _row({"learned": [1.0], "scored": [1.0]}, {"learned": "ties", "scored": "ties"})
    del row["jittered"]["models"]
    assert list(compare_row("t", _table(), row)) == []


def _compared(outcome: str, model_misses: bool, model_over_best: float, vs_train_pick: str = "") -> Compared:
    return Compared(
        "t", "T", "scored", outcome, "b", 1.0, "tie", model_over_best, 2.0, model_misses, True, vs_train_pick
    )


def test_the_ways_of_deploying_count_what_each_deploys() -> None:
    rows = [
        _compared("ties", False, 1.0, "loses"),
        _compared("loses", False, 1.0, "beats"),
        _compared("beats", True, 4.0, "beats"),
    ]
    lines = deploy_rule_lines(rows)
    # today: the model on the tie and the beat (misses once), the rule on the loss (misses): 2 of 3.
    assert lines[0].endswith("missed on 2 of 3 rows; deployed / best rule geometric mean 2")
    # a tie deploys the rule: misses on all three, (2 · 2 · 4)^(1/3).
    assert lines[1].endswith(f"missed on 3 of 3 rows; deployed / best rule geometric mean {16 ** (1 / 3):.3g}")
    # against the train halves' rule: the rule on the first row, the model on the other two: 2 of 3, (2 · 1 · 4)^(1/3).
    assert "halves pick: goal 1 missed on 2 of 3 rows; deployed / best rule geometric mean 2" in lines[2]
    assert "always the model: goal 1 missed on 1 of 3" in lines[3]
    assert "always the verdict's rule: goal 1 missed on 3 of 3" in lines[4]
    assert outcome_lines(rows)[0].startswith("scored beats (1): on test the model better 0, tie 1, worse 0")


def test_optimism_is_each_choice_over_the_median_rule_on_both_windows() -> None:
    row = _row({"learned": [30.0], "scored": [9.0]}, {"learned": "ties", "scored": "loses"})
    row["rules"] = {
        "a": {"validation": 5.0, "test": 20.0},  # validation's pick, then the worst on test
        "b": {"validation": 10.0, "test": 10.0},
        "c": {"validation": 20.0, "test": 5.0},
    }
    row["learned"]["verdict"]["model_score"], row["scored"]["verdict"]["model_score"] = 20.0, 4.0
    seen = optimism(_table(), row)
    assert seen == {
        "the rule validation picks": (0.5, 2.0),
        "sarsa-esn": (2.0, 3.0),
        "scored": (0.4, 0.9),
    }
    higher = optimism(_table(higher=True), row)
    # Higher is better: the pick is now c (20 on validation, median 10: 0.5), and its test 5 is twice worse than 10.
    assert higher is not None and higher["the rule validation picks"] == (0.5, 2.0)
    row["rules"]["b"]["test"] = row["rules"]["c"]["test"] = 20.0
    assert optimism(_table(), row) is None  # every rule scores the same on test: nothing to pick
    table = CommittedTable({"objective": {"name": "bsld"}}, [row])
    assert optimism_lines([("t", table)]) == []
