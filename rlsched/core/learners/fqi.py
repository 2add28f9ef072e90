"""Echo State Network fitted Q iteration (P-fqi §3.2, Algorithm 1).

Given the transitions in arrival order, repeat: build the pattern set
``input_l = (s_l, a_l)``, ``target_l = r_l + γ max_b Q_k(s'_l, b)``, and train
``Q_{k+1}`` on it.  P-fqi writes the algorithm with a cost ``c`` and ``min_b``; with
the rewards of P-grid (utilities in [0, 1], higher is better) it is the same algorithm
with ``max_b`` (c = −r).  With the ESN, "training" is the ridge re-fit of the read-out
on reservoir states driven by the transitions in arrival order (Jaeger 2003), so the
Q-function can use the memory of the decision process.

Online form: the learner runs ``iterations`` fitted-Q iterations at every re-fit,
starting from the current Q (the previous re-fit's result) rather than from a fresh
network — the same fixed point, far fewer iterations as the sample set grows.  The max
over ``b`` is taken over the candidate rows stored with the next decision (the chosen
action plus up to ``n_candidates − 1`` other distinct pending jobs; see
:meth:`BatchLearner._candidate_rows`).

Defaults: γ = 0.8 and ε = 0.05 as in P-grid §4.1 (P-fqi does not restate them);
``iterations = 5``, ``refit_every = 50`` and ``n_candidates = 16`` are ours.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rlsched.core.approximators.base import QFunction
from rlsched.core.learners.base import BatchLearner
from rlsched.core.view import FloatArray

#: Transitions whose next-state candidates are evaluated per block (bounds the float64 copy).
_CHUNK = 4096


class FittedQLearner(BatchLearner):
    """ESN-FQ (P-fqi Alg. 1), usable with any :class:`QFunction` (the FFNN for the "NN" rows)."""

    kind = "fqi"

    def __init__(
        self,
        q: QFunction,
        *,
        gamma: float = 0.8,
        epsilon: float = 0.05,
        iterations: int = 5,
        refit_every: int = 50,
        n_candidates: int = 16,
        max_transitions: int | None = None,
        seed: int | np.random.Generator = 0,
    ) -> None:
        if iterations < 1:
            raise ValueError(f"fqi: iterations must be ≥ 1, got {iterations}")
        if n_candidates < 1:
            raise ValueError(f"fqi: n_candidates must be ≥ 1, got {n_candidates}")
        super().__init__(
            q,
            gamma=gamma,
            epsilon=epsilon,
            refit_every=refit_every,
            n_candidates=n_candidates,
            max_transitions=max_transitions,
            seed=seed,
        )
        self.iterations = iterations

    def _default_sweeps(self) -> int:
        return self.iterations

    def next_state_values(self, ready: np.ndarray) -> FloatArray:
        """``max_b Q(s'_t, b)`` for each ready transition ``t`` (its next decision's candidates)."""
        out = np.empty(ready.size)
        k = self.memory.n_candidates
        for start in range(0, ready.size, _CHUNK):  # bounded memory: candidates are stored as float32
            nxt = ready[start : start + _CHUNK] + 1
            cand = self.memory.candidates[nxt]  # (m, K, d)
            m, _, d = cand.shape
            values = self.q.predict(cand.reshape(m * k, d).astype(np.float64)).reshape(m, k)
            values[np.arange(k)[None, :] >= self.memory.candidate_counts[nxt][:, None]] = -np.inf
            best = values.max(axis=1)
            out[start : start + m] = np.where(np.isfinite(best), best, 0.0)
        return out

    def targets(self, ready: np.ndarray) -> FloatArray:
        return self.memory.rewards[ready] + self.gamma * self.next_state_values(ready)

    def hyper_parameters(self) -> dict[str, Any]:
        return {**super().hyper_parameters(), "iterations": self.iterations}
