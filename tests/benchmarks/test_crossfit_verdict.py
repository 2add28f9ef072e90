"""benchmarks/diag_crossfit_verdict.py: a rule chosen on one half of the validation window, judged on the other."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from benchmarks.diag_crossfit_verdict import crossfit_outcome, half_scores
from benchmarks.learning_table import CommittedTable
from rlsched.sim.workload import make_workload


def _table(higher: bool = False) -> CommittedTable:
    return CommittedTable({"objective": {"name": "W" if higher else "bsld"}}, [])


def test_each_half_is_scored_on_its_own_jobs() -> None:
    window = make_workload(submit=[0, 1, 2, 3, 4], run=[100, 100, 100, 100, 100], procs=[1] * 5, max_procs=1)
    # Bounded slowdown (τ = 10 s): waits 0 and 100 in the first half (jobs 0, 1); 200, 300, 400 in the second.
    schedule = SimpleNamespace(run=np.full(5, 100.0), wait=np.array([0.0, 100.0, 200.0, 300.0, 400.0]))
    assert half_scores(_table(), window, schedule) == pytest.approx((1.5, 4.0))


def test_the_rule_each_half_picks_is_judged_on_the_other() -> None:
    halves = {"a": (1.0, 4.0), "b": (2.0, 2.0)}  # a wins the first half and loses the second
    # Fold 1 picks a, judged on half 2 (4.0) against the model's 3.0: 0.75; fold 2 picks b, on half 1 (2.0)
    # against 2.0: 1.  Geometric mean √0.75 ≈ 0.866: beats, outside a band of 0.1, ties inside one of 0.2.
    outcome, ratio, picks = crossfit_outcome(_table(), halves, (2.0, 3.0), band=0.1)
    assert (outcome, picks) == ("beats", ["a", "b"]) and ratio == pytest.approx(0.75**0.5)
    assert crossfit_outcome(_table(), halves, (2.0, 3.0), band=0.2)[0] == "ties"
    assert crossfit_outcome(_table(), halves, (4.0, 6.0), band=0.1)[0] == "loses"
    # Higher is better: fold 1 picks b (2 > 1), judged on half 2: 2 / 3; fold 2 picks a (4), on half 1: 1 / 2.
    outcome, ratio, picks = crossfit_outcome(_table(higher=True), halves, (2.0, 3.0), band=0.1)
    assert (outcome, picks) == ("beats", ["b", "a"]) and ratio == pytest.approx((2 / 3 * 0.5) ** 0.5)
