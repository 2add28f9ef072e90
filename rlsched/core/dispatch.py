"""Q-learning dispatch of typed tasks to heterogeneous units (Tong et al., 2014, §4.2–§5).

The MDP of Tong §4.2: the state is the type ``t_i`` of the task to place, the action is
the unit ``PU_j`` it goes to, and the immediate reward is the reciprocal of the task's
response time (arrival to completion, both queues and scheduling included; §5.1).  The
next state is the type of the next task to arrive (the transition Γ depends only on the
type probabilities ρ_i, §4.2).

:class:`QLearningDispatcher` implements Algorithm 1:

- ε-greedy action selection with exploration probability ``p_e`` = 0.2 (§6);
- the update of Eq. (6), ``Q ← (1−α)·Q + α·(r + γ·V(t'))`` with ``V(t) = max_j Q(t, j)``;
- the learning rate of Eq. (7), ``α = 1 / (1 + visits(t_i, PU_j))``, where ``visits``
  counts the earlier updates of the pair (so the first update has α = 1);
- discount γ = 0.9 (§6, Fig. 12).

An update needs the response time of a task and the type of its successor.
:meth:`QLearningDispatcher.dispatch` and :meth:`QLearningDispatcher.complete` do that
bookkeeping: an update happens as soon as both are known, and an update that becomes
possible when the successor arrives is applied *before* the successor's unit is chosen
(Alg. 1 is a loop: step (3) learns from one allocation, then "goto (2)" chooses the next).
*When* the caller reports the response time is its choice: a live system can only do it
when the task completes (Tong §5.2(A)); a simulator of FCFS units knows it the moment the
task is placed, which is how Algorithm 1's synchronous loop reads (see
``rlsched.sim.dispatch.policies.QLearning`` and docs/tong.md).  The same object therefore serves the simulator
(:mod:`rlsched.sim.dispatch`) and a live router that sends jobs to partitions of different
speed: neither needs anything but task types, unit indices and response times.

Two documented departures are available, both off by default:

- ``reward="negative"`` uses −response time instead of 1/response time.  With exponential
  service times, E[1/response] is infinite (the density of a short response does not vanish
  at 0), so sample means of 1/response are dominated by a few very short tasks and the
  Q-table of Algorithm 1 chases noise; −response has a finite mean and orders units the
  same way when responses are equal.  See docs/tong.md for what it changes.
- ``learning_rate`` replaces Eq. (7) by a constant α (tracking instead of averaging).

Times are in whatever unit the caller uses (the simulator uses hours, as the paper does);
rewards are 1/response in that unit.  Pure core code: no clock, no I/O, seeded randomness.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from rlsched.core.view import FloatArray, IntArray

#: Tong §6: "The exploring probability is p_e = 0.2".
DEFAULT_EPSILON = 0.2
#: Tong §6 and Fig. 12: "The discount factor is γ = 0.9".
DEFAULT_GAMMA = 0.9

RewardKind = Literal["inverse", "negative"]
REWARD_KINDS: tuple[RewardKind, ...] = ("inverse", "negative")


@dataclass
class _Pending:
    """A dispatched task whose update still lacks its reward or its successor's type."""

    task_type: int
    unit: int
    reward: float | None = None
    next_type: int | None = None


class QLearningDispatcher:
    """Tabular Q-learning over (task type, unit) pairs: Tong Algorithm 1.

    ``rng`` is a NumPy ``Generator`` or a seed; exploration and tie-breaking draw from it,
    so a run is reproducible under a seed.  Ties between equal Q-values (for instance the
    all-zero initial table, Alg. 1 step 1) are broken uniformly at random, so that no unit
    is favoured merely for its index.
    """

    def __init__(
        self,
        n_types: int,
        n_units: int,
        *,
        epsilon: float = DEFAULT_EPSILON,
        gamma: float = DEFAULT_GAMMA,
        rng: np.random.Generator | int | None = 0,
        reward: RewardKind = "inverse",
        learning_rate: float | None = None,
    ) -> None:
        if n_types < 1 or n_units < 1:
            raise ValueError(
                f"QLearningDispatcher: need at least one type and one unit, got n_types={n_types}, n_units={n_units}"
            )
        if not 0.0 <= epsilon <= 1.0:
            raise ValueError(f"QLearningDispatcher: epsilon={epsilon} outside [0, 1]")
        if not 0.0 <= gamma < 1.0:
            raise ValueError(f"QLearningDispatcher: gamma={gamma} outside [0, 1)")
        self.n_types = n_types
        self.n_units = n_units
        if reward not in REWARD_KINDS:
            raise ValueError(f"QLearningDispatcher: reward {reward!r} not one of {', '.join(REWARD_KINDS)}")
        if learning_rate is not None and not 0.0 < learning_rate <= 1.0:
            raise ValueError(f"QLearningDispatcher: learning_rate={learning_rate} outside (0, 1]")
        self.epsilon = float(epsilon)
        self.gamma = float(gamma)
        self.reward_kind: RewardKind = reward
        self.learning_rate = learning_rate
        self.rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
        # Alg. 1 step (1): Q_0 = 0 and visits = 0 for every pair.
        self.q: FloatArray = np.zeros((n_types, n_units), dtype=np.float64)
        self.visits: IntArray = np.zeros((n_types, n_units), dtype=np.int64)
        self.updates = 0
        self._pending: dict[int, _Pending] = {}
        self._last_dispatched: int | None = None

    # ------------------------------------------------------------------ policy
    def _check_type(self, task_type: int) -> None:
        if not 0 <= task_type < self.n_types:
            raise ValueError(f"QLearningDispatcher: task type {task_type} outside 0..{self.n_types - 1}")

    def greedy(self, task_type: int) -> int:
        """Eq. (5): the unit of largest Q for this type (ties at random)."""
        self._check_type(task_type)
        row = self.q[task_type]
        best = np.flatnonzero(row == row.max())
        return int(best[0]) if len(best) == 1 else int(best[self.rng.integers(len(best))])

    def choose(self, task_type: int) -> int:
        """Alg. 1 step (2): a uniformly random unit with probability ε, else the greedy one."""
        self._check_type(task_type)
        if self.rng.random() < self.epsilon:
            return int(self.rng.integers(self.n_units))
        return self.greedy(task_type)

    def value(self, task_type: int) -> float:
        """Eq. (4): V(t) = max_j Q(t, j)."""
        return float(self.q[task_type].max())

    # ---------------------------------------------------------------- learning
    def learn(self, task_type: int, unit: int, reward: float, next_type: int) -> float:
        """Alg. 1 steps (3)–(4): one update of Eq. (6) with α from Eq. (7); returns the new Q."""
        self._check_type(task_type)
        self._check_type(next_type)
        if not 0 <= unit < self.n_units:
            raise ValueError(f"QLearningDispatcher: unit {unit} outside 0..{self.n_units - 1}")
        if not np.isfinite(reward):
            raise ValueError(f"QLearningDispatcher: reward {reward} is not finite")
        visits = float(self.visits[task_type, unit])
        alpha = 1.0 / (1.0 + visits) if self.learning_rate is None else self.learning_rate
        target = reward + self.gamma * float(self.q[next_type].max())
        new_q = (1.0 - alpha) * float(self.q[task_type, unit]) + alpha * target
        self.q[task_type, unit] = new_q
        self.visits[task_type, unit] += 1
        self.updates += 1
        return new_q

    # ------------------------------------------------------- online bookkeeping
    def dispatch(self, task_id: int, task_type: int) -> int:
        """Choose a unit for a newly arrived task and remember the decision for learning.

        The type of this task is the next state of the previously dispatched one (Γ, §4.2).
        """
        if task_id in self._pending:
            raise ValueError(f"QLearningDispatcher: task {task_id} dispatched twice")
        self._check_type(task_type)
        # Alg. 1 runs step (3) (learning from the previous allocation) before it goes back to
        # step (2) for the next task: so the predecessor's update, if its reward is already
        # known, is applied *before* this task's unit is chosen, and the choice sees it.
        previous = self._last_dispatched
        if previous is not None and previous in self._pending:
            record = self._pending[previous]
            record.next_type = task_type
            self._maybe_learn(previous, record)
        unit = self.choose(task_type)
        self._pending[task_id] = _Pending(task_type, unit)
        self._last_dispatched = task_id
        return unit

    def complete(self, task_id: int, response_time: float) -> bool:
        """Report that a dispatched task finished after ``response_time`` (> 0) since arrival.

        The reward is 1/response_time (§5.1), or −response_time with ``reward="negative"``.
        Returns True when the update was applied now, False when it waits for the
        successor's type.  Unknown task ids raise ``KeyError``.
        """
        if task_id not in self._pending:
            raise KeyError(f"QLearningDispatcher: task {task_id} was not dispatched or already completed")
        if not response_time > 0.0 or not np.isfinite(response_time):
            raise ValueError(
                f"QLearningDispatcher: task {task_id}: response time {response_time} must be positive and finite"
            )
        record = self._pending[task_id]
        record.reward = 1.0 / response_time if self.reward_kind == "inverse" else -response_time
        return self._maybe_learn(task_id, record)

    def _maybe_learn(self, task_id: int, record: _Pending) -> bool:
        if record.reward is None or record.next_type is None:
            return False
        self.learn(record.task_type, record.unit, record.reward, record.next_type)
        del self._pending[task_id]
        return True

    @property
    def waiting_updates(self) -> int:
        """Dispatched tasks not learned from yet (running, or last in the flow)."""
        return len(self._pending)

    # ------------------------------------------------------------ checkpoints
    def state_dict(self) -> dict[str, Any]:
        """The learned table, counters and parameters as JSON-ready data (pending tasks excluded)."""
        return {
            "n_types": self.n_types,
            "n_units": self.n_units,
            "epsilon": self.epsilon,
            "gamma": self.gamma,
            "reward": self.reward_kind,
            "learning_rate": self.learning_rate,
            "q": self.q.tolist(),
            "visits": self.visits.tolist(),
            "updates": self.updates,
        }

    @classmethod
    def from_state_dict(cls, state: dict[str, Any], rng: np.random.Generator | int | None = 0) -> QLearningDispatcher:
        """Rebuild a dispatcher saved by :meth:`state_dict`."""
        try:
            agent = cls(
                int(state["n_types"]),
                int(state["n_units"]),
                epsilon=float(state["epsilon"]),
                gamma=float(state["gamma"]),
                rng=rng,
                reward=state.get("reward", "inverse"),
                learning_rate=state.get("learning_rate"),
            )
            q = np.asarray(state["q"], dtype=np.float64)
            visits = np.asarray(state["visits"], dtype=np.int64)
        except KeyError as err:
            raise ValueError(f"QLearningDispatcher state: missing key {err.args[0]!r}") from None
        if q.shape != agent.q.shape or visits.shape != agent.visits.shape:
            raise ValueError(
                f"QLearningDispatcher state: table shape {q.shape} / {visits.shape}, expected {agent.q.shape}"
            )
        agent.q = q
        agent.visits = visits
        agent.updates = int(state.get("updates", int(visits.sum())))
        return agent
