"""Runtime models: estimated (sliding class median), oracle, requested."""

from __future__ import annotations

import numpy as np
import pytest

from rlsched.core.runtime import (
    CLASS_PRIOR_S,
    EstimatedRuntime,
    OracleRuntime,
    RequestedRuntime,
    make_runtime_model,
)
from rlsched.core.view import ClusterView, FinishedJobs, JobClass, PendingJobs, RunningJobs

BAT, INT = int(JobClass.BATCH), int(JobClass.INTERACTIVE)


def finished(classes: list[int], runs: list[float]) -> FinishedJobs:
    n = len(runs)
    return FinishedJobs(
        job_id=np.arange(n),
        vo=np.zeros(n, dtype=np.int64),
        job_class=np.array(classes),
        cores=np.ones(n, dtype=np.int64),
        submit_s=np.zeros(n),
        start_s=np.zeros(n),
        end_s=np.array(runs, dtype=float),
    )


def pending(
    classes: list[int], req: list[float], oracle: list[float] | None = None, ids: list[int] | None = None
) -> PendingJobs:
    n = len(classes)
    return PendingJobs(
        job_id=np.array(ids if ids is not None else list(range(100, 100 + n))),
        vo=np.zeros(n, dtype=np.int64),
        job_class=np.array(classes),
        cores=np.ones(n, dtype=np.int64),
        req_time_s=np.array(req, dtype=float),
        submit_s=np.zeros(n),
        oracle_run_s=np.array(oracle if oracle is not None else [np.nan] * n, dtype=float),
        held=np.ones(n, dtype=bool),
    )


def view(t: float, pend: PendingJobs, run: RunningJobs | None = None, fin: FinishedJobs | None = None) -> ClusterView:
    run = run if run is not None else RunningJobs()
    return ClusterView(
        time_s=t,
        total_cores=10,
        idle_cores=10 - len(run),
        pending=pend,
        running=run,
        finished=fin if fin is not None else FinishedJobs(),
    )


def test_estimated_median_over_sliding_window() -> None:
    model = EstimatedRuntime(window=3)
    jobs = pending([INT, BAT], [600.0, 7200.0])
    # Before any finished job: the requested time stands in.
    np.testing.assert_allclose(model.pending(jobs), [600.0, 7200.0])
    model.observe(view(0.0, jobs, fin=finished([INT, INT, BAT, INT], [100.0, 300.0, 5000.0, 200.0])))
    np.testing.assert_allclose(model.pending(jobs), [200.0, 5000.0])  # median(100, 300, 200); 5000
    # Two more interactive jobs push 100 and 300 out of the 3-job window: median(200, 50, 60) = 60.
    model.observe(view(1.0, jobs, fin=finished([INT, INT], [50.0, 60.0])))
    np.testing.assert_allclose(model.pending(jobs), [60.0, 5000.0])
    np.testing.assert_allclose(model.class_medians()[[BAT, INT]], [5000.0, 60.0])


@pytest.mark.parametrize("window", [1, 4, 7])
def test_the_estimate_is_numpys_median_of_the_window_through_wraps_and_a_reload(window: int) -> None:
    rng = np.random.default_rng(window)
    model = EstimatedRuntime(window=window)
    seen: dict[int, list[float]] = {BAT: [], INT: []}
    for step in range(60):
        n = int(rng.integers(0, 2 * window + 2))  # batches shorter and longer than the window
        classes = rng.integers(0, 2, n).tolist()
        runs = rng.choice([5.0, 60.0, 61.0, 3600.0, np.nan], n).tolist()  # ties and unusable runs
        model.observe(view(float(step), pending([], []), fin=finished(classes, runs)))
        for cls, run in zip(classes, runs, strict=True):
            if np.isfinite(run):
                seen[cls].append(run)
        for cls, values in seen.items():
            if values:
                assert model.class_medians()[cls] == np.median(values[-window:])
        if step == 30:  # a checkpoint and a restore in the middle of the stream
            state = model.state_arrays()
            model = EstimatedRuntime(window=window)
            model.load_state_arrays(state)


def test_estimated_prior_without_history_or_request() -> None:
    model = EstimatedRuntime()
    jobs = pending([INT, BAT], [np.nan, 0.0])
    np.testing.assert_allclose(model.pending(jobs), [CLASS_PRIOR_S[INT], CLASS_PRIOR_S[BAT]])
    with pytest.raises(ValueError, match="window"):
        EstimatedRuntime(window=0)


def test_oracle_pending_and_remembered_for_running() -> None:
    model = OracleRuntime()
    jobs = pending([INT, BAT], [900.0, 9000.0], oracle=[120.0, 40000.0], ids=[7, 8])
    model.observe(view(0.0, jobs))
    np.testing.assert_allclose(model.pending(jobs), [120.0, 40000.0])
    # Job 8 starts; job 9 started without ever being seen pending: falls back (requested time).
    running = RunningJobs(
        job_id=np.array([8, 9]),
        vo=np.zeros(2, dtype=np.int64),
        job_class=np.array([BAT, INT]),
        cores=np.ones(2, dtype=np.int64),
        req_time_s=np.array([9000.0, 300.0]),
        submit_s=np.zeros(2),
        start_s=np.array([5.0, 5.0]),
    )
    model.observe(view(10.0, pending([INT], [900.0], oracle=[120.0], ids=[7]), run=running))
    np.testing.assert_allclose(model.running(running), [40000.0, 300.0])


def test_requested_and_factory() -> None:
    jobs = pending([INT, BAT], [300.0, -1.0])
    np.testing.assert_allclose(RequestedRuntime().pending(jobs), [300.0, CLASS_PRIOR_S[BAT]])
    assert make_runtime_model("estimated").name == "estimated"
    with pytest.raises(ValueError, match="unknown runtime model 'psychic'"):
        make_runtime_model("psychic")
