"""A scoring function that reads a predicted runtime, in a replay: the engine's dynamic priority.

The score of a job (:class:`rlsched.core.scoring.ScoringFunction`) is known once its runtime is predicted,
at submit, from the jobs that had ended before (the engine ends jobs before it queues the submits of the same
instant, as a live view lists the finished jobs before the pending ones; ends feed the predictor in
completion order) — as :class:`rlsched.sim.rules.RulePriority` does for the field's rules on a prediction.
Every other feature is scored once for all jobs; a submit adds the prediction's term.  A queued job's priority
never changes (the wait enters linearly, as the submit time), so there is no re-prioritisation pass.  The
priority is :func:`rlsched.core.policies.rules.rule_priority` of the score, the integer form
:class:`rlsched.core.scoring.ScoredRankAgent` sorts live.
"""

from __future__ import annotations

import math

import numpy as np

from rlsched.core.policies.rules import rule_priority
from rlsched.core.runtime import usable_requested
from rlsched.core.scoring import ScoringFunction
from rlsched.core.view import FloatArray, IntArray
from rlsched.sim.engine import Overrun
from rlsched.sim.rules import ReplayedRuntimes
from rlsched.sim.workload import Workload


class ScoredPriority:
    """The :class:`rlsched.sim.engine.DynamicPriority` of a scoring function with ``log_pred`` (module docstring).

    ``runtime_model``: ``user-last2`` or ``learned`` (a predictor fed by the replay), or ``oracle`` (the runtime
    the replay will give each job: an upper bound, not a policy a site can run).
    """

    def __init__(self, workload: Workload, function: ScoringFunction, runtime_model: str, overrun: Overrun) -> None:
        rest, self.pred_weight = function.split()
        origin = float(workload.submit[0]) if len(workload) else 0.0
        self.base: FloatArray = rest.with_origin(origin).score_jobs(
            workload.req_time, workload.procs, workload.submit, workload.job_class
        )
        self.request: FloatArray = np.maximum(
            usable_requested(workload.req_time.astype(np.float64), workload.job_class), 1.0
        )
        if runtime_model not in ("oracle", "user-last2", "learned"):
            raise ValueError(f"scored: runtime_model {runtime_model!r} is no prediction (oracle, user-last2, learned)")
        self.runtimes = ReplayedRuntimes(workload, runtime_model, overrun, self.request)
        self.runtime = self.runtimes.runtime

    def _score(self, rows: IntArray) -> FloatArray:
        return np.asarray(self.base[rows] + self.pred_weight * np.log10(np.maximum(self.runtime[rows], 1.0)))

    def submit_priority(self, row: int, now: float) -> float:
        self.runtimes.predict_at_submit(row)
        return float(rule_priority(self._score(np.array([row], dtype=np.int64)))[0])

    def priorities(self, rows: IntArray, now: float) -> FloatArray:
        return rule_priority(self._score(rows))

    def started(self, row: int, now: float) -> None:
        self.runtimes.started(row, now)

    def ended(self, row: int, now: float) -> None:
        self.runtimes.ended(row, now)

    def next_pass(self, now: float) -> float:
        return math.inf
