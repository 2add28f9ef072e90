"""State and action features on a hand-built ClusterView (P-grid §3.2 descriptors)."""

from __future__ import annotations

import numpy as np
import pytest

from rlsched.core.features import FeatureConfig, FeatureEncoder
from rlsched.core.runtime import RequestedRuntime
from rlsched.core.view import ClusterView, FinishedJobs, JobClass, PendingJobs, RunningJobs

BAT, INT = int(JobClass.BATCH), int(JobClass.INTERACTIVE)


def hand_view(idle: int = 1) -> ClusterView:
    running = RunningJobs(
        job_id=np.array([1, 2]),
        vo=np.array([0, 1]),
        job_class=np.array([BAT, BAT]),
        cores=np.array([1, 2]),
        req_time_s=np.array([1600.0, 2000.0]),
        submit_s=np.array([0.0, 0.0]),
        start_s=np.array([0.0, 500.0]),
    )
    pending = PendingJobs(
        job_id=np.array([10, 11, 12]),
        vo=np.array([0, 1, 1]),
        job_class=np.array([INT, BAT, INT]),
        cores=np.array([1, 2, 1]),
        req_time_s=np.array([120.0, 3600.0, 60.0]),
        submit_s=np.array([900.0, 100.0, 940.0]),
        oracle_run_s=np.full(3, np.nan),
        held=np.ones(3, dtype=bool),
    )
    total = 3 + idle
    return ClusterView(
        time_s=1000.0,
        total_cores=total,
        idle_cores=idle,
        pending=pending,
        running=running,
        finished=FinishedJobs(),
        vos=("atlas", "biomed"),
    )


def test_state_vector_by_hand() -> None:
    enc = FeatureEncoder(FeatureConfig(n_vos=2))
    state = enc.state(hand_view(), RequestedRuntime())
    # Remaining work: 600 s x 1 core + 1500 s x 2 cores = 3600 core-s over 4 cores = 900 s.
    # A core is idle: time to free = 0.  Backlog 120 + 7200 + 60 = 7380 core-s / 4 = 1845 s.
    # Queued by class: 1 batch, 2 interactive jobs over a 4-core pool: n / (n + 4).
    expected = [float(enc.log_time(900.0)), 0.0, float(enc.log_time(1845.0)), 0.25, 1 / 3, 2 / 3, 1 / 5, 2 / 6]
    np.testing.assert_allclose(state, np.array(expected))
    assert enc.state_names[:4] == ("running_work", "time_to_free", "backlog", "idle_fraction")
    assert enc.state_names[-2:] == ("queued_batch", "queued_interactive")
    # Paper-only state (no class columns): the five descriptors of P-grid §3.2.
    paper = FeatureEncoder(FeatureConfig(n_vos=2, include_class_queue=False))
    np.testing.assert_allclose(paper.state(hand_view(), RequestedRuntime()), np.array(expected[:6]))
    # log-time scale: 0 for nothing, 1 for the reference (a week).
    assert float(enc.log_time(0.0)) == 0.0
    assert float(enc.log_time(7 * 86400.0)) == pytest.approx(1.0)


def test_time_to_free_when_full_and_sequential_start() -> None:
    enc = FeatureEncoder(FeatureConfig(n_vos=2))
    view = hand_view(idle=0)
    agg = enc.aggregates(view, RequestedRuntime())
    assert agg.time_to_free_s() == pytest.approx(600.0)  # job 1 ends at 1600
    state = enc.state_vector(agg)
    assert state[1] == pytest.approx(float(enc.log_time(600.0)))
    agg.idle_cores = 1
    agg.start(cores=1, run_s=120.0, vo=0, job_class=INT)  # start pending job 10
    assert agg.idle_cores == 0 and agg.n_pending == 2
    assert agg.time_to_free_s() == pytest.approx(120.0)
    np.testing.assert_allclose(enc.state_vector(agg)[4:], [0.0, 1.0, 1 / 4, 1 / 4])


def test_action_rows_by_hand() -> None:
    enc = FeatureEncoder(FeatureConfig(n_vos=2, include_wait=True, include_cores=True))
    view = hand_view()
    run_s = RequestedRuntime().pending(view.pending)
    rows = enc.actions(view.pending, run_s, view.time_s, view.total_cores)
    assert enc.action_names == ("class_batch", "class_interactive", "vo0", "vo1", "runtime", "waited", "cores_fraction")
    np.testing.assert_allclose(rows[:, :4], [[0, 1, 1, 0], [1, 0, 0, 1], [0, 1, 0, 1]])
    np.testing.assert_allclose(rows[:, 4], enc.log_time(np.array([120.0, 3600.0, 60.0])))
    np.testing.assert_allclose(rows[:, 5], enc.log_time(np.array([100.0, 900.0, 60.0])))
    np.testing.assert_allclose(rows[:, 6], [0.25, 0.5, 0.25])
    # Paper-faithful default: class, VO, runtime only.
    assert FeatureEncoder(FeatureConfig(n_vos=2)).action_dim == 5


def test_unknown_vo_and_config_round_trip() -> None:
    cfg = FeatureConfig(n_vos=1)
    enc = FeatureEncoder(cfg)
    view = hand_view()
    rows = enc.actions(view.pending, np.ones(3), 0.0, 4)
    np.testing.assert_allclose(rows[:, 2], [1.0, 0.0, 0.0])  # VO 1 is outside the configured VOs
    assert FeatureConfig.from_dict(cfg.to_dict()) == cfg
    # A config saved before the class-queue columns existed describes a model without them.
    assert not FeatureConfig.from_dict({"n_vos": 1}).include_class_queue
    with pytest.raises(ValueError, match="unknown key"):
        FeatureConfig.from_dict({"n_vos": 1, "colour": "red"})
