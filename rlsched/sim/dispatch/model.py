"""The heterogeneous-units model of Tong et al. (2014, §4.1, Fig. 2) and its event loop.

``n`` processing units each serve a FCFS local queue, non-preemptively; a task of type
``i`` is served by unit ``j`` in ``work / mu_true[i, j]`` hours.  A single scheduler takes
tasks from the arrival queue and puts each one in a unit's local queue, either as soon as
it arrives (online mode: ECT, random, the queueing-model optimiser, Q-learning) or once a
batch of tasks has gathered (batch mode: Min-Min, Max-Min, Suffrage; Tong §2).

Response time (Tong §3.2 and §4.1) = scheduling delay (time in the arrival queue, waiting
for the batch to fill and for the scheduler to compute) + waiting in the local queue +
service.  The scheduler's own computing time is modelled by :class:`SchedulerCost`
(zero by default, which is the paper's μ ≫ λ assumption); when it is non-zero the scheduler
is a single server and decisions queue behind each other.

Because units are FCFS and non-preemptive, a task's start and completion are fixed the
moment it is dispatched; the loop only needs a heap of completions, popped in time order
before each decision, to (a) deliver rewards to learning policies at the time they would be
observed and (b) show policies what every unit still holds (the queue contents a grid
information service reports, Tong §2).  Estimated ready times use the *estimated* service
rates ``mu_est`` (what a heuristic believes), never the realised service times.

All times are in hours, as in the paper.
"""

from __future__ import annotations

import heapq
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from rlsched.core.view import FloatArray, IntArray


@dataclass(frozen=True)
class Flow:
    """Tasks in arrival order: arrival time (h), type index and work (service = work / rate)."""

    arrival_h: FloatArray
    task_type: IntArray
    work: FloatArray
    name: str = "flow"

    def __post_init__(self) -> None:
        n = len(self.arrival_h)
        if len(self.task_type) != n or len(self.work) != n:
            raise ValueError(
                f"flow {self.name!r}: arrival/type/work lengths differ ({n}, {len(self.task_type)}, {len(self.work)})"
            )
        if n and np.any(np.diff(self.arrival_h) < 0):
            raise ValueError(f"flow {self.name!r}: arrivals are not sorted")
        if n and (np.any(self.work < 0) or not np.all(np.isfinite(self.work))):
            raise ValueError(f"flow {self.name!r}: work must be finite and non-negative")

    def __len__(self) -> int:
        return len(self.arrival_h)

    @property
    def n_types(self) -> int:
        return int(self.task_type.max()) + 1 if len(self) else 0


@dataclass(frozen=True)
class Units:
    """The processing units: true service rates and the rates the heuristics believe.

    Both are ``[type, unit]`` matrices in tasks/hour (Tong Table 2: μ_ij).
    """

    mu_true: FloatArray
    mu_est: FloatArray | None = None

    def __post_init__(self) -> None:
        if self.mu_true.ndim != 2 or np.any(self.mu_true <= 0):
            raise ValueError(f"service rates must be a positive [type, unit] matrix, got shape {self.mu_true.shape}")
        if self.mu_est is not None and (self.mu_est.shape != self.mu_true.shape or np.any(self.mu_est <= 0)):
            raise ValueError(f"estimated rates: shape {self.mu_est.shape} or non-positive values")

    @property
    def n_types(self) -> int:
        return int(self.mu_true.shape[0])

    @property
    def n_units(self) -> int:
        return int(self.mu_true.shape[1])

    @property
    def expected_service_h(self) -> FloatArray:
        """What a scheduler expects a task of type i to take on unit j: 1/μ̂_ij."""
        return 1.0 / (self.mu_true if self.mu_est is None else self.mu_est)


@dataclass(frozen=True)
class SchedulerCost:
    """The scheduler's computing time per decision: ``per_decision_h + per_pair_h · pairs``.

    ``pairs`` is the number of (task, unit) completion-time evaluations the policy makes
    (Tong §3.1, §5.2(B): O(n) per task online, O(b²·n) per batch of b for Min-Min & co).
    """

    per_decision_h: float = 0.0
    per_pair_h: float = 0.0

    @property
    def free(self) -> bool:
        return self.per_decision_h == 0.0 and self.per_pair_h == 0.0


class UnitsState:
    """What a policy may see when it decides: estimated ready times of every unit."""

    def __init__(self, units: Units) -> None:
        self.units = units
        n = units.n_units
        self.expected_service_h = units.expected_service_h
        self.unfinished = np.zeros(n, dtype=np.int64)
        self.backlog_est_h = np.zeros(n)  # sum of expected service of unfinished tasks
        self.head_start_h = np.zeros(n)  # start of the task now in service
        self.head_est_h = np.zeros(n)  # its expected service

    def ready_est_h(self, now_h: float) -> FloatArray:
        """When each unit is expected to be free of its current work, seen at ``now_h``.

        The task in service is expected to end at start + expected service (or now, if it
        is overdue); queued tasks add their expected service.
        """
        busy_until = np.maximum(now_h, self.head_start_h + self.head_est_h) + (self.backlog_est_h - self.head_est_h)
        return np.where(self.unfinished > 0, busy_until, now_h)


class OnlinePolicy(Protocol):
    """Assigns each task when it arrives."""

    name: str

    def assign(self, task: int, task_type: int, now_h: float, state: UnitsState) -> int: ...

    def completed(self, task: int, response_h: float) -> None: ...

    def pairs_per_decision(self, n_units: int) -> int: ...


class BatchPolicy(Protocol):
    """Assigns a batch of tasks at once; returns (batch positions in mapping order, units)."""

    name: str
    batch_size: int

    def assign_batch(
        self, types: IntArray, arrivals_h: FloatArray, now_h: float, state: UnitsState
    ) -> tuple[IntArray, IntArray]: ...


@dataclass
class RunResult:
    """Per-task outcome of one run of one policy on one flow (hours)."""

    policy: str
    flow: str
    arrival_h: FloatArray
    dispatch_h: FloatArray
    start_h: FloatArray
    end_h: FloatArray
    unit: IntArray
    decision_wall_s: float = 0.0
    decisions: int = 0
    #: Q-learning only, when recorded: the Q row of one type after every update (Fig. 3).
    q_history: FloatArray | None = None

    @property
    def response_h(self) -> FloatArray:
        return self.end_h - self.arrival_h

    @property
    def scheduling_delay_h(self) -> FloatArray:
        return self.dispatch_h - self.arrival_h

    @property
    def local_wait_h(self) -> FloatArray:
        return self.start_h - self.dispatch_h

    def mean_response_h(self, start: int = 0, stop: int | None = None) -> float:
        """Mean response time of tasks ``start..stop`` in arrival order (Tong: a window of tasks)."""
        window = self.response_h[start:stop]
        if len(window) == 0:
            raise ValueError(f"{self.policy} on {self.flow}: empty measurement window {start}:{stop}")
        return float(window.mean())


def simulate(
    flow: Flow, units: Units, policy: OnlinePolicy | BatchPolicy, cost: SchedulerCost | None = None
) -> RunResult:
    """Run ``policy`` on ``flow`` and return every task's dispatch, start and completion time."""
    if len(flow) and flow.n_types > units.n_types:
        raise ValueError(f"flow {flow.name!r} has {flow.n_types} task types, units know {units.n_types}")
    loop = _EventLoop(flow, units, cost or SchedulerCost())
    online = not hasattr(policy, "batch_size")
    # When a learning policy hears about a task's response time: when the task completes
    # (what a live system can do, Tong §5.2(A)) or right after it is placed, which only a
    # simulator can offer (FCFS fixes the completion at dispatch), see ``feedback_at``.
    feedback_at = getattr(policy, "feedback_at", "completion")
    if feedback_at not in ("completion", "dispatch"):
        raise ValueError(f"policy {policy.name}: feedback_at={feedback_at!r}, expected 'completion' or 'dispatch'")
    if online:
        loop.run_online(policy, feedback_at)  # type: ignore[arg-type]
    else:
        loop.run_batches(policy)  # type: ignore[arg-type]
    loop.drain(np.inf)
    return RunResult(
        policy.name,
        flow.name,
        loop.arrival,
        loop.dispatch,
        loop.start,
        loop.end,
        loop.assigned,
        loop.wall,
        loop.decisions,
    )


class _EventLoop:
    """One run of :func:`simulate`: the units' FCFS queues, the heap of completions, the per-task results."""

    def __init__(self, flow: Flow, units: Units, cost: SchedulerCost) -> None:
        n_tasks, n_units = len(flow), units.n_units
        self.cost, self.n_units = cost, n_units
        self.arrival = np.asarray(flow.arrival_h, dtype=np.float64)
        self.types = np.asarray(flow.task_type, dtype=np.int64)
        # Realised service on every unit is drawn once per task (work), so every policy sees
        # the same service demand: service_ij = work / mu_true[type, j].
        self.work = np.asarray(flow.work, dtype=np.float64)
        self.mu_true = units.mu_true
        self.dispatch = np.full(n_tasks, np.nan)
        self.start = np.full(n_tasks, np.nan)
        self.end = np.full(n_tasks, np.nan)
        self.assigned = np.full(n_tasks, -1, dtype=np.int64)
        self.expected = np.zeros(n_tasks)
        self.state = UnitsState(units)
        self.free_at = np.zeros(n_units)  # when each unit finishes everything it has been given
        self.queues: list[deque[int]] = [deque() for _ in range(n_units)]
        self.completions: list[tuple[float, int]] = []
        #: Told each task's response time when it completes (a learning policy's ``completed``), or None.
        self.notify_on_completion: Callable[[int, float], None] | None = None
        self.scheduler_free = 0.0
        self.wall = 0.0
        self.decisions = 0

    def drain(self, until_h: float) -> None:
        """Pop every completion up to ``until_h``: update what units hold, deliver rewards."""
        completions, state, queues = self.completions, self.state, self.queues
        while completions and completions[0][0] <= until_h:
            _, task = heapq.heappop(completions)
            u = int(self.assigned[task])
            queue = queues[u]
            queue.popleft()
            state.unfinished[u] -= 1
            state.backlog_est_h[u] -= self.expected[task]
            if queue:
                head = queue[0]
                state.head_start_h[u] = self.start[head]
                state.head_est_h[u] = self.expected[head]
            else:
                state.backlog_est_h[u] = 0.0  # clear rounding drift
            if self.notify_on_completion is not None:
                self.notify_on_completion(task, float(self.end[task] - self.arrival[task]))

    def place(self, task: int, u: int, at_h: float) -> None:
        """Put ``task`` at the end of unit ``u``'s FCFS queue at ``at_h``: its start and end are fixed now."""
        state = self.state
        s = max(at_h, self.free_at[u])
        e = s + self.work[task] / self.mu_true[self.types[task], u]
        self.dispatch[task], self.start[task], self.end[task], self.assigned[task] = at_h, s, e, u
        self.free_at[u] = e
        self.expected[task] = state.expected_service_h[self.types[task], u]
        if not self.queues[u]:
            state.head_start_h[u] = s
            state.head_est_h[u] = self.expected[task]
        self.queues[u].append(task)
        state.unfinished[u] += 1
        state.backlog_est_h[u] += self.expected[task]
        heapq.heappush(self.completions, (e, task))

    def _decision_time(self, ready_h: float) -> float:
        """When the scheduler decides about work ready at ``ready_h`` (after its previous decision unless
        deciding is free), every completion up to then delivered."""
        now = ready_h
        if not self.cost.free:
            now = max(now, self.scheduler_free)
        self.drain(now)
        return now

    def run_online(self, policy: OnlinePolicy, feedback_at: str) -> None:
        """Each task placed on its arrival, as ``policy`` chooses."""
        n_units, types, arrival = self.n_units, self.types, self.arrival
        if feedback_at == "completion":
            self.notify_on_completion = policy.completed
        pairs = policy.pairs_per_decision(n_units)
        decision_cost = self.cost.per_decision_h + self.cost.per_pair_h * pairs
        for task in range(len(arrival)):
            now = self._decision_time(float(arrival[task]))
            t0 = time.perf_counter()
            u = policy.assign(task, int(types[task]), now, self.state)
            self.wall += time.perf_counter() - t0
            self.decisions += 1
            if not 0 <= u < n_units:
                raise ValueError(f"policy {policy.name} chose unit {u} of {n_units}")
            at = now + decision_cost
            self.scheduler_free = at
            self.place(task, u, at)
            if feedback_at == "dispatch":
                policy.completed(task, float(self.end[task] - arrival[task]))

    def run_batches(self, policy: BatchPolicy) -> None:
        """Tasks mapped ``policy.batch_size`` at a time, when the batch's last task arrives."""
        n_tasks, n_units, types, arrival = len(self.arrival), self.n_units, self.types, self.arrival
        batch_size = int(policy.batch_size)
        for first in range(0, n_tasks, batch_size):
            batch = np.arange(first, min(first + batch_size, n_tasks))
            # The batch is scheduled when its last task arrives (a final partial batch too).
            now = self._decision_time(float(arrival[batch[-1]]))
            t0 = time.perf_counter()
            order, chosen = policy.assign_batch(types[batch], arrival[batch], now, self.state)
            self.wall += time.perf_counter() - t0
            self.decisions += 1
            if sorted(order.tolist()) != list(range(len(batch))):
                raise ValueError(f"policy {policy.name} did not map every task of the batch once")
            b = len(batch)
            at = now + self.cost.per_decision_h + self.cost.per_pair_h * (b * (b + 1) // 2) * n_units
            self.scheduler_free = at
            for pos, u in zip(order.tolist(), chosen.tolist(), strict=True):
                self.place(int(batch[pos]), int(u), at)
