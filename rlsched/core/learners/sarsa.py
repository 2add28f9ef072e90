"""SARSA with an approximated Q-function, delayed rewards and batch re-fits (P-grid §3.1–3.3).

P-grid Alg. 1 updates ``Q(s, a) ← Q(s, a) + η [r + γ Q(s', a') − Q(s, a)]``, where ``a'`` is
the action actually chosen next (on-policy).  With a function approximator, "the simple
assignment [...] must be replaced by a learning procedure"; P-grid uses batch
re-learning on the whole training set.  Here every re-fit regresses the Q-function on

    y_t = Q(z_t) + η [r_t + γ Q(z_{t+1}) − Q(z_t)]

for every ready transition ``t`` (``z_t`` the design row of decision ``t``, ``z_{t+1}``
that of the next decision), with ``Q`` the current model.  Each re-fit is therefore one
SARSA step of size η applied to all stored transitions at once; repeated re-fits
converge to the on-policy fixed point ``Q = r + γ Q'`` of the ε-greedy policy.  Rewards
are delayed: transition ``t`` enters the regression only once its job has finished.

Defaults from P-grid §4.1: ε = 0.05, γ = 0.8, η = 0.2.  ``refit_every = 10`` is ours (the
paper re-trains after every new example; with the cached Gram matrix a re-fit of the
ESN read-out costs one product over the stored rows, so 1 is affordable too).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rlsched.core.approximators.base import QFunction
from rlsched.core.learners.base import BatchLearner
from rlsched.core.view import FloatArray


class SarsaLearner(BatchLearner):
    """Batch SARSA(0): ε-greedy, delayed rewards, damped re-fits toward the TD target."""

    kind = "sarsa"

    def __init__(
        self,
        q: QFunction,
        *,
        gamma: float = 0.8,
        epsilon: float = 0.05,
        eta: float = 0.2,
        refit_every: int = 10,
        max_transitions: int | None = None,
        seed: int | np.random.Generator = 0,
    ) -> None:
        super().__init__(
            q,
            gamma=gamma,
            epsilon=epsilon,
            refit_every=refit_every,
            n_candidates=0,
            max_transitions=max_transitions,
            seed=seed,
        )
        if not 0.0 < eta <= 1.0:
            raise ValueError(f"sarsa: learning rate eta must lie in (0, 1], got {eta}")
        self.eta = eta

    def targets(self, ready: np.ndarray) -> FloatArray:
        q_all = self.q.predict(self.memory.rows)
        q_now = q_all[ready]
        td_target = self.memory.rewards[ready] + self.gamma * q_all[ready + 1]
        return q_now + self.eta * (td_target - q_now)

    def hyper_parameters(self) -> dict[str, Any]:
        return {**super().hyper_parameters(), "eta": self.eta}
