"""Replay memory: the decisions of an agent in arrival order, with delayed rewards.

One entry per decision ``t``: the design row of the chosen action (see
:mod:`rlsched.core.approximators.base`), its reward once the job has finished (NaN
until then: P-grid §3.2, "the rewards are computed when the job completes"), and,
for fitted-Q iteration, a few candidate design rows of the state at ``t`` — the
actions ``b`` over which ``max_b Q(s_t, b)`` is taken when ``t`` is the next state
of transition ``t − 1`` (P-fqi Alg. 1).

Transition ``t`` is *ready* when its reward is known and decision ``t + 1`` exists.
Arrival order is kept (P-fqi §3.2: "the arrival order of the triplets must be
preserved to use the memory capability of the model").

The Gram matrix ``ZᵀZ`` of the ready rows is kept up to date incrementally, so a
ridge read-out re-fit costs one product ``Zᵀy`` and one small Cholesky solve.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from rlsched.core.approximators.base import read_checkpoint, save_checkpoint
from rlsched.core.view import BoolArray, FloatArray, IntArray


class ReplayMemory:
    """Growing arrays of decisions; ids are global (they survive the dropping of old entries)."""

    def __init__(self, design_dim: int, n_candidates: int = 0, max_transitions: int | None = None) -> None:
        if design_dim < 1 or n_candidates < 0:
            raise ValueError(f"replay memory: bad sizes design_dim={design_dim} n_candidates={n_candidates}")
        if max_transitions is not None and max_transitions < 2:
            raise ValueError(f"replay memory: max_transitions must be ≥ 2, got {max_transitions}")
        self.design_dim = design_dim
        self.n_candidates = n_candidates
        self.max_transitions = max_transitions
        self.offset = 0  # global id of entry 0
        self.size = 0
        cap = 1024
        self._rows = np.zeros((cap, design_dim))
        self._reward = np.full(cap, np.nan)
        self._cand = np.zeros((cap, n_candidates, design_dim), dtype=np.float32)
        self._cand_count = np.zeros(cap, dtype=np.int64)
        self._in_gram = np.zeros(cap, dtype=bool)
        self.gram = np.zeros((design_dim, design_dim))
        # Ready transitions not yet in the Gram matrix, kept by every update: the learner asks at
        # every decision, and counting over the whole memory each time grew with the memory.
        self._pending_ready = 0

    # -- views ----------------------------------------------------------------------------
    @property
    def rows(self) -> FloatArray:
        return self._rows[: self.size]

    @property
    def rewards(self) -> FloatArray:
        return self._reward[: self.size]

    @property
    def candidates(self) -> np.ndarray:
        return self._cand[: self.size]

    @property
    def candidate_counts(self) -> IntArray:
        return self._cand_count[: self.size]

    def ready(self) -> BoolArray:
        """Transitions with a known reward and a following decision."""
        ok = np.isfinite(self.rewards)
        if self.size:
            ok[-1] = False
        return ok

    def __len__(self) -> int:
        return self.size

    # -- updates --------------------------------------------------------------------------
    def _grow(self) -> None:
        cap = 2 * self._rows.shape[0]

        def grown(a: np.ndarray, fill: float | bool | int) -> np.ndarray:
            out = np.full((cap, *a.shape[1:]), fill, dtype=a.dtype)
            out[: a.shape[0]] = a
            return out

        self._rows = grown(self._rows, 0.0)
        self._reward = grown(self._reward, np.nan)
        self._cand = grown(self._cand, 0.0)
        self._cand_count = grown(self._cand_count, 0)
        self._in_gram = grown(self._in_gram, False)

    def append(self, row: FloatArray, candidates: FloatArray | None = None) -> int:
        """Store a decision; returns its id."""
        if row.shape != (self.design_dim,):
            raise ValueError(f"replay memory: row has shape {row.shape}, expected ({self.design_dim},)")
        if self.max_transitions is not None and self.size >= self.max_transitions:
            self._drop_oldest(self.size - self.max_transitions + max(self.max_transitions // 10, 1))
        if self.size == self._rows.shape[0]:
            self._grow()
        if self.size and self._counts_as_pending(self.size - 1):
            self._pending_ready += 1  # the last decision now has a successor
        i = self.size
        self._rows[i] = row
        self._reward[i] = np.nan
        self._in_gram[i] = False
        if self.n_candidates and candidates is not None:
            k = min(candidates.shape[0], self.n_candidates)
            self._cand[i, :k] = candidates[:k]
            self._cand_count[i] = k
        else:
            self._cand_count[i] = 0
        self.size += 1
        return self.offset + i

    def set_reward(self, decision_id: int, reward: float) -> bool:
        """Attach the (delayed) reward; False when the decision was already dropped."""
        i = decision_id - self.offset
        if i < 0:
            return False
        if i >= self.size:
            raise KeyError(f"replay memory: unknown decision id {decision_id}")
        before = i < self.size - 1 and self._counts_as_pending(i)
        self._reward[i] = reward
        self._pending_ready += int(i < self.size - 1 and self._counts_as_pending(i)) - int(before)
        return True

    def _counts_as_pending(self, i: int) -> bool:
        """Entry ``i`` has its reward and is not in the Gram matrix (ready once it has a successor)."""
        return bool(np.isfinite(self._reward[i])) and not self._in_gram[i]

    def sync_gram(self) -> int:
        """Add the newly ready rows to the Gram matrix; returns how many were added."""
        new = np.flatnonzero(self.ready() & ~self._in_gram[: self.size])
        if new.size == 0:
            return 0
        # Contiguous runs are multiplied in place: no copy of the (possibly 100 MB) row block.
        breaks = np.flatnonzero(np.diff(new) != 1) + 1
        for run in np.split(new, breaks):
            z = self._rows[run[0] : run[-1] + 1]
            self.gram += z.T @ z
        self._in_gram[new] = True
        self._pending_ready = 0
        return int(new.size)

    def pending_ready(self) -> int:
        """Ready transitions not yet in the Gram matrix."""
        return self._pending_ready

    def _count_pending_ready(self) -> int:
        return int((self.ready() & ~self._in_gram[: self.size]).sum())

    def _drop_oldest(self, count: int) -> None:
        count = min(count, self.size)
        keep = slice(count, self.size)
        n = self.size - count
        self._rows[:n] = self._rows[keep].copy()
        self._reward[:n] = self._reward[keep].copy()
        self._cand[:n] = self._cand[keep].copy()
        self._cand_count[:n] = self._cand_count[keep].copy()
        self._in_gram[:n] = self._in_gram[keep].copy()
        self.size = n
        self.offset += count
        z = self._rows[:n][self._in_gram[:n]]
        self.gram = z.T @ z
        self._pending_ready = self._count_pending_ready()

    # -- persistence ----------------------------------------------------------------------
    def to_arrays(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        meta = {
            "design_dim": self.design_dim,
            "n_candidates": self.n_candidates,
            "max_transitions": self.max_transitions,
            "offset": self.offset,
        }
        arrays = {
            "rows": self.rows.copy(),
            "rewards": self.rewards.copy(),
            "candidates": self.candidates.copy(),
            "candidate_counts": self.candidate_counts.copy(),
        }
        return meta, arrays

    @classmethod
    def from_arrays(cls, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> ReplayMemory:
        memory = cls(int(meta["design_dim"]), int(meta["n_candidates"]), meta["max_transitions"])
        rows = arrays["rows"]
        if rows.ndim != 2 or rows.shape[1] != memory.design_dim:
            raise ValueError(f"replay memory: array 'rows' has shape {rows.shape}, expected (n, {memory.design_dim})")
        n = rows.shape[0]
        while memory._rows.shape[0] < n:
            memory._grow()
        memory._rows[:n] = rows
        memory._reward[:n] = arrays["rewards"]
        memory._cand[:n] = arrays["candidates"]
        memory._cand_count[:n] = arrays["candidate_counts"]
        memory.size = n
        memory.offset = int(meta["offset"])
        memory.sync_gram()
        return memory

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the memory to one file, atomically."""
        meta, arrays = self.to_arrays()
        save_checkpoint(path, {"kind": "replay", "replay": meta}, arrays)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> ReplayMemory:
        meta, arrays = read_checkpoint(path)
        if meta.get("kind") != "replay":
            raise ValueError(f"{path}: not a replay memory (kind {meta.get('kind')!r})")
        try:
            return cls.from_arrays(meta["replay"], arrays)
        except KeyError as exc:
            raise ValueError(f"{path}: missing key {exc.args[0]!r} in replay memory") from exc
