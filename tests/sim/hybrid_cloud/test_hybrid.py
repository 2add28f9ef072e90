"""The FH hybrid model (sim/hybrid_cloud/hybrid.py) on hand-worked workloads and real trace cuts."""

from __future__ import annotations

import numpy as np
import pytest

from rlsched.core.leasing import balance
from rlsched.sim.engine import Simulator
from rlsched.sim.hybrid_cloud.evaluate import state_for, sweep_caps
from rlsched.sim.hybrid_cloud.hybrid import UNBOUNDED, HybridModel, day_edges
from rlsched.sim.hybrid_cloud.runs import constant_sweep, grouped_runs, random_caps
from rlsched.sim.workload import make_workload
from tests.conftest import shared_trace


def hand_model() -> HybridModel:
    # M = 4. A (4 cores, 0..10) fills the machine; B (2 cores, 5 s) at t=1; C (3 cores, 4 s) at t=2.
    w = make_workload(submit=[0, 1, 2], run=[10, 5, 4], procs=[4, 2, 3], max_procs=4, name="hand")
    return HybridModel(w, 4)


def starts(model: HybridModel, cap: int) -> tuple[list[float], list[int], float, float]:
    twt, cost, _ = model.run_full(cap, record=True)
    assert model.record_start is not None and model.cloud_rows is not None
    return list(model.record_start), sorted(model.cloud_rows), twt, cost


def test_local_only_is_easy_by_hand() -> None:
    # V = 0: B starts at 10 when A ends; C (3 cores) waits for B's reservation end at 15.
    s, cloud, twt, cost = starts(hand_model(), 0)
    assert s == [0.0, 10.0, 15.0] and cloud == []
    assert twt == 9 + 13 and cost == 0


def test_job_transferred_only_when_it_fits_under_the_cap() -> None:
    # V = 2: B (2) fits at t=1; C (3) never fits under 2: it runs locally at 10 (A's end; B is in the cloud).
    s, cloud, twt, cost = starts(hand_model(), 2)
    assert s == [0.0, 1.0, 10.0] and cloud == [1]
    assert twt == 8 and cost == 2 * 5
    # V = 3: C is refused at t=2 (2 in use + 3 > 3) and sent at t=6 when B's cloud nodes free.
    s, cloud, twt, cost = starts(hand_model(), 3)
    assert s == [0.0, 1.0, 6.0] and cloud == [1, 2]
    assert twt == 4 and cost == 2 * 5 + 3 * 4
    # V = 5 (and anything larger): both go at once.
    s, cloud, twt, cost = starts(hand_model(), 5)
    assert s == [0.0, 1.0, 2.0] and twt == 0 and cost == 22


def test_balance_by_hand() -> None:
    model = hand_model()
    twt_ref, _, _ = model.run_full(0)
    _, c_ref, _ = model.run_full(UNBOUNDED)
    twt, cost, _ = model.run_full(2)
    # (100 − 100·8/22) − 100·10/22
    assert float(balance(twt, cost, twt_ref, c_ref)) == pytest.approx(100 - 100 * 8 / 22 - 100 * 10 / 22)


def test_certificate_by_hand() -> None:
    model = hand_model()
    result = model.advance(model.initial_state(), 2)
    # Sending B needs V >= 2; refusing C at t=6 (nothing in use) needs V <= 2.
    assert (result.cap_lo, result.cap_hi) == (2, 2)
    result = model.advance(model.initial_state(), 7)
    assert (result.cap_lo, result.cap_hi) == (5, UNBOUNDED)


def test_wait_and_cost_accrue_within_periods() -> None:
    model = hand_model()
    state = model.initial_state()
    first = model.advance(state, 0, until=5.0)
    assert first.twt == (5 - 1) + (5 - 2) and first.started_wait == 0
    rest = model.advance(state, 0)
    assert first.twt + rest.twt == 22
    state = model.initial_state()
    first = model.advance(state, 2, until=4.0)
    assert first.cost == 2 * 3 and first.started_cost == 2 * 5  # clipped at 4 vs the whole job


@pytest.fixture(scope="module")
def kth_cut() -> HybridModel:
    from rlsched.sim.traces.swf import read_swf

    w = read_swf(shared_trace("kth")).cut(0, 12 * 86400.0)
    return HybridModel(w, 100)


def test_v0_equals_engine_easy_exactly(kth_cut: HybridModel) -> None:
    engine = Simulator(kth_cut.workload, 100).run()
    s, cloud, _, _ = starts(kth_cut, 0)
    assert cloud == []
    np.testing.assert_array_equal(np.array(s), engine.start)


def test_certificates_match_brute_force(kth_cut: HybridModel) -> None:
    edges = day_edges(kth_cut)
    state = kth_cut.initial_state()
    for d in range(6):
        fast = sweep_caps(kth_cut, state, float(edges[d + 1]), 100, keep=frozenset([31]))
        slow = sweep_caps(kth_cut, state, float(edges[d + 1]), 100, brute_force=True)
        np.testing.assert_array_equal(fast.twt, slow.twt)
        np.testing.assert_array_equal(fast.cost, slow.cost)
        np.testing.assert_array_equal(fast.started_wait, slow.started_wait)
        assert fast.twt_inf == slow.twt_inf and fast.cost_inf == slow.cost_inf
        assert slow.simulations == 102 and fast.simulations < slow.simulations
        state = state_for(fast, 31)


def test_grouped_runs_equal_independent_runs(kth_cut: HybridModel) -> None:
    edges = day_edges(kth_cut)
    caps = random_caps(100, 6, len(edges) - 1, seed=3)
    caps[0] = 0
    caps[1] = 31
    grouped = grouped_runs(kth_cut, edges, caps)
    for r in range(len(caps)):
        state = kth_cut.initial_state()
        for d in range(len(edges) - 1):
            until = float(edges[d + 1]) if d + 1 < len(edges) - 1 else float("inf")
            step = kth_cut.advance(state, int(caps[r, d]), until)
            assert grouped.twt[r, d] == step.twt and grouped.cost[r, d] == step.cost
    whole = constant_sweep(kth_cut, edges, np.array([0, 31]))
    for row, cap in enumerate((0, 31)):
        twt, cost, _ = kth_cut.run_full(cap)
        assert whole.total_twt[row] == pytest.approx(twt, rel=1e-12)
        assert whole.total_cost[row] == pytest.approx(cost, rel=1e-12)
