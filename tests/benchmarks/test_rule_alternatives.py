"""The orders tried beside the learners: the weekly rule portfolio (benchmarks/diag_portfolio.py) and the expected
Smith ratio on the user's runtime distribution (benchmarks/diag_expected_smith.py)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest

import benchmarks.diag_portfolio as portfolio
from benchmarks.diag_expected_smith import ExpectedSmithPriority
from benchmarks.diag_portfolio import PortfolioPriority, lookback_chooser
from rlsched.sim.engine import DEFAULT_OVERRUN, Simulator
from rlsched.sim.policies import simulate_policy
from rlsched.sim.workload import Workload, make_workload


def _blocked_pair() -> Workload:
    """One core: a 100 s job from t=0, then a 50 s and a 10 s job queued behind it (no room to backfill)."""
    return make_workload(submit=[0, 1, 2], run=[100, 50, 10], procs=[1, 1, 1], max_procs=1)


def _starts(workload: Workload, choose: Any, period_s: float) -> list[float]:
    dynamic = PortfolioPriority(workload, ("fcfs", "sjf"), period_s, choose)
    schedule = Simulator(workload, 1, dynamic=dynamic, backfill=True, overrun=DEFAULT_OVERRUN).run()
    return schedule.start.tolist()


def test_the_portfolio_orders_the_queue_by_the_rule_chosen_last() -> None:
    w = _blocked_pair()
    assert _starts(w, lambda now: "fcfs", 50.0) == [0.0, 100.0, 150.0]
    # Switched to SJF at t=50, while both wait: the whole queue is re-ordered, the 10 s job goes first.
    assert _starts(w, lambda now: "fcfs" if now < 50 else "sjf", 50.0) == [0.0, 110.0, 100.0]
    # A choice that comes after the queue has drained changes nothing.
    assert _starts(w, lambda now: "fcfs" if now < 200 else "sjf", 200.0) == [0.0, 100.0, 150.0]
    # No choice (too few recent jobs) keeps the rule in force: the first of the portfolio.
    assert _starts(w, lambda now: None, 50.0) == [0.0, 100.0, 150.0]


def test_the_lookback_sees_a_runtime_only_where_the_job_had_ended(monkeypatch: pytest.MonkeyPatch) -> None:
    n = 40
    submit = np.arange(n) * 100.0
    run = np.full(n, 50.0)
    run[[30, 35]] = 5000.0  # still running at t=3950
    whole = replace(
        make_workload(submit=submit, run=run, procs=np.ones(n), req_time=np.full(n, 9000.0), max_procs=4),
        recorded_wait=np.zeros(n),
    )
    seen: list[Workload] = []

    def fake_score(workload: Workload, rule: str, cores: int | None) -> float:
        seen.append(workload)
        return {"fcfs": 2.0, "sjf": 1.0}[rule]

    monkeypatch.setattr(portfolio, "rule_score", fake_score)
    choose = lookback_chooser(whole, None, ("fcfs", "sjf"), lookback_s=2500.0)
    assert choose(3950.0) == "sjf"
    recent = seen[0]
    # The jobs submitted in [1450, 3950): rows 15 … 39.
    np.testing.assert_array_equal(recent.submit, submit[15:40])
    expected = np.full(25, 50.0)
    expected[[15, 20]] = 9000.0  # rows 30 and 35 had not ended: their request (row 39 ended at 3950 itself)
    np.testing.assert_array_equal(recent.run, expected)
    # The recent jobs' predictors start from the jobs before them, as a window's do.
    assert recent.past is not None and len(recent.past) == 15
    assert choose(500.0) is None  # 5 jobs in the look-back: too few to choose


def _history_then_window() -> Workload:
    """User 0 ran 5 s, 5 s and 2,000 s; user 1 500 s twice; then, one core busy for 100 s, a job of each waits."""
    whole = make_workload(
        submit=[0, 1, 2, 3, 4, 3000, 3001, 3002],
        run=[5, 5, 2000, 500, 500, 100, 10, 500],
        procs=[1] * 8,
        req_time=[2000, 2000, 2000, 2000, 2000, 100, 2000, 2000],
        max_procs=1,
    )
    whole = replace(whole, user=np.array([0, 0, 0, 1, 1, 2, 0, 1], dtype=np.int64), recorded_wait=np.zeros(8))
    return whole.window(5, 8)


def test_the_expected_smith_ratio_puts_a_maybe_short_job_first() -> None:
    window = _history_then_window()
    smith = ExpectedSmithPriority(window, history=3, area=0.0, with_point=False)
    starts = Simulator(window, 1, dynamic=smith, backfill=True, overrun=DEFAULT_OVERRUN).run().start
    # User 0's job is short one time in three: E[p]/E[w] ≈ 670/0.067 against user 1's 500/0.002.
    assert starts.tolist() == [3000.0, 3100.0, 3110.0]
    # A point prediction (the mean of the last two, 1,002 s against 500 s) orders them the other way.
    on_point = simulate_policy(window, "sjf:runtime_model=user-last2", 1, mode="gate").schedule.start
    assert on_point.tolist() == [3000.0, 3600.0, 3100.0]
