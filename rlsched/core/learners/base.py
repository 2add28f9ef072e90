"""What SARSA and fitted-Q share: ε-greedy selection, recording decisions, delayed rewards, re-fits.

A learner wraps a :class:`QFunction` and a :class:`ReplayMemory`.  For each decision
the caller (an agent, or a test's toy environment) passes the state vector and the
candidate action rows; the learner either picks one (:meth:`BatchLearner.act`,
ε-greedy) or records the choice of another policy (:meth:`BatchLearner.record`,
used for EDF pretraining, P-grid §3.3).  Rewards arrive later, by decision id
(:meth:`BatchLearner.reward`), and the read-out is re-fitted in batch every
``refit_every`` newly completed transitions (P-grid §3.3: "batch re-learning").
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from typing import Any

import numpy as np

from rlsched.core.approximators.base import (
    QFunction,
    qfunction_from_checkpoint,
    read_checkpoint,
    save_checkpoint,
)
from rlsched.core.blas import single_blas_thread
from rlsched.core.learners.replay import ReplayMemory
from rlsched.core.view import FloatArray


class BatchLearner(ABC):
    """ε-greedy control with a batch-refitted Q-function and delayed rewards."""

    kind: str = "base"

    def __init__(
        self,
        q: QFunction,
        *,
        gamma: float,
        epsilon: float,
        refit_every: int,
        n_candidates: int,
        max_transitions: int | None,
        seed: int | np.random.Generator,
    ) -> None:
        if not 0.0 <= gamma < 1.0:
            raise ValueError(f"{self.kind}: gamma must lie in [0, 1), got {gamma}")
        if not 0.0 <= epsilon <= 1.0:
            raise ValueError(f"{self.kind}: epsilon must lie in [0, 1], got {epsilon}")
        if refit_every < 1:
            raise ValueError(f"{self.kind}: refit_every must be ≥ 1, got {refit_every}")
        self.q = q
        self.gamma = gamma
        self.epsilon = epsilon
        self.refit_every = refit_every
        self.rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
        self.memory = ReplayMemory(q.design_dim, n_candidates, max_transitions)
        self.refits = 0

    # -- acting ---------------------------------------------------------------------------
    @single_blas_thread
    def select(self, state: FloatArray, actions: FloatArray, explore: bool = True) -> int:
        """ε-greedy index into ``actions`` (P-grid Alg. 1: argmax with probability 1 − ε).

        Ties go to the lowest index, so callers that order candidates first-come
        first-served get FCFS among equal values.  One uniform draw per call keeps the
        random stream independent of the scores.
        """
        n = actions.shape[0]
        if n == 0:
            raise ValueError(f"{self.kind}: no candidate action to select from")
        u = self.rng.random()
        if explore and u < self.epsilon:
            return int(self.rng.integers(n))
        return int(np.argmax(self.q.scores(state, actions)))

    @single_blas_thread
    def record(self, state: FloatArray, actions: FloatArray, chosen: int) -> int:
        """Store the decision ``actions[chosen]`` taken in ``state``; advance the Q memory; return its id."""
        rows = self.q.encode(state, actions[chosen : chosen + 1])
        row = rows[0]
        candidates = self._candidate_rows(state, actions, chosen, row) if self.memory.n_candidates else None
        decision_id = self.memory.append(row, candidates)
        self.q.advance(row)
        return decision_id

    def act(self, state: FloatArray, actions: FloatArray, explore: bool = True) -> tuple[int, int]:
        """Select (ε-greedy) and record; returns (index into ``actions``, decision id)."""
        chosen = self.select(state, actions, explore)
        return chosen, self.record(state, actions, chosen)

    def _candidate_rows(self, state: FloatArray, actions: FloatArray, chosen: int, row: FloatArray) -> FloatArray:
        """The chosen row plus up to ``n_candidates − 1`` other distinct actions, drawn at random.

        ``max_b Q(s, b)`` of fitted-Q iteration is then taken over this subset: exact when
        the distinct actions are few (the ``estimated`` runtime model gives at most
        2 × n_vos of them), a sampled approximation otherwise.
        """
        k = self.memory.n_candidates
        n = actions.shape[0]
        pool = np.arange(n) if n <= 4 * k else self.rng.choice(n, size=4 * k, replace=False)
        _, first = np.unique(actions[pool], axis=0, return_index=True)
        distinct = pool[np.sort(first)]
        others = distinct[~np.all(actions[distinct] == actions[chosen], axis=1)]
        if others.size > k - 1:
            others = np.sort(self.rng.choice(others, size=k - 1, replace=False))
        if others.size == 0:
            return row[None, :]
        return np.vstack([row[None, :], self.q.encode(state, actions[others])])

    # -- learning -------------------------------------------------------------------------
    def reward(self, decision_id: int, reward: float) -> None:
        """The reward of a past decision has arrived (its job finished)."""
        if not np.isfinite(reward):
            raise ValueError(f"{self.kind}: reward of decision {decision_id} is not finite: {reward}")
        self.memory.set_reward(decision_id, float(reward))

    def maybe_refit(self) -> bool:
        """Re-fit when ``refit_every`` new transitions are ready; True when it did."""
        if self.memory.pending_ready() < self.refit_every:
            return False
        self.refit()
        return True

    @single_blas_thread
    def refit(self, sweeps: int | None = None) -> None:
        """Re-fit the Q-function on every ready transition (``sweeps`` times)."""
        self.memory.sync_gram()
        ready = np.nonzero(self.memory.ready())[0]
        if ready.size == 0:
            return
        for _ in range(self._default_sweeps() if sweeps is None else sweeps):
            targets = self.targets(ready)
            self.q.fit_subset(self.memory.rows, ready, targets, gram=self.memory.gram)
        self.refits += 1

    def _default_sweeps(self) -> int:
        return 1

    @abstractmethod
    def targets(self, ready: np.ndarray) -> FloatArray:
        """Regression targets for the ready transitions (indices into the memory)."""

    # -- persistence ----------------------------------------------------------------------
    def hyper_parameters(self) -> dict[str, Any]:
        return {"gamma": self.gamma, "epsilon": self.epsilon, "refit_every": self.refit_every}

    def save(
        self,
        path: str | os.PathLike[str],
        extra_meta: dict[str, Any] | None = None,
        extra_arrays: dict[str, np.ndarray] | None = None,
    ) -> None:
        """Q-function, replay memory and random state in one file, atomically.

        ``extra_meta``/``extra_arrays`` let an agent add its own state to the same file
        (arrays under the ``agent/`` prefix, metadata under the ``agent`` key).
        """
        q_meta, q_arrays = self.q.to_arrays()
        m_meta, m_arrays = self.memory.to_arrays()
        meta = {
            "agent": extra_meta or {},
            "kind": self.q.kind,
            "model": q_meta,
            "learner": self.kind,
            "hyper": self.hyper_parameters(),
            "replay": m_meta,
            "refits": self.refits,
            "rng": self.rng.bit_generator.state,
        }
        arrays = {
            **{f"q/{k}": v for k, v in q_arrays.items()},
            **{f"replay/{k}": v for k, v in m_arrays.items()},
            **{f"agent/{k}": v for k, v in (extra_arrays or {}).items()},
        }
        save_checkpoint(path, meta, arrays)

    def load_state(self, path: str | os.PathLike[str]) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """Restore what :meth:`save` wrote (hyper-parameters come from the file).

        Returns the agent's extra metadata and arrays (prefix stripped).
        """
        meta, arrays = read_checkpoint(path)
        if meta.get("learner") != self.kind:
            raise ValueError(f"{path}: holds a {meta.get('learner')!r} learner, not {self.kind!r}")
        self.q = qfunction_from_checkpoint(path, meta, arrays, prefix="q/")
        replay = {k[len("replay/") :]: v for k, v in arrays.items() if k.startswith("replay/")}
        try:
            self.memory = ReplayMemory.from_arrays(meta["replay"], replay)
        except KeyError as exc:
            raise ValueError(f"{path}: missing key {exc.args[0]!r} in replay memory") from exc
        for key, value in meta["hyper"].items():
            setattr(self, key, value)
        self.refits = int(meta["refits"])
        self.rng.bit_generator.state = meta["rng"]
        agent_arrays = {k[len("agent/") :]: v for k, v in arrays.items() if k.startswith("agent/")}
        return dict(meta.get("agent", {})), agent_arrays
