"""Why a pending job ranks where it does (``rlsched explain``, like ``sprio -w`` for Slurm's priority).

Two kinds of agents, two kinds of reasons:

- a **rule** (``fcfs``, ``interactive-first-sjf``, ``edf``, ``multifactor`` …) sorts by a key, field after field;
  its agent says which (:class:`RankKey`, from ``rank_keys(view)``).  A job ahead is ahead because of the first
  field in which the two differ ("interactive before batch", "requested time 600 s before 3600 s");
- a **learned** agent scores each job with Q(s, a); a job ahead has a higher Q, by so much.

Pure: arrays in, explanation out (no clock, no I/O); the daemon's :class:`~rlsched.daemon.agents.AgentHandle`
feeds it the view and the agent's ranking.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from rlsched.core.view import FloatArray, IntArray


@dataclass(frozen=True)
class RankKey:
    """One field of a rule's sort key: ``values[i]`` of pending job ``i``; lower goes first, or higher with
    ``higher_first``.  ``labels`` names the values of a categorical field (``labels[int(value)]``)."""

    name: str
    values: FloatArray
    higher_first: bool = False
    unit: str = ""
    labels: tuple[str, ...] | None = None
    #: Values are epoch seconds: shown as UTC times.
    epoch: bool = False

    def describe(self, i: int) -> str:
        value = float(self.values[i])
        if self.epoch and math.isfinite(value) and abs(value) < 1e11:
            return dt.datetime.fromtimestamp(value, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        if self.labels is not None and 0 <= value < len(self.labels) and value == int(value):
            return self.labels[int(value)]
        if math.isfinite(value) and value == int(value) and abs(value) < 1e15:
            return f"{int(value)}{self.unit}"
        return f"{value:.6g}{self.unit}"

    def sort_values(self) -> FloatArray:
        return -np.asarray(self.values, dtype=np.float64) if self.higher_first else np.asarray(self.values, np.float64)


def key_order(keys: Sequence[RankKey]) -> IntArray:
    """The order ``keys`` give (most significant first; indices of the pending jobs)."""
    if not keys:
        return np.zeros(0, dtype=np.int64)
    return np.lexsort(tuple(k.sort_values() for k in reversed(keys))).astype(np.int64)


@dataclass(frozen=True)
class AheadJob:
    """A job ranked before the explained one, and why."""

    index: int  # row of view.pending
    rank: int  # 1-based
    #: Rules: the first key field in which it differs from the explained job, with both values.
    field: str | None = None
    its_value: str | None = None
    our_value: str | None = None
    #: Scores (learned agents: Q-values): how much higher its score is.
    score_gap: float | None = None

    def reason(self) -> str:
        if self.field is not None:
            return f"{self.field} {self.its_value} before {self.our_value}"
        if self.score_gap is not None:
            return f"Q higher by {self.score_gap:.4g}"
        return "same key and score: ahead by the tie-break"


@dataclass(frozen=True)
class Explanation:
    """Where pending job ``index`` ranks among ``n`` and why (see the module docstring)."""

    index: int
    rank: int
    n: int
    score: float
    #: Rules: the explained job's value of every key field.
    key_values: dict[str, str] = field(default_factory=dict)
    #: The job just ahead, then up to ``nearest - 1`` more going up, and the first job (no duplicates).
    ahead: list[AheadJob] = field(default_factory=list)
    change: str = ""


def _first_difference(keys: Sequence[RankKey], a: int, b: int) -> RankKey | None:
    for key in keys:
        va, vb = float(key.values[a]), float(key.values[b])
        if va != vb and not (math.isnan(va) and math.isnan(vb)):
            return key
    return None


def explain_rank(
    index: int, order: IntArray, scores: FloatArray, keys: Sequence[RankKey] | None, nearest: int = 3
) -> Explanation:
    """Explain pending job ``index`` given the agent's ``order`` (best first) and ``scores``; ``keys``: the
    rule's sort key (None for a scoring agent: the reasons are then the score gaps)."""
    positions = np.empty(order.size, dtype=np.int64)
    positions[order] = np.arange(order.size)
    pos = int(positions[index])
    score = float(scores[index])
    wanted = list(range(pos - 1, max(pos - 1 - nearest, -1), -1))
    if pos > 0 and 0 not in wanted:
        wanted.append(0)
    ahead = []
    for p in wanted:
        j = int(order[p])
        if keys:
            key = _first_difference(keys, j, index)
            if key is not None:
                ahead.append(AheadJob(j, p + 1, key.name, key.describe(j), key.describe(index)))
                continue
        ahead.append(AheadJob(j, p + 1, score_gap=float(scores[j]) - score if keys is None else None))
    key_values = {key.name: key.describe(index) for key in keys} if keys else {}
    return Explanation(index, pos + 1, int(order.size), score, key_values, ahead, _change(pos, ahead, keys))


def _change(pos: int, ahead: list[AheadJob], keys: Sequence[RankKey] | None) -> str:
    if pos == 0:
        return "it is first: nothing ahead of it"
    just = ahead[0]
    first = ahead[-1]
    if keys:
        text = (
            f"to pass the job just ahead it would need {just.field} {just.its_value} (has {just.our_value})"
            if just.field
            else "it ties with the job just ahead on every field: the tie-break decides"
        )
        if first.rank != just.rank and first.field:
            text += f"; to be first, {first.field} {first.its_value} (has {first.our_value})"
        return text
    gaps = [a.score_gap for a in ahead if a.score_gap is not None]
    if not gaps:
        return ""
    text = f"its Q would need to rise by {max(gaps[0], 0.0):.4g} to pass the job just ahead"
    if first.rank != just.rank and first.score_gap is not None:
        text += f", by {max(first.score_gap, 0.0):.4g} to be first"
    return text


def reasons_behind(order: IntArray, scores: FloatArray, keys: Sequence[RankKey] | None, limit: int) -> list[str]:
    """For the first ``limit`` jobs of ``order``: why each comes after the one before it (``rlsched status
    --explain``): the first differing key field of a rule, or the Q gap of a learned agent."""
    out = []
    for p in range(min(limit, order.size)):
        if p == 0:
            out.append("first")
            continue
        i, before = int(order[p]), int(order[p - 1])
        key = _first_difference(keys, before, i) if keys else None
        if key is not None:
            out.append(f"{key.name}: {key.describe(before)} before {key.describe(i)}")
        elif keys is None:
            out.append(f"Q {float(scores[before]) - float(scores[i]):+.4g} above")
        else:
            out.append("tie")
    return out
