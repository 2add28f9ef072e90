"""The daily caps (sim/hybrid_cloud/daily.py): V fixed per day, clones exact, nothing from the future."""

from __future__ import annotations

import numpy as np
import pytest

from rlsched.core.leasing import (
    DailyCapLearner,
    DailyLearnerParams,
    StateAwareParams,
    cap_fraction_index,
    daily_cap_set,
)
from rlsched.sim.hybrid_cloud.daily import (
    _counterfactual,
    _held_counterfactual,
    daily_learned,
    daily_prior,
    state_aware_daily,
)
from rlsched.sim.hybrid_cloud.hybrid import HybridModel, day_edges
from rlsched.sim.hybrid_cloud.runs import _period_end, grouped_runs
from tests.conftest import shared_trace

DAY = 86_400.0


@pytest.fixture(scope="module")
def kth_cut() -> HybridModel:
    from rlsched.sim.traces.swf import read_swf

    w = read_swf(shared_trace("kth")).cut(0, 12 * DAY)
    return HybridModel(w, 100)


@pytest.mark.parametrize("continuation", ["held", "followed"])
def test_the_daily_learned_policy_is_a_daily_cap_schedule(kth_cut: HybridModel, continuation: str) -> None:
    """Replaying its per-day caps as a fixed schedule gives the same run: V only changes at day starts."""
    edges = day_edges(kth_cut)
    traj = daily_learned(kth_cut, edges, DailyLearnerParams(horizon_days=2, continuation=continuation))
    assert len(set(traj.caps.tolist())) > 1, "the test needs a run whose cap changes"
    assert set(traj.caps.tolist()) <= set(daily_cap_set(100))
    replay = grouped_runs(kth_cut, edges, traj.caps[None, :])
    np.testing.assert_array_equal(replay.twt[0], traj.twt)
    np.testing.assert_array_equal(replay.cost[0], traj.cost)


def test_the_rule_held_for_a_day_is_a_daily_cap_schedule(kth_cut: HybridModel) -> None:
    edges = day_edges(kth_cut)
    traj = state_aware_daily(kth_cut, edges, StateAwareParams(threshold=1.0))
    replay = grouped_runs(kth_cut, edges, traj.caps[None, :])
    np.testing.assert_array_equal(replay.twt[0], traj.twt)
    assert int(traj.caps.max()) > 0
    bounded = state_aware_daily(kth_cut, edges, StateAwareParams(threshold=1.0), max_cap=3)
    assert int(bounded.caps.max()) <= 3


def test_decisions_use_nothing_after_the_days_start(kth_cut: HybridModel) -> None:
    """Cutting the jobs from day 5 on leaves every earlier decision unchanged."""
    edges = day_edges(kth_cut)
    params = DailyLearnerParams(horizon_days=1, prior_days=1.0)
    full = daily_learned(kth_cut, edges, params)
    # The cut keeps the times (cut from 0) and so the day edges; only the jobs from day 5 on are gone.
    cut = HybridModel(kth_cut.workload.cut(0.0, float(edges[5])), 100)
    cut_edges = day_edges(cut)
    np.testing.assert_array_equal(cut_edges, edges[: len(cut_edges)])
    short = daily_learned(cut, cut_edges, params)
    days = len(cut_edges) - 1
    assert days == 5 and len(set(full.caps[:days].tolist())) > 1
    np.testing.assert_array_equal(short.caps, full.caps[:days])


def test_a_prior_from_another_trace_sets_the_first_days(kth_cut: HybridModel) -> None:
    """Other traces' clones, normalised, decide the days a cold learner spends at V = 0."""
    from rlsched.sim.traces.swf import read_swf

    edges = day_edges(kth_cut)
    other = HybridModel(read_swf(shared_trace("kth")).cut(40 * DAY, 52 * DAY), 100)
    params = DailyLearnerParams(horizon_days=2, transfer_days=10.0)
    prior = daily_prior({"kth-later": (other, day_edges(other))}, params)
    assert prior.sources == ("kth-later",)
    assert float(prior.counts.sum()) == len(day_edges(other)) - 1  # one sample per day, the last ones flushed
    assert np.isfinite(prior.sums).all() and float(prior.sums[:, 0, 0].sum()) > 0
    cold = daily_learned(kth_cut, edges, params, prior=None)
    warm = daily_learned(kth_cut, edges, params, prior=prior)
    assert cold.caps[:2].tolist() == [0, 0]
    caps = daily_cap_set(100)
    first = DailyCapLearner(caps, 2, params, prior=prior, fraction_index=cap_fraction_index(caps, 100))
    assert warm.caps[0] == first.choose(0, 0.0) > 0
    # The prior changes the start, never the rules: still a daily schedule, still nothing from the future.
    replay = grouped_runs(kth_cut, edges, warm.caps[None, :])
    np.testing.assert_array_equal(replay.twt[0], warm.twt)
    cut = HybridModel(kth_cut.workload.cut(0.0, float(edges[5])), 100)
    short = daily_learned(cut, day_edges(cut), params, prior=prior)
    np.testing.assert_array_equal(short.caps, warm.caps[:5])


def test_held_clones_match_holding_each_cap_alone_when_groups_merge() -> None:
    """Caps held for 8 days from states reached with V = 14: clones whose states meet merge, and a merged
    group's caps are no longer in order — each must still match its own simulation exactly (an earlier
    version covered a lower cap with a higher one's certificate there)."""
    from rlsched.sim.traces.swf import read_swf

    model = HybridModel(read_swf(shared_trace("kth")).cut(0, 40 * DAY), 100)
    edges = day_edges(model)
    caps = daily_cap_set(100)
    state = model.initial_state()
    for day in range(30):
        if day % 5 == 0:
            waits, cloud = _held_counterfactual(model, state, edges, day, day + 7, caps)
            for i, cap in enumerate(caps):
                alone = state.copy()
                steps = [model.advance(alone, cap, _period_end(edges, d)) for d in range(day, day + 8)]
                assert (waits[i], cloud[i]) == (sum(s.twt for s in steps), sum(s.cost for s in steps)), (day, cap)
        model.advance(state, 14, _period_end(edges, day))


def _brute(model: HybridModel, start_day: int, last: int, first_cap: int, later: list[int]) -> tuple[float, float]:
    edges = day_edges(model)
    state = model.initial_state()
    caps = [0] * start_day
    # The actual run the clones branch from: cap 0 before ``start_day``.
    for d in range(start_day):
        model.advance(state, caps[d], _period_end(edges, d))
    wait = cost = 0.0
    for k, d in enumerate(range(start_day, last + 1)):
        step = model.advance(state, first_cap if k == 0 else later[k - 1], _period_end(edges, d))
        wait += step.twt
        cost += step.cost
    return wait, cost


def test_counterfactual_clones_match_simulating_each_cap_alone(kth_cut: HybridModel) -> None:
    edges = day_edges(kth_cut)
    caps = daily_cap_set(100)
    state = kth_cut.initial_state()
    for d in range(3):
        kth_cut.advance(state, 0, _period_end(edges, d))
    waits, cloud = _held_counterfactual(kth_cut, state, edges, 3, 6, caps)
    for i, cap in enumerate(caps):
        assert (waits[i], cloud[i]) == pytest.approx(_brute(kth_cut, 3, 6, cap, [cap] * 3), rel=1e-12), cap
    # "followed": the clones go on with the caps actually used; here the actual run holds 20 from day 4.
    followed = [20, 20, 20]
    starts = [state.copy()]
    actual_twt, actual_cost = [], []
    s = state.copy()
    for k, d in enumerate(range(3, 7)):
        step = kth_cut.advance(s, 0 if k == 0 else followed[k - 1], _period_end(edges, d))
        actual_twt.append(step.twt)
        actual_cost.append(step.cost)
        starts.append(s.copy())
    waits, cloud = _counterfactual(
        kth_cut, starts, edges, 3, 6, caps, followed, np.array(actual_twt), np.array(actual_cost)
    )
    for i, cap in enumerate(caps):
        assert (waits[i], cloud[i]) == pytest.approx(_brute(kth_cut, 3, 6, cap, followed), rel=1e-9), cap
