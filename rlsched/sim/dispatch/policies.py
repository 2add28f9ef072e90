"""Dispatch policies for the heterogeneous-units model (Tong et al., 2014, §2, §5, §6).

Online (one task at a time, on arrival): the Q-learning dispatcher of the decision core
(Algorithm 1), ECT (earliest completion time, ref. [30]), random (uniform over units, the
baseline of Figs. 8–9) and the queueing-model optimiser (Algorithm 2: dispatch with the
probabilities of Eq. 11).

Batch (every ``batch_size`` = 10 tasks, §6.3): Min-Min, Max-Min (the paper's "Min–Max")
and Suffrage (refs. [3, 6, 19]).  All three work on the estimated *processing time* of a
task on a unit, PT_ij = (time already spent in the arrival queue) + (wait for the unit) +
(expected execution), because Tong §6.3 replaces completion time by processing time "for a
fair comparison".  Each repeatedly maps one task of the batch to the unit of its minimum
PT, then updates that unit's ready time:

- Min-Min maps the task whose minimum PT is smallest;
- Max-Min maps the task whose minimum PT is largest;
- Suffrage maps the task that would suffer most if denied its best unit, i.e. with the
  largest gap between its second-best and best PT (Tong §2; Maheswaran et al. [19]).

Tasks enter their units' FCFS queues in mapping order.  Heuristics see the rates they
believe (``Units.mu_est``), never the realised service times.
"""

from __future__ import annotations

import bisect
from typing import Literal

import numpy as np

from rlsched.core.dispatch import DEFAULT_EPSILON, DEFAULT_GAMMA, QLearningDispatcher, RewardKind
from rlsched.core.view import FloatArray, IntArray
from rlsched.sim.dispatch.model import UnitsState

BatchRule = Literal["min-min", "max-min", "suffrage"]
BATCH_RULES: tuple[BatchRule, ...] = ("min-min", "max-min", "suffrage")
#: Tong §6.3: "The batch size for Min–Min, Min–Max, and Suffrage is 10 tasks."
DEFAULT_BATCH_SIZE = 10


def least_loaded_argmin(cost: FloatArray, queued: IntArray) -> IntArray:
    """Per row of ``cost[task, unit]``, the unit of least cost; exact ties go to the unit
    holding the fewest unfinished tasks (``queued``), then to the lower index.

    The tie rule matters on homogeneous units (the LPC CPUs): a unit whose running task has
    outlived its expected service is estimated free *now*, exactly like an idle unit, and
    a lowest-index rule would then queue the task behind the overdue one although the
    scheduler can see (Tong §2, "on-time information") that another unit is idle.
    """
    cost = np.atleast_2d(cost)
    tied = cost == cost.min(axis=1, keepdims=True)
    load = np.where(tied, np.asarray(queued, dtype=np.float64)[None, :], np.inf)
    return load.argmin(axis=1).astype(np.int64)


def map_batch(
    rule: BatchRule, ready_h: FloatArray, exec_h: FloatArray, arrival_h: FloatArray, queued: IntArray | None = None
) -> tuple[IntArray, IntArray]:
    """Map a batch by ``rule``: returns (batch positions in mapping order, unit of each).

    ``ready_h[j]`` is when unit ``j`` is expected to be free, ``exec_h[i, j]`` the expected
    execution of task ``i`` on unit ``j``, ``arrival_h[i]`` the task's arrival (the
    processing time PT_ij = ready_j + exec_ij − arrival_i).  ``queued[j]`` is the number
    of unfinished tasks unit ``j`` holds (zero if not given): a task whose best PT ties on
    several units goes to the one holding fewest tasks (counting those this batch has
    mapped there), then to the lower index (:func:`least_loaded_argmin`).
    """
    ready = np.array(ready_h, dtype=np.float64)
    exec_h = np.asarray(exec_h, dtype=np.float64)
    b, n = exec_h.shape
    if ready.shape != (n,) or np.shape(arrival_h) != (b,):
        raise ValueError(f"map_batch: ready {ready.shape}, exec {exec_h.shape}, arrival {np.shape(arrival_h)}")
    held = np.zeros(n, dtype=np.int64) if queued is None else np.array(queued, dtype=np.int64)
    if held.shape != (n,):
        raise ValueError(f"map_batch: queued {held.shape}, expected ({n},)")
    remaining = np.arange(b)
    order = np.empty(b, dtype=np.int64)
    units = np.empty(b, dtype=np.int64)
    for step in range(b):
        pt = ready[None, :] + exec_h[remaining] - np.asarray(arrival_h)[remaining, None]
        best_unit = least_loaded_argmin(pt, held)
        best_pt = pt[np.arange(len(remaining)), best_unit]
        if rule == "min-min":
            pick = int(best_pt.argmin())
        elif rule == "max-min":
            pick = int(best_pt.argmax())
        elif rule == "suffrage":
            if n == 1:
                pick = 0
            else:
                two = np.partition(pt, 1, axis=1)[:, :2]
                pick = int((two[:, 1] - two[:, 0]).argmax())
        else:
            raise ValueError(f"unknown batch rule {rule!r}; expected one of {', '.join(BATCH_RULES)}")
        task, unit = int(remaining[pick]), int(best_unit[pick])
        order[step], units[step] = task, unit
        ready[unit] += exec_h[task, unit]
        held[unit] += 1
        remaining = np.delete(remaining, pick)
    return order, units


class BatchHeuristic:
    """Min-Min, Max-Min or Suffrage over batches of ``batch_size`` tasks (a BatchPolicy)."""

    def __init__(self, rule: BatchRule, batch_size: int = DEFAULT_BATCH_SIZE) -> None:
        if rule not in BATCH_RULES:
            raise ValueError(f"unknown batch rule {rule!r}; expected one of {', '.join(BATCH_RULES)}")
        if batch_size < 1:
            raise ValueError(f"batch size {batch_size} must be at least 1")
        self.name: str = rule
        self.rule: BatchRule = rule
        self.batch_size = batch_size

    def assign_batch(
        self, types: IntArray, arrivals_h: FloatArray, now_h: float, state: UnitsState
    ) -> tuple[IntArray, IntArray]:
        return map_batch(
            self.rule, state.ready_est_h(now_h), state.expected_service_h[types], arrivals_h, state.unfinished
        )


class ECT:
    """Earliest completion time: each task to the unit where it is expected to finish first.

    Exact ties go to the unit holding fewest unfinished tasks (:func:`least_loaded_argmin`).
    """

    name = "ect"

    def assign(self, task: int, task_type: int, now_h: float, state: UnitsState) -> int:
        completion = state.ready_est_h(now_h) + state.expected_service_h[task_type]
        return int(least_loaded_argmin(completion, state.unfinished)[0])

    def completed(self, task: int, response_h: float) -> None:
        return None

    def pairs_per_decision(self, n_units: int) -> int:
        return n_units


class RandomDispatch:
    """Every task to a unit drawn uniformly (Tong §6.3.1 baseline)."""

    name = "random"

    def __init__(self, n_units: int, rng: np.random.Generator) -> None:
        self.n_units = n_units
        self.rng = rng

    def assign(self, task: int, task_type: int, now_h: float, state: UnitsState) -> int:
        return int(self.rng.integers(self.n_units))

    def completed(self, task: int, response_h: float) -> None:
        return None

    def pairs_per_decision(self, n_units: int) -> int:
        return 1


class ProbabilisticDispatch:
    """Algorithm 2 at run time: a task of type i goes to unit j with probability ``probs[i, j]``."""

    name = "nlp"

    def __init__(self, probs: FloatArray, rng: np.random.Generator) -> None:
        probs = np.asarray(probs, dtype=np.float64)
        if probs.ndim != 2 or not np.allclose(probs.sum(axis=1), 1.0) or np.any(probs < -1e-12):
            raise ValueError("allocation probabilities must be a [type, unit] matrix of simplex rows")
        self.cumulative = [list(np.cumsum(row)) for row in probs]
        self.rng = rng

    def assign(self, task: int, task_type: int, now_h: float, state: UnitsState) -> int:
        row = self.cumulative[task_type]
        return min(bisect.bisect_right(row, self.rng.random() * row[-1]), len(row) - 1)

    def completed(self, task: int, response_h: float) -> None:
        return None

    def pairs_per_decision(self, n_units: int) -> int:
        return 1


FeedbackAt = Literal["dispatch", "completion"]


def learner_name(reward: RewardKind, feedback_at: FeedbackAt) -> str:
    """Policy name of a learner variant: ``qlearning[-neg][-delayed]``."""
    return "qlearning" + ("-neg" if reward == "negative" else "") + ("-delayed" if feedback_at == "completion" else "")


class QLearning:
    """The decision core's :class:`QLearningDispatcher` as a simulator policy.

    ``feedback_at`` says when the learner hears a task's response time:

    - ``"dispatch"`` (default): as soon as the task is placed.  With FCFS non-preemptive
      units the simulator knows the completion then, and this is how Algorithm 1 reads: a
      loop in which step (3) learns from R(t_i, b_ij) before "goto (2)" places the next
      task; §5.2(C) names "delaying updating and learning" as a deployment option with
      "slower convergence", so the evaluated algorithm does not delay; and §5.1/§6.4 say
      the immediate reward carries "the load on each processing unit", so that with γ = 0
      the learner "becomes the ECT algorithm".  Only a simulator can offer it: the response
      includes the realised service times of the tasks queued ahead.
    - ``"completion"``: when the task completes, the only timing a live system has
      (§5.2(A)); the policy is then called ``…-delayed``.

    With ``record=True`` the Q row of ``record_type`` is kept after every update
    (Fig. 3: the convergence of Q(t_1, ·)).  ``reward="negative"`` selects our variant
    (reward −response time; see :mod:`rlsched.core.dispatch`).
    """

    def __init__(
        self,
        n_types: int,
        n_units: int,
        rng: np.random.Generator,
        *,
        epsilon: float = DEFAULT_EPSILON,
        gamma: float = DEFAULT_GAMMA,
        reward: RewardKind = "inverse",
        feedback_at: FeedbackAt = "dispatch",
        record: bool = False,
        record_type: int = 0,
    ) -> None:
        if feedback_at not in ("dispatch", "completion"):
            raise ValueError(f"feedback_at={feedback_at!r}, expected 'dispatch' or 'completion'")
        self.name = learner_name(reward, feedback_at)
        self.feedback_at: FeedbackAt = feedback_at
        self.agent = QLearningDispatcher(n_types, n_units, epsilon=epsilon, gamma=gamma, rng=rng, reward=reward)
        self.record = record
        self.record_type = record_type
        self.history: list[FloatArray] = []
        self._seen_updates = 0

    def _snapshot(self) -> None:
        if self.record and self.agent.updates != self._seen_updates:
            self._seen_updates = self.agent.updates
            self.history.append(self.agent.q[self.record_type].copy())

    def assign(self, task: int, task_type: int, now_h: float, state: UnitsState) -> int:
        unit = self.agent.dispatch(task, task_type)
        self._snapshot()
        return unit

    def completed(self, task: int, response_h: float) -> None:
        # A zero service time (possible in a replay) would make the reward infinite.
        self.agent.complete(task, max(response_h, 1e-9))
        self._snapshot()

    def pairs_per_decision(self, n_units: int) -> int:
        return n_units


def convergence_iteration(history: FloatArray, tolerance: float = 0.05, horizon: int = 100) -> int | None:
    """Tong Table 4 criterion: the first iteration after which Q moves by less than 5 %
    (relative, every entry) over the following one hundred iterations; None if never.

    ``history`` is ``[iteration, unit]`` (or ``[iteration, ...]``), one row per update.
    """
    h = np.asarray(history, dtype=np.float64).reshape(len(history), -1)
    if len(h) <= horizon:
        return None
    scale = np.maximum(np.abs(h), 1e-12)
    for it in range(len(h) - horizon):
        window = h[it + 1 : it + 1 + horizon]
        if np.all(np.abs(window - h[it]) <= tolerance * scale[it]):
            return it
    return None
