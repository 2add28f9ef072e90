"""Each quantity of rlsched.core.measures against a hand computation."""

from __future__ import annotations

import numpy as np
import pytest

from rlsched.core import measures as m
from rlsched.core.leasing import arrival_rate_per_s, remaining_work, runtime_ratio


def test_responsiveness_eq1_by_hand() -> None:
    w = m.responsiveness(run_s=np.array([100.0, 50.0, 0.0, 90.0]), wait_s=np.array([300.0, 0.0, 0.0, 10.0]))
    np.testing.assert_allclose(w, [0.25, 1.0, 1.0, 0.9])
    # A negative wait (clock skew) counts as none; a scalar works.
    assert float(m.responsiveness(10.0, -5.0)) == 1.0
    # Arguments are (run, wait): swapping them gives the complement, never the same number.
    assert float(m.responsiveness(run_s=30.0, wait_s=10.0)) == pytest.approx(0.75)


def test_bounded_slowdown_with_tau_10s() -> None:
    bsld = m.bounded_slowdown(run_s=np.array([100.0, 2.0, 5.0, 50.0]), wait_s=np.array([100.0, 28.0, 0.0, 0.0]))
    # (100+100)/100 = 2; (28+2)/max(2,10) = 3; (0+5)/10 = 0.5 -> 1; 50/50 = 1.
    np.testing.assert_allclose(bsld, [2.0, 3.0, 1.0, 1.0])
    assert m.BOUNDED_SLOWDOWN_TAU_S == 10.0
    assert float(m.bounded_slowdown(np.array([2.0]), np.array([28.0]), tau_s=5.0)[0]) == pytest.approx(6.0)


def test_group_stats_by_hand() -> None:
    wait = np.array([0.0, 60.0, 300.0, 1000.0])
    run = np.array([100.0, 60.0, 100.0, 1000.0])
    w = m.responsiveness(run, wait)  # 1, 0.5, 0.25, 0.5
    s = m.group_stats(w, wait, m.bounded_slowdown(run, wait))
    assert s.jobs == 4
    assert s.mean_w == pytest.approx((1 + 0.5 + 0.25 + 0.5) / 4)
    assert s.sd_w == pytest.approx(np.sqrt(np.mean((np.array([1, 0.5, 0.25, 0.5]) - 0.5625) ** 2)))
    assert s.mean_wait_s == pytest.approx(340.0)
    assert s.median_wait_s == pytest.approx(180.0)
    assert s.p95_wait_s == pytest.approx(300.0 + 0.85 * 700.0)  # linear interpolation at rank 2.85
    assert s.frac_wait_under_target == pytest.approx(0.5)  # 0 and 60 s are under 120 s
    assert s.frac_w_over_0_9 == pytest.approx(0.25)
    assert s.mean_bounded_slowdown == pytest.approx((1 + 2 + 4 + 2) / 4)
    empty = m.group_stats(np.zeros(0), np.zeros(0))
    assert empty.jobs == 0 and empty.mean_w is None and empty.p95_wait_s is None


def test_per_vo_stats_and_cpu_share_by_hand() -> None:
    vo = np.array([0, 1, 0, 2, 1])
    wait = np.array([0.0, 100.0, 300.0, 50.0, 0.0])
    run = np.array([100.0, 100.0, 100.0, 50.0, 200.0])
    procs = np.array([1, 2, 1, 4, 1])
    w = m.responsiveness(run, wait)  # 1, 0.5, 0.25, 0.5, 1
    by_vo = m.stats_by_group(vo, w, wait, [0, 1, 2, 3])
    assert by_vo[0].jobs == 2 and by_vo[0].mean_w == pytest.approx(0.625)
    assert by_vo[0].mean_wait_s == pytest.approx(150.0)
    assert by_vo[1].jobs == 2 and by_vo[1].mean_w == pytest.approx(0.75)
    assert by_vo[1].median_wait_s == pytest.approx(50.0)
    assert by_vo[2].jobs == 1 and by_vo[2].mean_w == pytest.approx(0.5)
    assert by_vo[3].jobs == 0 and by_vo[3].mean_w is None
    work = m.core_seconds(run, procs)  # 100, 200, 100, 200, 200 = 800
    np.testing.assert_allclose(work, [100.0, 200.0, 100.0, 200.0, 200.0])
    assert m.cpu_share(work, vo == 1) == pytest.approx(400.0 / 800.0)
    assert m.cpu_share(work, vo == 2) == pytest.approx(200.0 / 800.0)


def test_fairness_eq2_by_hand() -> None:
    shares = m.normalised_shares([60, 40])  # percentages are normalised
    np.testing.assert_allclose(shares, [0.6, 0.4])
    # VO 0 got 30 % of the service: D = 0.6 − 0.3 = 0.3, M = 0.6, F = 1 − 0.5.
    assert float(m.fairness_of_service(np.array([300.0, 700.0]), shares)) == pytest.approx(0.5)
    assert float(m.fairness_utility(shares, shares)) == pytest.approx(1.0)
    # No service at all: every fraction is 0 and F = 1 − M/M = 0; rows are independent.
    rows = m.fairness_of_service(np.array([[0.0, 0.0], [600.0, 400.0]]), shares)
    np.testing.assert_allclose(rows, [0.0, 1.0])
    with pytest.raises(ValueError, match="non-negative"):
        m.normalised_shares([-1.0, 2.0])


def test_service_by_vo_by_hand() -> None:
    # VO 0: one 2-core job over [0, 10]; VO 1: one 1-core job over [5, 20].
    start, end = np.array([0.0, 5.0]), np.array([10.0, 20.0])
    service = m.service_by_vo(np.array([0.0, 5.0, 10.0, 15.0, 30.0]), start, end, np.array([2, 1]), np.array([0, 1]), 2)
    np.testing.assert_allclose(service, [[0, 0], [10, 0], [20, 5], [20, 10], [20, 15]])


def test_rigid_utilization_by_hand() -> None:
    work = float(np.sum(m.core_seconds(np.array([100.0, 50.0]), np.array([2, 4]))))  # 400 core-s
    assert m.utilization(work, cores=10, span_s=80.0) == pytest.approx(0.5)
    assert m.utilization(work, cores=10, span_s=0.0) == 0.0


def test_elastic_utilization_by_hand() -> None:
    # 10 cores on [0, 100), 40 on [100, 300), 20 from 300 on.
    change, cores = np.array([0.0, 100.0, 300.0]), np.array([10, 40, 20])
    assert m.pool_core_seconds(change, cores, 0.0, 400.0) == pytest.approx(10 * 100 + 40 * 200 + 20 * 100)
    assert m.pool_core_seconds(change, cores, 50.0, 150.0) == pytest.approx(10 * 50 + 40 * 50)
    assert m.pool_core_seconds(change, cores, 50.0, 50.0) == 0.0
    np.testing.assert_array_equal(
        m.pool_cores_at(change, cores, np.array([-5.0, 0.0, 99.0, 100.0, 500.0])), [10, 10, 10, 40, 20]
    )
    assert m.elastic_utilization(5_500.0, change, cores, 0.0, 400.0) == pytest.approx(5_500.0 / 11_000.0)
    series = m.utilization_series(
        np.array([100.0, 200.0]),
        np.array([0.0, 50.0]),
        np.array([100.0, 150.0]),
        np.array([5, 10]),
        0.0,
        change_s=change,
        pool_cores=cores,
    )
    # By 100: job 0 done (500 core-s) over 1000 provisioned; by 200: +1000 over 1000 + 4000.
    np.testing.assert_allclose(series, [500.0 / 1000.0, 1500.0 / 5000.0])
    rigid = m.utilization_series(
        np.array([0.0, 100.0]), np.array([0.0]), np.array([100.0]), np.array([5]), 0.0, cores=10
    )
    assert np.isnan(rigid[0]) and rigid[1] == pytest.approx(0.5)


def test_leasing_estimators_by_hand() -> None:
    assert runtime_ratio(np.array([50.0, 30.0]), np.array([100.0, 100.0])) == pytest.approx(0.4)
    assert runtime_ratio(np.zeros(0), np.zeros(0)) is None
    submits = np.array([0.0, 10.0, 20.0, 30.0, 40.0])
    # Window [15, 40]: 20, 30, 40 -> 3 jobs over 25 s.
    assert arrival_rate_per_s(submits, 40.0, 25.0) == pytest.approx(3 / 25.0)
    # Watching since 35: the window shrinks to [35, 40]: one job over 5 s.
    assert arrival_rate_per_s(submits, 40.0, 25.0, watched_since_s=35.0) == pytest.approx(1 / 5.0)
    assert arrival_rate_per_s(submits, 40.0, 25.0, watched_since_s=40.0) == 0.0
    # Two running jobs: 2 cores to t=150, 1 core already past its requested end.
    assert remaining_work(np.array([2, 1]), np.array([150.0, 90.0]), 100.0) == pytest.approx(100.0)
