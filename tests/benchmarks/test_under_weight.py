"""benchmarks/diag_under_weight.py: the replays it patches build the learned predictor with the weight asked for,
warmed afresh, and the patch leaves nothing behind."""

from __future__ import annotations

import math

import numpy as np

import rlsched.sim.rules as sim_rules
from benchmarks.diag_under_weight import RULES, against_last2, predictor_with
from benchmarks.learning_table import CommittedTable
from rlsched.core.prediction import UNDER_PREDICTION_WEIGHT, OnlineRegression


def test_the_patch_builds_the_learned_predictor_with_the_weight_and_restores_the_module() -> None:
    cache = sim_rules._WARMED
    with predictor_with(1.5):
        built = sim_rules.make_predictor("learned")
        assert isinstance(built, OnlineRegression) and built.under_weight == 1.5
        assert sim_rules.make_predictor("user-last2").name == "user-last2"
        assert sim_rules._WARMED is not cache and not sim_rules._WARMED
    assert sim_rules._WARMED is cache
    restored = sim_rules.make_predictor("learned")
    assert isinstance(restored, OnlineRegression) and restored.under_weight == UNDER_PREDICTION_WEIGHT


def test_pairs_are_counted_beyond_the_larger_spread() -> None:
    table = CommittedTable(settings={"objective": {"name": "bsld", "class_weights": {}}}, rows=[])
    theirs = {f"{r}:runtime_model=user-last2": [10.0, 10.0, 10.0] for r in RULES}
    row = {
        "rules": {label: {"test": s[0]} for label, s in theirs.items()},
        "jittered": {"rules": {label: {"seeds": s[1:]} for label, s in theirs.items()}},
    }
    mine = {r: [10.0, 10.0, 10.0] for r in RULES}
    mine["sjf"] = [5.0, 5.0, 5.0]  # better, no spread
    mine["saf"] = [20.0, 20.0, 20.0]  # worse
    mine["f1"] = [5.0, 15.0, 10.0]  # a mean of 10: a tie
    mine["f2"] = [8.0, 10.0, 12.0]  # a mean of 10 too
    # 3 better with a population spread of 2.83 (the table's): beyond it, though a sample spread (3.46) is not.
    mine["f3"] = [5.0, 5.0, 11.0]
    better, worse, geo = against_last2(table, row, mine)
    assert (better, worse) == (2, 1)
    assert math.isclose(geo, math.exp(np.mean(np.log([0.5, 2.0, 1.0, 1.0, 0.7, 1.0]))))
