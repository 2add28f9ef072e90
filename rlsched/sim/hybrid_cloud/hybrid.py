"""The hybrid model of Fölling & Hofmann (FH §2.1–2.4): local EASY on M nodes plus capped cloud transfer.

Model (FH §2.3, exactly as published unless noted):

* The local machine runs EASY backfilling in FCFS order on ``M`` homogeneous nodes,
  with the same rules as :mod:`rlsched.sim.engine` (shadow time from the *requested*
  times of running jobs; every job ending by the shadow time counts in ``extra``).
* After each local scheduling pass the *transfer strategy* scans the queue in order
  and starts a waiting job in the cloud when it can start there immediately within
  the cap: ``cloud nodes in use + its size <= V`` (FH Fig. 2).  A job never spans
  local and cloud nodes; cloud nodes are as fast as local ones ("source-like
  performance", FH §2.3).  Running cloud jobs are never stopped when V shrinks.
* Cost = cloud CPU-seconds; an interval's cost is the cloud usage integrated over the
  interval (FH Fig. 3/4: the shaded parts of jobs that cross the interval's ends
  count in the neighbouring intervals).  Total wait (twt) is accrued the same way:
  ``∫ (jobs waiting) dt`` over the interval, so the per-day values add up to the
  trace's total wait.

Two points the paper leaves open, decided here and documented in docs/leasing.md:

* when a transfer empties the head of the queue, the local pass runs once more at
  the same instant (otherwise the local machine could idle until the next event,
  hours later); a second transfer pass can never move anything, because every job
  the scan refused still does not fit.  With ``V = 0`` nothing is ever transferred,
  so the model is *exactly* the engine's EASY (a test checks every start time);
* when a new V takes effect (the policy's period boundary) the transfer strategy runs
  at once, so a larger cap is used without waiting for the next submit or finish.

Speed: the whole dynamic state is a few short lists (queue, running local jobs,
running cloud jobs) — never an array over the whole workload — so cloning it for
every candidate V costs microseconds.  Each call of :meth:`HybridModel.advance`
also returns a *certificate*: the range ``[cap_lo, cap_hi]`` of caps under which
every transfer comparison of the step comes out the same, hence the step's whole
trajectory (and its twt and cost) is identical.  Evaluating all V of a day then
costs one simulation per distinct outcome, not per V (see :mod:`.evaluate`).
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left, bisect_right, insort
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from rlsched.core.view import FloatArray
from rlsched.sim.engine import (
    DEFAULT_OVERRUN,
    Overrun,
    easy_backfill,
    easy_reservation,
    effective_runtimes,
)
from rlsched.sim.workload import Workload

INF = math.inf

#: Sentinel for an unbounded cap (V → ∞, FH §2.4 ``c_ref``).
UNBOUNDED = 1 << 60


class HybridState:
    """The dynamic state of the hybrid system at one instant (cheap to copy).

    ``queue`` holds the rows of waiting jobs in FCFS order (rows are submit order, so
    the list stays sorted); ``qsizes`` their sizes, sorted; ``rexp``/``rjob`` the local
    running jobs sorted by expected end (start + requested time); ``lheap`` local
    finishes ``(end, row, expected end)``; ``cheap`` cloud finishes ``(end, row, cores)``.
    """

    __slots__ = ("cheap", "cloud_used", "free", "lheap", "next_submit", "now", "qsizes", "queue", "rexp", "rjob")

    def __init__(self, cores: int) -> None:
        self.now = 0.0
        self.next_submit = 0
        self.free = cores
        self.cloud_used = 0
        self.queue: list[int] = []
        self.qsizes: list[int] = []
        self.rexp: list[float] = []
        self.rjob: list[int] = []
        self.lheap: list[tuple[float, int, float]] = []
        self.cheap: list[tuple[float, int, int]] = []

    def copy(self) -> HybridState:
        other = HybridState.__new__(HybridState)
        other.now = self.now
        other.next_submit = self.next_submit
        other.free = self.free
        other.cloud_used = self.cloud_used
        other.queue = self.queue[:]
        other.qsizes = self.qsizes[:]
        other.rexp = self.rexp[:]
        other.rjob = self.rjob[:]
        other.lheap = self.lheap[:]
        other.cheap = self.cheap[:]
        return other

    def key(self) -> tuple[object, ...]:
        """Equal keys ⇒ identical futures (used to merge trajectories that met again).

        Time and the next submit are left out: callers compare states at the same instant.
        """
        return (tuple(self.queue), tuple(self.rjob), tuple(self.rexp), tuple(sorted(self.cheap)))


@dataclass(frozen=True)
class StepResult:
    """What one :meth:`HybridModel.advance` accrued, and the caps that give the same trajectory."""

    twt: float
    cost: float
    cap_lo: int
    cap_hi: int
    transfers: int
    #: Sum of the waits of the jobs that started during the step (the other way to count a day's wait).
    started_wait: float = 0.0
    #: Full cost (cores × runtime) of the jobs sent to the cloud during the step.
    started_cost: float = 0.0


#: A policy that sets the cap at every scheduling pass (``decide(model, state) -> V``).
CapPolicy = Callable[["HybridModel", HybridState], int]


class HybridModel:
    """The static side of the hybrid model: the workload as Python lists, the local size M.

    Args:
        workload: jobs sorted by submit time.
        cores: local nodes M (default: the workload's machine size).
        overrun: treatment of jobs that ran past their request (see :func:`effective_runtimes`).
    """

    def __init__(self, workload: Workload, cores: int | None = None, *, overrun: Overrun = DEFAULT_OVERRUN):
        self.workload = workload
        self.cores = int(cores if cores is not None else workload.max_procs)
        if len(workload) and int(workload.procs.max()) > self.cores:
            raise ValueError(
                f"workload {workload.name!r} has a job of {int(workload.procs.max())} cores; "
                f"the local machine has {self.cores} (use Workload.with_max_procs)"
            )
        run_eff, self.killed_at_limit = effective_runtimes(workload, overrun)
        self.n = len(workload)
        self.submit: list[float] = workload.submit.tolist()
        self.run: list[float] = run_eff.tolist()
        self.req: list[float] = workload.req_time.tolist()
        self.procs: list[int] = workload.procs.tolist()
        self.run_arr: FloatArray = run_eff
        #: When a list (full-length), every start is written into it and ``cloud_rows`` collects
        #: the rows started in the cloud: for tests and per-job reports, never for clones.
        self.record_start: list[float] | None = None
        #: Sum of the waits of the jobs started so far (scratch accumulator of :meth:`advance`).
        self.started_wait = 0.0
        self.started_cost = 0.0
        self.cloud_rows: list[int] | None = None

    def initial_state(self) -> HybridState:
        state = HybridState(self.cores)
        state.now = self.submit[0] if self.n else 0.0
        return state

    def finished(self, state: HybridState) -> bool:
        return state.next_submit >= self.n and not state.queue and not state.lheap and not state.cheap

    # ------------------------------------------------------------------ the local EASY pass
    def _start_local(self, s: HybridState, j: int, now: float) -> None:
        s.free -= self.procs[j]
        exp = now + self.req[j]
        heapq.heappush(s.lheap, (now + self.run[j], j, exp))
        pos = bisect_right(s.rexp, exp)
        s.rexp.insert(pos, exp)
        s.rjob.insert(pos, j)
        self.started_wait += now - self.submit[j]
        if self.record_start is not None:
            self.record_start[j] = now

    def _easy(self, s: HybridState, now: float) -> None:
        """One EASY pass in FCFS order; the same decisions as ``Simulator._schedule`` (engine.py)."""
        queue = s.queue
        if not queue:
            return
        procs = self.procs
        sizes = s.qsizes
        started = 0
        while started < len(queue) and procs[queue[started]] <= s.free:
            self._start_local(s, queue[started], now)
            started += 1
        if started:
            for j in queue[:started]:
                del sizes[bisect_left(sizes, procs[j])]
            del queue[:started]
        free = s.free
        if len(queue) < 2 or free == 0 or sizes[0] > free:
            return
        shadow, extra = easy_reservation(procs[queue[0]], free, s.rexp, s.rjob, procs, now)
        chosen = easy_backfill((queue[1:],), procs, self.req, sizes, free, extra, now, shadow)
        for j in chosen:
            del queue[bisect_left(queue, j)]
            del sizes[bisect_left(sizes, procs[j])]
            self._start_local(s, j, now)

    # ------------------------------------------------------------------ the transfer strategy
    def _transfer(self, s: HybridState, cap: int, now: float, bounds: list[int]) -> int:
        """FH §2.3: start every queued job that fits under the cap in the cloud, in queue order.

        ``bounds = [lo, hi]`` is narrowed so that any cap in it makes the same choices: a
        transfer needs ``cap >= used + size``; a refusal needs ``cap < used + size``.
        """
        queue = s.queue
        sizes = s.qsizes
        used = s.cloud_used
        if sizes[0] + used > cap:
            # Everything refused at the same usage: the tightest refusal is the smallest job.
            if sizes[0] + used - 1 < bounds[1]:
                bounds[1] = sizes[0] + used - 1
            return 0
        procs = self.procs
        run = self.run
        moved: list[int] = []
        lo, hi = bounds
        for j in queue:
            p = procs[j]
            if used + p <= cap:
                if used + p > lo:
                    lo = used + p
                used += p
                moved.append(j)
            elif used + p - 1 < hi:
                hi = used + p - 1
        bounds[0], bounds[1] = lo, hi
        s.cloud_used = used
        record = self.record_start
        submit = self.submit
        for j in moved:
            self.started_wait += now - submit[j]
            self.started_cost += procs[j] * run[j]
            del queue[bisect_left(queue, j)]
            del sizes[bisect_left(sizes, procs[j])]
            heapq.heappush(s.cheap, (now + run[j], j, procs[j]))
            if record is not None:
                record[j] = now
                self.cloud_rows.append(j)  # type: ignore[union-attr]
        return len(moved)

    # ------------------------------------------------------------------ the event loop
    def _transfer_pass(self, s: HybridState, cap: int, now: float, bounds: list[int]) -> int:
        """A transfer pass, then an EASY pass if it moved jobs (the queue changed); how many it moved."""
        moved = self._transfer(s, cap, now, bounds)
        if moved:
            self._easy(s, now)
        return moved

    def _end_local(self, s: HybridState, finished: tuple[float, int, float]) -> None:
        """A local job ends (its entry of ``s.lheap``, popped): its nodes come free."""
        _, j, exp = finished
        s.free += self.procs[j]
        rexp, rjob = s.rexp, s.rjob
        pos = bisect_left(rexp, exp)
        while rjob[pos] != j:
            pos += 1
        del rexp[pos]
        del rjob[pos]

    def _admit(self, s: HybridState, i: int, now: float) -> None:
        """Queue the jobs from row ``i`` on submitted by ``now``."""
        submit, procs, n = self.submit, self.procs, self.n
        queue, sizes = s.queue, s.qsizes
        while i < n and submit[i] <= now:
            queue.append(i)
            insort(sizes, procs[i])
            i += 1
        s.next_submit = i

    def _step_result(
        self,
        s: HybridState,
        now: float,
        until: float,
        twt: float,
        cost: float,
        *,
        transfers: int,
        bounds: list[int],
        cap: int,
        policy: CapPolicy | None,
    ) -> StepResult:
        """The end of :meth:`advance`: waits and cloud use up to ``until`` (when finite), ``s.now`` set."""
        if until < INF:
            dt = until - now
            twt += len(s.queue) * dt
            cost += s.cloud_used * dt
            now = until
        s.now = now
        if policy is not None:
            bounds = [cap, cap]
        return StepResult(
            twt=twt,
            cost=cost,
            cap_lo=bounds[0],
            cap_hi=bounds[1],
            transfers=transfers,
            started_wait=self.started_wait,
            started_cost=self.started_cost,
        )

    def advance(self, s: HybridState, cap: int, until: float = INF, *, policy: CapPolicy | None = None) -> StepResult:
        """Simulate from ``s.now`` to ``until`` (exclusive) under cap ``cap``; ``s`` is updated in place.

        Events at exactly ``until`` belong to the next step.  With ``until = inf`` the run
        goes on until every job has finished.  ``policy``, when given, sets the cap before
        every transfer pass (the certificate is then meaningless and reported as ``[cap, cap]``).
        """
        submit = self.submit
        n = self.n
        queue = s.queue
        lheap, cheap = s.lheap, s.cheap
        bounds = [0, UNBOUNDED]
        self.started_wait = 0.0
        self.started_cost = 0.0
        twt = 0.0
        cost = 0.0
        transfers = 0
        now = s.now
        if queue:
            # The new cap takes effect now (FH: V is set for the coming period).
            cap = cap if policy is None else policy(self, s)
            transfers += self._transfer_pass(s, cap, now, bounds)
        while True:
            i = s.next_submit
            t = submit[i] if i < n else INF
            if lheap and lheap[0][0] < t:
                t = lheap[0][0]
            if cheap and cheap[0][0] < t:
                t = cheap[0][0]
            if t >= until:
                break  # the step's end (t = inf: the run's), accounted in _step_result
            dt = t - now
            twt += len(queue) * dt
            cost += s.cloud_used * dt
            now = t
            while lheap and lheap[0][0] <= now:
                self._end_local(s, heapq.heappop(lheap))
            while cheap and cheap[0][0] <= now:
                s.cloud_used -= heapq.heappop(cheap)[2]
            if i < n and submit[i] <= now:
                self._admit(s, i, now)
            if not queue:
                continue
            # Nothing can start locally unless the smallest queued job fits the idle nodes
            # (both the in-order starts and the backfill need it): skip the pass, same result.
            if s.qsizes[0] <= s.free:
                self._easy(s, now)
                if not queue:
                    continue
            if policy is not None:
                s.now = now
                cap = policy(self, s)
            elif s.qsizes[0] + s.cloud_used > cap:
                # Everything refused at the same usage (inlined from _transfer: the common case).
                if s.qsizes[0] + s.cloud_used - 1 < bounds[1]:
                    bounds[1] = s.qsizes[0] + s.cloud_used - 1
                continue
            transfers += self._transfer_pass(s, cap, now, bounds)
        return self._step_result(s, now, until, twt, cost, transfers=transfers, bounds=bounds, cap=cap, policy=policy)

    # ------------------------------------------------------------------ whole runs
    def run_full(self, cap: int, *, record: bool = False) -> tuple[float, float, HybridState]:
        """One whole replay under a constant cap: (total wait, cloud CPU-seconds, final state)."""
        if record:
            self.record_start = [math.nan] * self.n
            self.cloud_rows = []
        state = self.initial_state()
        result = self.advance(state, cap)
        return result.twt, result.cost, state


def day_edges(model: HybridModel, period_s: float = 86_400.0) -> FloatArray:
    """Period boundaries from the first submit: ``edges[k]`` starts period k (FH: one day)."""
    if period_s <= 0:
        raise ValueError("period_s must be positive")
    if model.n == 0:
        return np.zeros(1)
    t0 = model.submit[0]
    count = math.floor((model.submit[-1] - t0) / period_s) + 1
    return t0 + period_s * np.arange(count + 1, dtype=np.float64)
