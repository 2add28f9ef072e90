"""Runtime predictors measured on their own: mean absolute error, share of under-predictions, how well they order.

Each trace is replayed as it was recorded (a job is submitted at its submit time and ends at submit + recorded
wait + runtime), the way Tsafrir et al. and Gaussier et al. score predictors: every job is predicted when it is
submitted, from the jobs that had finished by then, and every finished job is learned in completion order (an
end and a submit at the same instant: the end first, as in the simulator).  The runtime a job is scored against
is its recorded runtime capped at its request (a batch system kills it there).  ``requested`` is the request;
``user-last2`` and ``learned`` are :mod:`rlsched.core.prediction`'s predictors.  Jobs without a recorded wait
(synthetic traces) are ended at submit + runtime.  ``benchmarks/bench_prediction.py`` prints it per trace;
:mod:`rlsched.workflow.learning` reports it beside the learned models.

The mean absolute error in seconds is decided by the long jobs; a rule on predictions (SJF, F1…F4) is decided
by the order it puts the jobs waiting together in, and bounded slowdown by the short ones.  So each model is
also scored on that order (:func:`order_agreement`): of the pairs of jobs submitted close together whose
runtimes differ, the share the prediction orders as the runtimes are ordered; on the mean absolute error of
log(prediction / runtime), which weighs a short job's error like a long one's; and as a detector of the jobs
that end within a minute (:func:`short_job_hits`), whose early start is most of what knowing the runtimes would
gain.  These measure the prediction alone, without the replayed schedule's chaos: one order changed early
moves every later start, so the same rule on two predictors that order almost alike can differ by tens of per
cent on a 1,000-job window.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from rlsched.core.prediction import make_predictor
from rlsched.core.runtime import usable_requested
from rlsched.sim.workload import Workload

MODELS = ("requested", "user-last2", "learned")

#: :func:`order_agreement`'s pairs: each job with the next jobs by submit, at most this many …
ORDER_NEIGHBOURS = 20
#: … submitted at most this long after it (jobs that wait together in a queue that is not empty) …
ORDER_HORIZON_S = 3600.0
#: … whose runtimes differ by more than this share of the longer one (an order a rule should get right).
ORDER_MIN_DIFFERENCE = 0.1
#: Runtimes and predictions below this count as this in the log error (a 0-s job is not infinitely mispredicted).
LOG_ERROR_FLOOR_S = 1.0
#: A job that ends within this is "short" for :func:`short_job_hits`: most of what an oracle gains over the rules
#: comes from knowing these (docs/rules.md, "What a better predictor would buy").
SHORT_JOB_S = 60.0


@dataclass(frozen=True)
class PredictionScore:
    """How one model predicted one trace's runtimes."""

    model: str
    jobs: int
    mean_abs_error_s: float
    under_share: float  # share of jobs predicted shorter than they ran
    order_agreement: float  # :func:`order_agreement` (NaN: no pair to order)
    mean_log_error: float  # mean |log(prediction / runtime)|, both floored at LOG_ERROR_FLOOR_S
    short_recall: float  # of the jobs that ran under SHORT_JOB_S, the share predicted under it (NaN: none ran so)
    short_precision: float  # of the jobs predicted under SHORT_JOB_S, the share that ran under it (NaN: none)
    seconds: float  # wall time of the replay


def order_agreement(predicted: np.ndarray, run: np.ndarray, submit: np.ndarray) -> float:
    """The share of job pairs ``predicted`` orders as ``run`` is ordered (a tie in the prediction counts half:
    the rule breaks it by submit, a coin toss for the runtimes); NaN without a pair.

    The pairs: each job with each of the next :data:`ORDER_NEIGHBOURS` jobs by submit that was submitted within
    :data:`ORDER_HORIZON_S` of it, where the two runtimes differ by more than :data:`ORDER_MIN_DIFFERENCE` of the
    longer one.  Neighbours in submit order stand for the jobs a rule ranks against each other; the neighbour
    count bounds the work (20 pairs a job), whatever the queue's length.
    """
    order = np.argsort(submit, kind="stable")
    p, r, t = predicted[order], run[order], submit[order]
    agree = 0.0
    pairs = 0
    for step in range(1, ORDER_NEIGHBOURS + 1):
        a = np.arange(len(r) - step)
        b = a + step
        keep = (t[b] - t[a] <= ORDER_HORIZON_S) & (np.abs(r[a] - r[b]) > ORDER_MIN_DIFFERENCE * np.maximum(r[a], r[b]))
        same = np.sign(p[a[keep]] - p[b[keep]]) * np.sign(r[a[keep]] - r[b[keep]])
        agree += float(np.sum(same > 0)) + 0.5 * float(np.sum(same == 0))
        pairs += int(keep.sum())
    return agree / pairs if pairs else float("nan")


def short_job_hits(predicted: np.ndarray, run: np.ndarray) -> tuple[float, float]:
    """(recall, precision) of ``predicted`` as a detector of the jobs that run under :data:`SHORT_JOB_S`: of those
    jobs, the share predicted under it; of the jobs predicted under it, the share that ran under it (NaN where
    there is no such job)."""
    ran, said = run < SHORT_JOB_S, predicted < SHORT_JOB_S
    both = float(np.sum(ran & said))
    recall = both / float(ran.sum()) if ran.any() else float("nan")
    precision = both / float(said.sum()) if said.any() else float("nan")
    return recall, precision


def mean_log_error(predicted: np.ndarray, run: np.ndarray) -> float:
    """Mean |log(prediction / runtime)|, both floored at :data:`LOG_ERROR_FLOOR_S` (NaN without jobs)."""
    if not len(run):
        return float("nan")
    floor = LOG_ERROR_FLOOR_S
    return float(np.mean(np.abs(np.log(np.maximum(predicted, floor) / np.maximum(run, floor)))))


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


def recorded_predictions(
    workload: Workload, model: str, recorded: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
) -> np.ndarray:
    """``model``'s prediction of each row of ``workload`` as recorded: each job predicted at its submit, each
    learned at its recorded end (``recorded``: :func:`recorded_events` of it, when the caller has them)."""
    run, request, events = recorded if recorded is not None else recorded_events(workload)
    if model == "requested":
        return request.copy()
    users, vos, cores = workload.user.tolist(), workload.vo.tolist(), workload.procs.tolist()
    submit, req, runs = workload.submit.tolist(), request.tolist(), run.tolist()
    executable = workload.known_executables.tolist()
    predictor = make_predictor(model)
    out = [0.0] * len(workload)
    for e in events.tolist():
        if e >= 0:
            out[e] = predictor.predict(e, users[e], vos[e], cores[e], req[e], submit[e], executable[e])
        else:
            predictor.finished(~e, runs[~e])
    return np.array(out)


def prediction_errors(workload: Workload, models: tuple[str, ...] = MODELS) -> list[PredictionScore]:
    """Every model's :class:`PredictionScore` on ``workload`` (see the module docstring)."""
    recorded = recorded_events(workload)
    run = recorded[0]
    scores = []
    for model in models:
        t0 = time.perf_counter()
        predicted = recorded_predictions(workload, model, recorded)
        seconds = time.perf_counter() - t0
        scores.append(
            PredictionScore(
                model,
                len(workload),
                float(np.mean(np.abs(predicted - run))),
                float(np.mean(predicted < run)),
                order_agreement(predicted, run, workload.submit.astype(np.float64)),
                mean_log_error(predicted, run),
                *short_job_hits(predicted, run),
                seconds,
            )
        )
    return scores
