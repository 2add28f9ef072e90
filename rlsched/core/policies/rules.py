"""The field's ranking rules (docs/rules.md, DESIGN §10): one formula each, shared by the simulator and the daemon.

Every rule is a score, lower first, of r (the runtime the rule believes: the request or a prediction, see
``runtime_model``), n (cores), s (the submit time on the submit clock, :func:`submit_clock`) and w (the current
wait):

- ``sjf`` r; ``saf`` (smallest area first) r·n; ``ljf`` −r; ``smallest`` (RLScheduler's) n;
- ``wfp3`` −(w/r)³·n and ``unicep`` −w/(log₂(n)·r) (Tang et al., as RLScheduler cites them: higher first, so
  their negation here); log₂(1) = 0 is floored at 1e-15, as RLScheduler's code does, so a serial job with any
  wait goes before every parallel one;
- ``f1`` log₁₀(r)·n + 870·log₁₀(s), ``f2`` √r·n + 25600·log₁₀(s), ``f3`` r·n + 6,860,000·log₁₀(s),
  ``f4`` r·√n + 530,000·log₁₀(s) (Carastan-Santos & de Camargo, SC'17).

A rule whose score only reads submit-time columns of the request is a static key (the simulator's native fast
path, :func:`static_rule_key`).  Otherwise (a wait-reading rule, or a predicted runtime) the score becomes an
integer priority (:func:`rule_priority`) that :class:`RuleAgent` sorts live and the simulator's dynamic
priority (:mod:`rlsched.sim.rules`) sorts in a replay, with the same ties (submit time, then job id).
"""

from __future__ import annotations

import functools
from typing import Literal

import numpy as np

from rlsched.core.agents import FixedRankAgent, Mode, tie_break_keys
from rlsched.core.explain import RankKey
from rlsched.core.policies.columns import JobColumns, KeyFunction
from rlsched.core.runtime import RuntimeModel, usable_requested
from rlsched.core.view import ClusterView, Decisions, FloatArray, IntArray

RuleName = Literal["sjf", "saf", "ljf", "smallest", "wfp3", "unicep", "f1", "f2", "f3", "f4"]
RULE_FORMULAS: tuple[RuleName, ...] = ("sjf", "saf", "ljf", "smallest", "wfp3", "unicep", "f1", "f2", "f3", "f4")
#: Rules that read the current wait: their order changes while jobs wait (dynamic priorities).
WAIT_RULES: frozenset[str] = frozenset({"wfp3", "unicep"})
#: Rules that read the submit clock s.
CLOCK_RULES: frozenset[str] = frozenset({"f1", "f2", "f3", "f4"})
#: Rules that read no runtime at all.
RUNTIME_FREE_RULES: frozenset[str] = frozenset({"smallest"})
#: The runtime models a rule may order by (``estimated`` gives every job of a class one runtime: no order).
RULE_RUNTIME_MODELS: tuple[str, ...] = ("requested", "user-last2", "learned", "oracle")
#: UNICEP's log₂(n) for a serial job, as in RLScheduler's code (log₂(1 + 1e-15)).
UNICEP_SERIAL_LOG = 1e-15


def submit_clock(submit_s: FloatArray, origin_s: float) -> FloatArray:
    """F1–F4's s: seconds since ``origin_s``, floored at 1 s (so log₁₀(s) ≥ 0; RLScheduler takes 0.1 at 0)."""
    return np.maximum(np.asarray(submit_s, dtype=np.float64) - origin_s, 1.0)


def rule_score(
    rule: str, runtime_s: FloatArray, cores: FloatArray | IntArray, clock_s: FloatArray, wait_s: FloatArray
) -> FloatArray:
    """The score of every job under ``rule`` (lower first; see the module docstring)."""
    r = np.asarray(runtime_s, dtype=np.float64)
    n = np.asarray(cores, dtype=np.float64)
    if rule == "sjf":
        return r.copy()
    if rule == "saf":
        return r * n
    if rule == "ljf":
        return -r
    if rule == "smallest":
        return n.copy()
    if rule == "wfp3":
        return -((np.maximum(wait_s, 0.0) / r) ** 3) * n
    if rule == "unicep":
        return -np.maximum(wait_s, 0.0) / (np.maximum(np.log2(n), UNICEP_SERIAL_LOG) * r)
    log_s = np.log10(clock_s)
    if rule == "f1":
        return np.log10(r) * n + 870.0 * log_s
    if rule == "f2":
        return np.sqrt(r) * n + 25600.0 * log_s
    if rule == "f3":
        return r * n + 6_860_000.0 * log_s
    if rule == "f4":
        return r * np.sqrt(n) + 530_000.0 * log_s
    raise ValueError(f"unknown rule {rule!r}; expected one of {', '.join(RULE_FORMULAS)}")


_SIGN_BIT = np.int64(0x80000000)
_ALL_BITS = np.int64(0xFFFFFFFF)


def rule_priority(score: FloatArray) -> FloatArray:
    """Scores (lower first) as integer priorities in [1, 2³² − 2], higher first, order kept.

    The score rounded to float32 and read as its order-preserving 32-bit pattern: the integer priority the
    simulator's dynamic-priority queue needs (:class:`rlsched.sim.engine.DynamicPriority`), computed by this
    one function live and in a replay.  Scores within float32's precision (about 6e-8 relative) tie and
    fall back to submit order.
    """
    want64 = -np.asarray(score, dtype=np.float64) + 0.0  # + 0.0: −0.0 becomes 0.0, so zero scores tie
    top = float(np.finfo(np.float32).max)  # beyond float32's range: its largest value (a tie)
    want = np.clip(np.where(np.isnan(want64), -np.inf, want64), -top, top).astype(np.float32)
    bits = want.view(np.uint32).astype(np.int64)
    ordered = np.where(bits & _SIGN_BIT, _ALL_BITS - bits, bits | _SIGN_BIT)
    out: FloatArray = np.clip(ordered, 1, _ALL_BITS - 1).astype(np.float64)
    return out


def order_by_priority(priority: FloatArray, submit_s: FloatArray, job_id: IntArray) -> IntArray:
    """Indices by priority (higher first), ties by submit time, then job id: the simulator's queue order."""
    return np.lexsort((job_id, submit_s, -priority)).astype(np.int64)


@functools.lru_cache(maxsize=64)
def static_rule_key(rule: str, origin_s: float = 0.0) -> KeyFunction:
    """The static key of ``rule`` on the request (not for the wait-reading rules); one function per
    (rule, origin), so ``rlsched explain`` finds its fields by identity."""
    if rule in WAIT_RULES:
        raise ValueError(f"rule {rule!r} reads the current wait: it has no static key")

    def key(jobs: JobColumns) -> tuple[np.ndarray, ...]:
        request = usable_requested(jobs.req_time_s, jobs.job_class)
        return (
            rule_score(rule, request, jobs.cores, submit_clock(jobs.submit_s, origin_s), np.zeros(jobs.job_id.size)),
        )

    return key


class RuleAgent(FixedRankAgent):
    """A field rule on a learned or predicted runtime, or reading the wait: its live ranking agent.

    Each decision first feeds the runtime model the view (finished jobs, first sightings), then ranks the
    pending jobs by :func:`rule_priority` of the rule's score now, ties by submit time, then job id.
    """

    def __init__(self, rule: str, runtime: RuntimeModel, mode: Mode = "gate", origin_s: float = 0.0) -> None:
        super().__init__(mode)
        if rule not in RULE_FORMULAS:
            raise ValueError(f"unknown rule {rule!r}; expected one of {', '.join(RULE_FORMULAS)}")
        self.rule = rule
        self.runtime = runtime
        self.origin_s = origin_s

    @property
    def ranks_by_queue(self) -> bool:
        # A pending job keeps the runtime predicted when it was first seen, and the predictor learns only from
        # finishes: without a wait term the score is fixed from the job's first sighting.
        return self.rule not in WAIT_RULES

    def priorities(self, view: ClusterView) -> FloatArray:
        """The integer priority of every pending job now (higher first)."""
        pend = view.pending
        runtime = np.ones(len(pend)) if self.rule in RUNTIME_FREE_RULES else self.runtime.pending(pend)
        score = rule_score(
            self.rule, runtime, pend.cores, submit_clock(pend.submit_s, self.origin_s), view.time_s - pend.submit_s
        )
        return rule_priority(score)

    def rank(self, view: ClusterView) -> IntArray:
        pend = view.pending
        return order_by_priority(self.priorities(view), pend.submit_s, pend.job_id)

    def rank_keys(self, view: ClusterView) -> list[RankKey] | None:
        return [
            RankKey(f"{self.rule} priority", self.priorities(view), higher_first=True),
            *tie_break_keys(view.pending),
        ]

    def observe(self, view: ClusterView) -> None:
        self.runtime.observe(view)

    def decide(self, view: ClusterView) -> Decisions:
        self.observe(view)
        return super().decide(view)
