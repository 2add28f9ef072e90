"""Scoring functions: a job's priority as a weighted sum of what a live scheduler knows about it.

A :class:`ScoringFunction` is a list of feature names and one weight per feature; a job's score
is the weighted sum of its features and the lower score starts first (ties by submit time, then
job id, as every rule).  The features are the ones a live scheduler knows at submit: requested
time ``r`` (seconds, the class prior where the request is missing, at least 1 s), cores ``n``
(at least 1), the submit time, and optionally a predicted runtime.

- ``log_req``, ``log_cores``: log₁₀ r, log₁₀ n.  A weighted sum of logs ranks as a product of
  powers, so ``a·log_req + b·log_cores`` ranks as rᵃ·nᵇ: SJF (a=1, b=0), smallest area first
  (a=b=1), F4's r·√n (a=1, b=½) are all members.
- ``log_req_x_log_cores``, ``log_req_sq``, ``log_cores_sq``: the second-order terms.
- ``submit_h``: the submit time in hours.  At any instant the wait is now − submit, so a linear
  term in the wait ranks exactly as a linear term in the submit time: this is the wait, and it
  keeps the score a static key of the job (the simulator's fast path, the same order live).
  With it 10 to the score is rᵃ·nᵇ·10^(d·submit_h): a job ranks as if 10× smaller than an identical
  job submitted 1/d hours after it.  A shift of the origin shifts every score alike, so no origin
  needs choosing.
- ``log_pred``: log₁₀ of the predicted runtime (:mod:`rlsched.core.prediction`, made at submit from
  the jobs finished before); no static key then (:mod:`rlsched.sim.scored` in a replay).
- ``cores_x_log_req``, ``cores_x_sqrt_req``, ``area``, ``req_x_sqrt_cores`` and ``log_submit``
  (log₁₀ of the seconds since ``origin_s``, at least 1 s): the terms of Carastan-Santos & de
  Camargo's F1–F4 (SC'17; ``../shared/DESIGN.md`` §10), so the same code computes them
  (:data:`CARASTAN_SANTOS`).  ``log_submit`` depends on the origin (F1–F4 measure s from the
  trace's start): a scoring function that reads it must say its ``origin_s``.

Pure: NumPy only.  The search for weights (:mod:`rlsched.sim.search`) runs the simulator.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rlsched.core.agents import FixedRankAgent, Mode, tie_break_keys
from rlsched.core.explain import RankKey
from rlsched.core.policies.rules import order_by_priority, rule_priority
from rlsched.core.runtime import RuntimeModel, usable_requested
from rlsched.core.view import ClusterView, Decisions, FloatArray, IntArray

SECONDS_PER_HOUR = 3600.0


@dataclass(frozen=True)
class JobQuantities:
    """The per-job quantities every feature is computed from (one array entry per job)."""

    req_s: FloatArray  # usable requested time, ≥ 1 s
    cores: FloatArray  # ≥ 1
    submit_s: FloatArray  # as given (absolute or window-relative)
    origin_s: float  # where ``log_submit`` counts from
    #: The predicted runtime (≥ 1 s; :mod:`rlsched.core.prediction`), None where the function reads none.
    pred_s: FloatArray | None = None

    @classmethod
    def of(
        cls,
        req_time_s: FloatArray,
        cores: IntArray | FloatArray,
        submit_s: FloatArray,
        job_class: IntArray,
        origin_s: float = 0.0,
        pred_s: FloatArray | None = None,
    ) -> JobQuantities:
        req = np.maximum(usable_requested(np.asarray(req_time_s, dtype=np.float64), job_class), 1.0)
        pred = None if pred_s is None else np.maximum(np.asarray(pred_s, dtype=np.float64), 1.0)
        return cls(
            req,
            np.maximum(np.asarray(cores, dtype=np.float64), 1.0),
            np.asarray(submit_s, dtype=np.float64),
            float(origin_s),
            pred,
        )


def _log_pred(q: JobQuantities) -> FloatArray:
    if q.pred_s is None:
        raise ValueError("feature log_pred needs a predicted runtime (a scoring policy with runtime_model=)")
    return np.log10(q.pred_s)


def _log_req(q: JobQuantities) -> FloatArray:
    return np.log10(q.req_s)


def _log_cores(q: JobQuantities) -> FloatArray:
    return np.log10(q.cores)


#: Every feature a scoring function may read, by name (see the module docstring).
FEATURES: dict[str, Callable[[JobQuantities], FloatArray]] = {
    "log_req": _log_req,
    "log_cores": _log_cores,
    "log_req_x_log_cores": lambda q: _log_req(q) * _log_cores(q),
    "log_req_sq": lambda q: _log_req(q) ** 2,
    "log_cores_sq": lambda q: _log_cores(q) ** 2,
    "submit_h": lambda q: q.submit_s / SECONDS_PER_HOUR,
    "cores_x_log_req": lambda q: q.cores * _log_req(q),
    "cores_x_sqrt_req": lambda q: q.cores * np.sqrt(q.req_s),
    "area": lambda q: q.cores * q.req_s,
    "req_x_sqrt_cores": lambda q: q.req_s * np.sqrt(q.cores),
    "log_submit": lambda q: np.log10(np.maximum(q.submit_s - q.origin_s, 1.0)),
    "log_pred": _log_pred,
}
#: Features that read the predicted runtime: the score of a job is known once its runtime is predicted, at
#: submit, from the jobs finished before (no static key: the simulator's dynamic priority, :mod:`rlsched.sim.scored`).
PREDICTED: frozenset[str] = frozenset({"log_pred"})
#: Features whose ranking depends on where time starts (a learned, deployable function avoids them).
ORIGIN_DEPENDENT: frozenset[str] = frozenset({"log_submit"})

#: The learned family's default features: the log-space size terms and the (linear) wait.
LOG_FAMILY: tuple[str, ...] = ("log_req", "log_cores", "log_req_x_log_cores", "submit_h")
#: The same with the squares of the logs (curvature in the size terms).
QUADRATIC_FAMILY: tuple[str, ...] = (*LOG_FAMILY, "log_req_sq", "log_cores_sq")
#: The log family with the predicted runtime beside the request.
PREDICTED_FAMILY: tuple[str, ...] = (*LOG_FAMILY, "log_pred")


#: Rules that are members of the learned family, as weights by feature: where a search may start, and what it
#: must beat on validation (easy-sjf's order; smallest area first; F4's size term r·√n without its age term;
#: first come, first served).
FAMILY_RULES: dict[str, dict[str, float]] = {
    "sjf": {"log_req": 1.0},
    "saf": {"log_req": 1.0, "log_cores": 1.0},
    "f4-size": {"log_req": 1.0, "log_cores": 0.5},
    "fcfs": {"submit_h": 1.0},
    "sjf-pred": {"log_pred": 1.0},
    "saf-pred": {"log_pred": 1.0, "log_cores": 1.0},
}


def family_rules(features: Sequence[str]) -> dict[str, tuple[float, ...]]:
    """The :data:`FAMILY_RULES` expressible with ``features``, as weight vectors over them."""
    return {
        name: tuple(terms.get(f, 0.0) for f in features)
        for name, terms in FAMILY_RULES.items()
        if set(terms) <= set(features)
    }


def feature_matrix(names: Sequence[str], q: JobQuantities) -> FloatArray:
    """One column per feature of ``names``, one row per job."""
    unknown = [n for n in names if n not in FEATURES]
    if unknown:
        raise ValueError(f"unknown scoring feature(s) {', '.join(unknown)}; known: {', '.join(FEATURES)}")
    if not names:
        return np.zeros((q.req_s.size, 0))
    return np.stack([FEATURES[n](q) for n in names], axis=1)


@dataclass(frozen=True)
class ScoringFunction:
    """``score = Σ weight_k · feature_k``, lower first (see the module docstring)."""

    features: tuple[str, ...]
    weights: tuple[float, ...]
    origin_s: float = 0.0

    def __post_init__(self) -> None:
        if len(self.features) != len(self.weights):
            raise ValueError(f"{len(self.features)} scoring features but {len(self.weights)} weights")
        if len(set(self.features)) != len(self.features):
            raise ValueError(f"a scoring feature is named twice: {', '.join(self.features)}")
        feature_matrix(
            self.features,
            JobQuantities.of(np.ones(1), np.ones(1), np.zeros(1), np.zeros(1, dtype=np.int64), pred_s=np.ones(1)),
        )
        if not all(np.isfinite(self.weights)):
            raise ValueError(f"scoring weights must be finite, got {self.weights}")

    @property
    def reads_prediction(self) -> bool:
        return not PREDICTED.isdisjoint(self.features)

    def score(self, q: JobQuantities) -> FloatArray:
        return np.asarray(feature_matrix(self.features, q) @ np.asarray(self.weights, dtype=np.float64))

    def score_jobs(
        self,
        req_time_s: FloatArray,
        cores: IntArray | FloatArray,
        submit_s: FloatArray,
        job_class: IntArray,
        pred_s: FloatArray | None = None,
    ) -> FloatArray:
        """The score of each job from its columns (``log_submit`` counts from :attr:`origin_s`)."""
        return self.score(JobQuantities.of(req_time_s, cores, submit_s, job_class, self.origin_s, pred_s))

    def split(self) -> tuple[ScoringFunction, float]:
        """The function without its ``log_pred`` term, and that term's weight (0 without one): the replay
        scores every other feature once for all jobs and adds the prediction's term at each submit."""
        if "log_pred" not in self.features:
            return self, 0.0
        k = self.features.index("log_pred")
        return (
            ScoringFunction(
                self.features[:k] + self.features[k + 1 :], self.weights[:k] + self.weights[k + 1 :], self.origin_s
            ),
            float(self.weights[k]),
        )

    def with_origin(self, origin_s: float) -> ScoringFunction:
        return ScoringFunction(self.features, self.weights, float(origin_s))


#: Carastan-Santos & de Camargo's F1–F4 (SC'17) in this family's terms (``../shared/DESIGN.md`` §10);
#: their ``s`` is ``log_submit``, so give them the origin of the window they run on (:meth:`with_origin`).
CARASTAN_SANTOS: dict[str, ScoringFunction] = {
    "f1": ScoringFunction(("cores_x_log_req", "log_submit"), (1.0, 870.0)),
    "f2": ScoringFunction(("cores_x_sqrt_req", "log_submit"), (1.0, 25_600.0)),
    "f3": ScoringFunction(("area", "log_submit"), (1.0, 6_860_000.0)),
    "f4": ScoringFunction(("req_x_sqrt_cores", "log_submit"), (1.0, 530_000.0)),
}


def format_weights(weights: Sequence[float]) -> str:
    """``w1/w2/…`` with every float written so that it reads back exactly (``repr``)."""
    return "/".join(repr(float(w)) for w in weights)


def parse_weights(text: str) -> tuple[float, ...]:
    """The inverse of :func:`format_weights` (ValueError on a bad number)."""
    parts = [p.strip() for p in text.split("/")] if text.strip() else []
    try:
        return tuple(float(p) for p in parts)
    except ValueError:
        raise ValueError(f"weights must be numbers separated by '/', got {text!r}") from None


def parse_features(text: str) -> tuple[str, ...]:
    return tuple(p.strip() for p in text.split("/") if p.strip())


class ScoredRankAgent(FixedRankAgent):
    """A ranking agent that orders the pending jobs by a :class:`ScoringFunction` (lower first, ties by submit
    time, then job id: the order of :func:`rlsched.core.policies.order_by_key` on the same key); gate or boost.

    Its :meth:`pending_scores` is the negated score (higher goes first), so the daemon logs the function's value.
    ``learn`` and ``policy`` mirror the learned agents' attributes: it never learns, and ``policy`` holds the
    spec it was loaded from (set by :func:`rlsched.core.policies.load_model`).
    """

    def __init__(self, function: ScoringFunction, mode: Mode = "gate", runtime: RuntimeModel | None = None) -> None:
        super().__init__(mode)
        if function.reads_prediction and runtime is None:
            raise ValueError("a scoring function with log_pred needs a runtime model")
        self.function = function
        self.runtime = runtime
        self.learn = False
        self.policy: dict[str, Any] | None = None

    @property
    def ranks_by_queue(self) -> bool:
        # Every feature is known at submit (the wait enters as the submit time; a prediction is made once, at
        # the job's first sighting), so the score of a job never changes.
        return True

    def scores(self, view: ClusterView) -> FloatArray:
        pend = view.pending
        pred = self.runtime.pending(pend) if self.function.reads_prediction and self.runtime is not None else None
        return self.function.score_jobs(pend.req_time_s, pend.cores, pend.submit_s, pend.job_class, pred)

    def rank(self, view: ClusterView) -> IntArray:
        pend = view.pending
        if self.function.reads_prediction:
            # The replay's dynamic priority orders by this integer form of the score (rlsched.sim.scored).
            return order_by_priority(rule_priority(self.scores(view)), pend.submit_s, pend.job_id)
        return np.lexsort((pend.job_id, pend.submit_s, self.scores(view))).astype(np.int64)

    def observe(self, view: ClusterView) -> None:
        if self.runtime is not None:
            self.runtime.observe(view)  # finished jobs feed the predictor before the pending are ranked

    def decide(self, view: ClusterView) -> Decisions:
        self.observe(view)
        return super().decide(view)

    def pending_scores(self, view: ClusterView) -> FloatArray:
        return -self.scores(view)

    def rank_keys(self, view: ClusterView) -> list[RankKey] | None:
        return [RankKey("score", self.scores(view)), *tie_break_keys(view.pending)]
