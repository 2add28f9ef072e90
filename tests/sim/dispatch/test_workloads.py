"""Flow generators for the Tong experiments: the right means and shapes."""

import os
from pathlib import Path

import numpy as np
import pytest

from rlsched.sim.dispatch.workloads import (
    ARRIVAL_LAWS,
    TONG_SERVICE_RATES,
    LpcSetting,
    burst_time_fraction,
    interarrival_times,
    lpc_flow,
    lpc_replay_flow,
    shifted_rates,
    tong_flow,
)
from rlsched.sim.workload import Workload


@pytest.mark.parametrize("law", ARRIVAL_LAWS)
def test_interarrival_laws_share_the_mean(law):
    gaps = interarrival_times(law, 80.0, 200_000, np.random.default_rng(0))
    assert gaps.mean() == pytest.approx(1 / 80.0, rel=0.01)
    assert np.all(gaps >= 0)
    expected_cv2 = {"exponential": 1.0, "constant": 0.0, "uniform": 1 / 3, "chisquare": 2.0}[law]
    assert gaps.var() / gaps.mean() ** 2 == pytest.approx(expected_cv2, abs=0.05)


def test_unknown_law_and_bad_rate():
    with pytest.raises(ValueError, match="unknown arrival law"):
        interarrival_times("pareto", 1.0, 3, np.random.default_rng(0))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="positive"):
        interarrival_times("exponential", 0.0, 3, np.random.default_rng(0))


def test_tong_flow_types_and_work():
    flow = tong_flow(100_000, 80.0, np.random.default_rng(1))
    freq = np.bincount(flow.task_type, minlength=5) / len(flow)
    np.testing.assert_allclose(freq, [0.4, 0.2, 0.1, 0.1, 0.2], atol=0.005)
    assert flow.work.mean() == pytest.approx(1.0, rel=0.02)
    assert len(flow) / flow.arrival_h[-1] == pytest.approx(80.0, rel=0.02)


def test_table3_and_estimation_errors():
    assert TONG_SERVICE_RATES.shape == (5, 3)
    assert TONG_SERVICE_RATES[0].tolist() == [60.0, 30.0, 15.0]  # t1 on P1..P3
    np.testing.assert_array_equal(shifted_rates(TONG_SERVICE_RATES, -5.0), TONG_SERVICE_RATES - 5)
    with pytest.raises(ValueError):
        shifted_rates(TONG_SERVICE_RATES, -15.0)


def test_lpc_flow_rate_burst_and_load():
    setting = LpcSetting(cpus=15, days=60.0)
    flow = lpc_flow(setting, np.random.default_rng(2))
    assert setting.mean_rate_per_h == pytest.approx(28.0)
    assert len(flow) / (60 * 24) == pytest.approx(28.0, rel=0.02)
    phase = np.mod(flow.arrival_h, 6.0)
    in_burst = np.mean(phase < 2.0)
    assert in_burst == pytest.approx(66 * 2 / (66 * 2 + 9 * 4), abs=0.01)
    assert np.mean(flow.task_type == 0) == pytest.approx(0.52, abs=0.01)
    assert setting.offered_load > 1.0 and LpcSetting().offered_load < 0.2


def test_lpc_task_share_reading():
    """§6.3.2 read literally: one third of the *tasks* arrive at 66/h, the rest at 9/h."""
    fraction = burst_time_fraction(1 / 3, 66.0, 9.0)
    assert fraction == pytest.approx(3 / 47)
    setting = LpcSetting(cpus=15, days=120.0, burst_fraction=fraction)
    assert setting.mean_rate_per_h == pytest.approx(12.6383, abs=1e-3)
    assert setting.offered_load == pytest.approx(0.647, abs=0.01)  # stable, unlike the time reading
    flow = lpc_flow(setting, np.random.default_rng(4))
    in_burst = np.mean(np.mod(flow.arrival_h, 6.0) < 6.0 * fraction)
    assert in_burst == pytest.approx(1 / 3, abs=0.015)
    with pytest.raises(ValueError, match="share"):
        burst_time_fraction(1.0, 66.0, 9.0)


def _workload(groups, runs, submits):
    n = len(groups)
    ints = np.full(n, -1, dtype=np.int64)
    return Workload(
        name="t",
        max_procs=140,
        job_id=np.arange(n, dtype=np.int64),
        submit=np.asarray(submits, dtype=float),
        run=np.asarray(runs, dtype=float),
        req_time=np.full(n, 1e5),
        procs=np.ones(n, dtype=np.int64),
        user=ints,
        group=np.asarray(groups, dtype=np.int64),
        queue=ints,
        partition=ints,
        executable=ints,
        recorded_wait=np.full(n, np.nan),
        vo=np.zeros(n, dtype=np.int64),
        job_class=np.zeros(n, dtype=np.int64),
    )


def test_replay_picks_two_groups_and_keeps_runtimes():
    w = _workload(
        groups=[5, 2, 5, 2, 5, 9, 2, 5],
        runs=[360, 5400, 0, 3600, 720, 10, 7200, 360],
        submits=[0, 10, 20, 30, 40, 50, 60, 90000],
    )
    replay = lpc_replay_flow(w, days=1.0)
    assert replay.groups == (5, 2)  # shorter mean first: "dteam", then "biomed"
    assert replay.dropped == {"zero_runtime": 1, "other_groups": 1, "after_window": 1}
    flow = replay.flow
    assert flow.task_type.tolist() == [0, 1, 1, 0, 1]
    service = flow.work / (1.0 / replay.mean_run_h[flow.task_type])
    np.testing.assert_allclose(service * 3600, [360, 5400, 3600, 720, 7200])
    assert flow.arrival_h[0] == 0.0


@pytest.mark.skipif(not os.environ.get("RLSCHED_TRACE_DIR"), reason="RLSCHED_TRACE_DIR not set")
def test_replay_of_the_real_lpc_egee_trace():
    path = Path(os.environ["RLSCHED_TRACE_DIR"]) / "LPC-EGEE-2004-1.2-cln.swf.gz"
    if not path.exists():
        pytest.skip(f"{path} missing")
    swf = pytest.importorskip("rlsched.sim.traces.swf")
    replay = lpc_replay_flow(swf.read_swf(path), days=163.0)
    assert replay.flow.arrival_h[-1] < 163 * 24
    assert replay.mean_run_h[0] < replay.mean_run_h[1]
    assert len(replay.flow) > 10_000
