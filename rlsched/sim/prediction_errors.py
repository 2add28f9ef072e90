"""Runtime predictors measured on their own: mean absolute error and share of under-predictions.

Each trace is replayed as it was recorded (a job is submitted at its submit time and ends at submit + recorded
wait + runtime), the way Tsafrir et al. and Gaussier et al. score predictors: every job is predicted when it is
submitted, from the jobs that had finished by then, and every finished job is learned in completion order (an
end and a submit at the same instant: the end first, as in the simulator).  The runtime a job is scored against
is its recorded runtime capped at its request (a batch system kills it there).  ``requested`` is the request;
``user-last2`` and ``learned`` are :mod:`rlsched.core.prediction`'s predictors.  Jobs without a recorded wait
(synthetic traces) are ended at submit + runtime.  ``benchmarks/bench_prediction.py`` prints it per trace;
:mod:`rlsched.workflow.learning` reports it beside the learned models.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from rlsched.core.prediction import make_predictor
from rlsched.core.runtime import usable_requested
from rlsched.sim.workload import Workload

MODELS = ("requested", "user-last2", "learned")


@dataclass(frozen=True)
class PredictionScore:
    """How one model predicted one trace's runtimes."""

    model: str
    jobs: int
    mean_abs_error_s: float
    under_share: float  # share of jobs predicted shorter than they ran
    seconds: float  # wall time of the replay


def recorded_events(workload: Workload) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(actual runtimes, usable requests, event order): rows ≥ 0 are submits, ~row are ends, time-sorted."""
    request = usable_requested(workload.req_time.astype(np.float64), workload.job_class)
    run = np.minimum(np.maximum(workload.run.astype(np.float64), 0.0), request)
    wait = np.nan_to_num(workload.recorded_wait.astype(np.float64), nan=0.0)
    end = workload.submit + np.maximum(wait, 0.0) + run
    n = len(workload)
    rows = np.arange(n, dtype=np.int64)
    times = np.concatenate([end, workload.submit.astype(np.float64)])
    kinds = np.concatenate([np.zeros(n), np.ones(n)])  # ends before submits at the same instant
    events = np.concatenate([~rows, rows])
    order = np.lexsort((np.concatenate([rows, rows]), kinds, times))
    return run, request, events[order]


def prediction_errors(workload: Workload, models: tuple[str, ...] = MODELS) -> list[PredictionScore]:
    """Every model's :class:`PredictionScore` on ``workload`` (see the module docstring)."""
    run, request, events = recorded_events(workload)
    users, vos, cores = workload.user.tolist(), workload.vo.tolist(), workload.procs.tolist()
    submit, req = workload.submit.tolist(), request.tolist()
    runs = run.tolist()
    scores = []
    for model in models:
        t0 = time.perf_counter()
        if model == "requested":
            predicted = request.copy()
        else:
            predictor = make_predictor(model)
            out = [0.0] * len(workload)
            for e in events.tolist():
                if e >= 0:
                    out[e] = predictor.predict(e, users[e], vos[e], cores[e], req[e], submit[e])
                else:
                    predictor.finished(~e, runs[~e])
            predicted = np.array(out)
        scores.append(
            PredictionScore(
                model,
                len(workload),
                float(np.mean(np.abs(predicted - run))),
                float(np.mean(predicted < run)),
                time.perf_counter() - t0,
            )
        )
    return scores
