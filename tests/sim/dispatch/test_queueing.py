"""The M/M/1 queueing-model optimiser of Tong Eqs. 8-11 (Algorithm 2)."""

import numpy as np
import pytest

from rlsched.sim.dispatch.model import Flow, Units, simulate
from rlsched.sim.dispatch.policies import ProbabilisticDispatch
from rlsched.sim.dispatch.queueing import expected_response_time, optimise_allocation, single_type_optimum
from rlsched.sim.dispatch.workloads import TONG_SERVICE_RATES, TONG_TYPE_PROBS


@pytest.mark.parametrize("mix", ["paper", "harmonic"])
def test_symmetric_case_matches_closed_form(mix):
    # Two types, three identical units: split evenly, RT = 1/(mu - lambda/n) for M/M/1.
    mu = np.full((2, 3), 30.0)
    alloc = optimise_allocation(np.array([0.5, 0.5]), 60.0, mu, service_mix=mix)
    np.testing.assert_allclose(alloc.probs.sum(axis=0), [2 / 3] * 3, atol=1e-4)
    assert alloc.expected_response_h == pytest.approx(1.0 / (30.0 - 20.0), rel=1e-6)


def test_single_type_asymmetric_matches_lagrange_solution():
    mu = np.array([60.0, 30.0, 15.0])
    probs, rt = single_type_optimum(50.0, mu)
    alloc = optimise_allocation(np.array([1.0]), 50.0, mu[None, :])
    np.testing.assert_allclose(alloc.probs[0], probs, atol=1e-4)
    assert alloc.expected_response_h == pytest.approx(rt, rel=1e-6)
    # The square-root rule sends less than proportionally to the slow unit.
    assert probs[2] < 15.0 / 105.0


def test_table3_solution_satisfies_constraints_and_beats_uniform():
    alloc = optimise_allocation(TONG_TYPE_PROBS, 80.0, TONG_SERVICE_RATES)
    assert np.all(alloc.probs >= 0) and np.all(alloc.probs <= 1)
    np.testing.assert_allclose(alloc.probs.sum(axis=1), 1.0, atol=1e-9)
    lam_ij = alloc.probs * TONG_TYPE_PROBS[:, None] * 80.0
    lam_j = lam_ij.sum(axis=0)
    mu_j = (lam_ij * TONG_SERVICE_RATES).sum(axis=0) / lam_j  # Eq. 9
    assert np.all(mu_j > lam_j)  # every unit stable
    uniform = np.full((5, 3), 1 / 3)
    assert alloc.expected_response_h < expected_response_time(uniform, TONG_TYPE_PROBS, 80.0, TONG_SERVICE_RATES)
    # No random perturbation on the simplex does better (local optimality).
    rng = np.random.default_rng(0)
    for _ in range(200):
        trial = np.clip(alloc.probs + rng.normal(0, 0.01, alloc.probs.shape), 0, None)
        trial /= trial.sum(axis=1, keepdims=True)
        assert (
            expected_response_time(trial, TONG_TYPE_PROBS, 80.0, TONG_SERVICE_RATES) >= alloc.expected_response_h - 1e-9
        )


def test_overload_is_infeasible():
    with pytest.raises(ValueError, match="no stable allocation"):
        optimise_allocation(np.array([1.0]), 100.0, np.array([[30.0, 30.0]]))
    assert expected_response_time(np.array([[1.0, 0.0]]), np.array([1.0]), 40.0, np.array([[30.0, 30.0]])) == float(
        "inf"
    )


def test_simulated_response_matches_the_model_for_one_type():
    # With one type the split units are exactly M/M/1 queues: the model is exact.
    mu = np.array([[40.0, 20.0]])
    alloc = optimise_allocation(np.array([1.0]), 40.0, mu)
    rng = np.random.default_rng(11)
    n = 40000
    flow = Flow(np.cumsum(rng.exponential(1 / 40.0, n)), np.zeros(n, dtype=np.int64), rng.exponential(1.0, n))
    result = simulate(flow, Units(mu), ProbabilisticDispatch(alloc.probs, np.random.default_rng(1)))
    assert result.mean_response_h(2000) == pytest.approx(alloc.expected_response_h, rel=0.06)
