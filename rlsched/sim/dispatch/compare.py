"""Run the seven policies of Tong §6.3 on one flow with common random numbers.

Every policy gets its own random stream, spawned from one seed in a fixed order, so adding
or removing a policy never changes the draws of another; all of them see the same flow.
"""

from __future__ import annotations

import numpy as np

from rlsched.core.dispatch import DEFAULT_EPSILON, DEFAULT_GAMMA, RewardKind
from rlsched.core.policies import DISPATCH_POLICIES
from rlsched.core.view import FloatArray
from rlsched.sim.dispatch.model import (
    BatchPolicy,
    Flow,
    OnlinePolicy,
    RunResult,
    SchedulerCost,
    Units,
    simulate,
)
from rlsched.sim.dispatch.policies import (
    DEFAULT_BATCH_SIZE,
    ECT,
    BatchHeuristic,
    BatchRule,
    FeedbackAt,
    ProbabilisticDispatch,
    QLearning,
    RandomDispatch,
)

#: The policies (the registry's :data:`rlsched.core.policies.DISPATCH_POLICIES`): Tong Figs. 8–11's
#: order, then the learner variants; each policy's random stream is spawned by its position.
#:
#: - ``qlearning``: Algorithm 1 as published (reward 1/response), learning from a task's
#:   response as soon as it is placed (the reading of Alg. 1's loop, see ``QLearning``);
#: - ``qlearning-delayed``: the same, learning when the task completes (what a live system can do);
#: - ``qlearning-neg`` / ``qlearning-neg-delayed``: our variant, reward −response time.
POLICIES: tuple[str, ...] = DISPATCH_POLICIES
#: Learner policy name → (reward, when the response is reported).
LEARNERS: dict[str, tuple[RewardKind, FeedbackAt]] = {
    "qlearning": ("inverse", "dispatch"),
    "qlearning-delayed": ("inverse", "completion"),
    "qlearning-neg": ("negative", "dispatch"),
    "qlearning-neg-delayed": ("negative", "completion"),
}


def make_policy(
    name: str,
    units: Units,
    rng: np.random.Generator,
    *,
    nlp_probs: FloatArray | None = None,
    epsilon: float | None = None,
    gamma: float | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    record: bool = False,
) -> OnlinePolicy | BatchPolicy:
    """Build one named policy for ``units``; ``nlp`` needs the allocation of Eq. 11."""
    if name in LEARNERS:
        reward, feedback_at = LEARNERS[name]
        return QLearning(
            units.n_types,
            units.n_units,
            rng,
            record=record,
            epsilon=DEFAULT_EPSILON if epsilon is None else epsilon,
            gamma=DEFAULT_GAMMA if gamma is None else gamma,
            reward=reward,
            feedback_at=feedback_at,
        )
    if name == "nlp":
        if nlp_probs is None:
            raise ValueError("policy 'nlp' needs the allocation probabilities of Eq. 11")
        return ProbabilisticDispatch(nlp_probs, rng)
    if name == "ect":
        return ECT()
    if name in ("min-min", "max-min", "suffrage"):
        rule: BatchRule = name  # type: ignore[assignment]
        return BatchHeuristic(rule, batch_size)
    if name == "random":
        return RandomDispatch(units.n_units, rng)
    raise ValueError(f"unknown policy {name!r}; expected one of {', '.join(POLICIES)}")


def run_policies(
    flow: Flow,
    units: Units,
    names: tuple[str, ...],
    seed: int | np.random.SeedSequence,
    *,
    nlp_probs: FloatArray | None = None,
    epsilon: float | None = None,
    gamma: float | None = None,
    cost: SchedulerCost | None = None,
    record: bool = False,
) -> dict[str, RunResult]:
    """Simulate each named policy on ``flow``; returns results by policy name."""
    seq = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    streams = dict(zip(POLICIES, seq.spawn(len(POLICIES)), strict=True))
    out = {}
    for name in names:
        if name not in streams:
            raise ValueError(f"unknown policy {name!r}; expected one of {', '.join(POLICIES)}")
        policy = make_policy(
            name,
            units,
            np.random.default_rng(streams[name]),
            nlp_probs=nlp_probs,
            epsilon=epsilon,
            gamma=gamma,
            record=record,
        )
        result = simulate(flow, units, policy, cost)
        if isinstance(policy, QLearning) and record:
            result.q_history = np.array(policy.history)
        out[name] = result
    return out
