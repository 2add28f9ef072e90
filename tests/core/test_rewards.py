"""Reward formulas of P-grid §3.2 on hand-computed cases."""

from __future__ import annotations

import numpy as np
import pytest

from rlsched.core.rewards import (
    FairnessTracker,
    UtilizationTracker,
    deficit_distance,
    elastic_reward,
    fairness_utility,
    normalised_shares,
    responsiveness,
    scheduling_reward,
)
from rlsched.core.view import ClusterView, FinishedJobs, PendingJobs, RunningJobs


def test_responsiveness_eq1() -> None:
    # W = run / (run + wait): 100 s run after 300 s wait -> 0.25; no wait -> 1.
    w = responsiveness(np.array([100.0, 50.0, 0.0, 90.0]), np.array([300.0, 0.0, 0.0, 10.0]))
    np.testing.assert_allclose(w, [0.25, 1.0, 1.0, 0.9])
    assert float(responsiveness(10.0, -5.0)) == 1.0  # clock skew: negative wait counts as none


def test_deficit_and_fairness_eq2() -> None:
    shares = np.array([0.5, 0.3, 0.2])
    # VO 1 received 0.1 of its 0.3 target: deficit 0.2; M = 0.5 -> F = 1 - 0.2/0.5 = 0.6.
    service = np.array([0.7, 0.1, 0.2])
    assert float(deficit_distance(service, shares)) == pytest.approx(0.2)
    assert float(fairness_utility(service, shares)) == pytest.approx(0.6)
    # Exactly on target: F = 1.  Nothing received at all: D = M, F = 0.
    assert float(fairness_utility(shares, shares)) == pytest.approx(1.0)
    assert float(fairness_utility(np.zeros(3), shares)) == pytest.approx(0.0)


def test_combined_rewards() -> None:
    assert float(scheduling_reward(0.8, 0.6, 0.5)) == pytest.approx(0.7)
    assert float(scheduling_reward(0.8, 0.6, 1.0)) == pytest.approx(0.8)
    assert float(elastic_reward(0.9, 0.5, 0.25)) == pytest.approx(0.25 * 0.9 + 0.75 * 0.5)
    with pytest.raises(ValueError, match="λ"):
        scheduling_reward(0.5, 0.5, 1.5)


def test_shares_normalised_and_validated() -> None:
    np.testing.assert_allclose(normalised_shares([53, 2, 17, 8, 1, 16, 3]), np.array([53, 2, 17, 8, 1, 16, 3]) / 100)
    with pytest.raises(ValueError, match="shares"):
        normalised_shares([0.0, 0.0])


def _view(time_s: float, running: RunningJobs, finished: FinishedJobs) -> ClusterView:
    return ClusterView(
        time_s=time_s,
        total_cores=4,
        idle_cores=4 - int(running.cores.sum()),
        pending=PendingJobs(),
        running=running,
        finished=finished,
        vos=("a", "b"),
    )


def test_fairness_tracker_counts_finished_and_running_service() -> None:
    tracker = FairnessTracker([0.5, 0.5])
    finished = FinishedJobs(
        job_id=np.array([1]),
        vo=np.array([0]),
        job_class=np.array([0]),
        cores=np.array([2]),
        submit_s=np.array([0.0]),
        start_s=np.array([0.0]),
        end_s=np.array([100.0]),
    )
    running = RunningJobs(
        job_id=np.array([2]),
        vo=np.array([1]),
        job_class=np.array([0]),
        cores=np.array([1]),
        req_time_s=np.array([1e4]),
        submit_s=np.array([0.0]),
        start_s=np.array([50.0]),
    )
    view = _view(150.0, running, finished)
    tracker.observe(view)
    service = tracker.service_now(view)
    np.testing.assert_allclose(service, [200.0, 100.0])  # 2 cores x 100 s; 1 core x 100 s so far
    # Electing a VO-1 job of 100 core-s gives 200/200: on target, F = 1; a VO-0 job gives
    # fractions (300/400, 100/400): deficit 0.25, M = 0.5, F = 0.5.
    np.testing.assert_allclose(
        tracker.election_fairness(service, np.array([1, 0]), np.array([100.0, 100.0])), [1.0, 0.5]
    )


def test_utilization_eq3() -> None:
    tracker = UtilizationTracker(start_s=0.0, pool_cores=10)
    tracker.set_pool(100.0, 20)  # 10 cores for 100 s = 1000 core-s
    tracker.add_completed(np.array([500.0, 500.0]))
    # Provisioned by t=150: 1000 + 20 x 50 = 2000 core-s; completed 1000 -> U = 0.5.
    assert tracker.utilization(150.0) == pytest.approx(0.5)
    assert UtilizationTracker(0.0, 5).utilization(0.0) == 1.0
    with pytest.raises(ValueError, match="time went back"):
        tracker.set_pool(50.0, 10)
