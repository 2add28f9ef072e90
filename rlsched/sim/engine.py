"""The discrete-event simulator: a rigid pool of cores, a native batch scheduler, and the Backend seam.

The simulator plays the part a batch system plays live (docs/design.md, The seams): it has its
own scheduler — a priority queue started in order, optionally with EASY
backfilling — and it offers the same five levers as the Slurm backend
(:class:`rlsched.core.view.Backend`).  Learning agents steer it only through those
levers: ``boost`` re-ranks the queue, ``hold``/``release`` gate jobs; the native
scheduler then starts what it can, exactly as ``sched/backfill`` would in Slurm.

EASY backfilling follows Mu'alem & Feitelson (IEEE TPDS 12(6), 2001): the head of
the queue gets a reservation at the *shadow time* — the earliest time enough
cores free up, computed from the *requested* times of the running jobs — and a
later job may start now if it fits in the idle cores and either ends (by its
requested time) before the shadow time or uses only the *extra* cores the head
will not need.  Shadow time and extra cores are recomputed at every scheduling
pass, so the head's reservation can move earlier but is never delayed (a test
checks this invariant on real traces).

Costs: submits are read from the sorted workload (no heap traffic); finishes sit
in a binary heap; running jobs are kept sorted by expected end (bisect) so the
shadow time is found without sorting; the backfill scan visits only queued jobs
whose size fits the idle cores, found through a size index, so a deep queue of
wide jobs costs nothing while the machine is full.
"""

from __future__ import annotations

import heapq
import math
import time
from bisect import bisect_left, bisect_right, insort
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

import numpy as np

from rlsched.core.blas import single_blas_thread
from rlsched.core.view import (
    Agent,
    ClusterView,
    FinishedJobs,
    FloatArray,
    IntArray,
    JobClass,
    PendingJobs,
    RunningJobs,
    apply,
)
from rlsched.errors import RlschedError
from rlsched.sim.workload import Workload

Overrun = Literal["kill", "run"]

#: Default treatment of jobs that ran longer than they requested: real batch systems
#: kill a job at its time limit (Slurm, PBS, LoadLeveler all do), so that is the default.
DEFAULT_OVERRUN: Overrun = "kill"


#: Queues longer than this are scanned for backfill candidates with NumPy (below it a plain
#: loop is cheaper than the fixed cost of the array calls; measured with benchmarks/bench_sim.py).
VECTOR_SCAN_MIN_QUEUE = 96

#: What becomes of a poll before which nothing happened (``Simulator(quiet_polls=…)``).
QuietPolls = Literal["all", "defer", "skip"]

#: Quiet polls (``quiet_polls`` "skip" or "defer") make the loop jump to the first tick at or after the next
#: event instead of stepping through the ticks in between, which could change nothing (:meth:`Simulator._poll`).
#: False steps tick by tick: the reference the jumps must agree with (tests and benchmarks/bench_boost.py).
JUMP_QUIET_TICKS = True

#: With periodic ticks, how many ticks a gate-mode agent may leave an empty machine idle
#: while it holds jobs before the run is declared stuck.
MAX_IDLE_TICKS = 10_000


class DynamicPriority(Protocol):
    """A priority that changes over time (Slurm's priority/multifactor: :mod:`rlsched.sim.multifactor`).

    Priorities are integers, higher first (ties by row, i.e. submit order).  A job gets
    :meth:`submit_priority` when it is queued; at every :meth:`next_pass` instant while jobs
    wait, all queued jobs are re-prioritised with :meth:`priorities` — as Slurm's decay thread
    recomputes every pending job's priority each PriorityCalcPeriod.  :meth:`started` and
    :meth:`ended` report the jobs' runs (usage).
    """

    def submit_priority(self, row: int, now: float) -> float: ...

    def priorities(self, rows: IntArray, now: float) -> FloatArray: ...

    def started(self, row: int, now: float) -> None: ...

    def ended(self, row: int, now: float) -> None: ...

    def next_pass(self, now: float) -> float: ...


@runtime_checkable
class BoostablePriority(DynamicPriority, Protocol):
    """A dynamic priority the ``boost`` lever can steer (boost mode: :class:`rlsched.sim.boost.BoostPriority`).

    :meth:`boost` takes the queued rows of the agent's ranking, best first, and returns the new priority of
    every row whose priority it changed (the engine re-sorts only those).
    """

    max_boosted: int

    def boost(self, rows: Sequence[int], now: float) -> dict[int, float]: ...


class SimulationError(RlschedError, RuntimeError):
    """The simulation cannot go on (for instance jobs held forever with nothing running)."""


@dataclass(frozen=True)
class Schedule:
    """The outcome of a replay: one start and end time per workload row."""

    workload: Workload
    cores: int
    start: FloatArray
    end: FloatArray
    killed_at_limit: int
    sim_seconds: float
    scheduler: str = ""
    #: How the policy acted: ``gate`` or ``boost`` (:func:`rlsched.sim.policies.simulate_policy`), ``recorded``
    #: for the trace's own schedule; empty for a bare engine run.
    mode: str = ""

    @property
    def wait(self) -> FloatArray:
        return self.start - self.workload.submit

    @property
    def run(self) -> FloatArray:
        return self.end - self.start


def effective_runtimes(workload: Workload, overrun: Overrun) -> tuple[FloatArray, int]:
    """Runtimes the simulation uses, and how many jobs the time limit cuts.

    ``kill``: a job that ran past its requested time is ended at the request, as
    real batch systems do.  ``run``: it runs its recorded time (as in studies that
    replay the runtime blindly); EASY reservations then become optimistic.
    """
    if overrun not in ("kill", "run"):
        raise ValueError(f"overrun must be 'kill' or 'run', not {overrun!r}")
    over = workload.run > workload.req_time
    if overrun == "kill":
        return np.minimum(workload.run, workload.req_time), int(over.sum())
    return workload.run.astype(np.float64, copy=True), 0


def easy_reservation(
    need: int, free: int, rexp: list[float], rjob: list[int], procs: list[int], now: float
) -> tuple[float, int]:
    """EASY's reservation for a head job of ``need`` cores: (shadow time, extra cores).

    ``rexp``/``rjob`` are the running jobs sorted by expected end (start + requested time).
    Walk them until the head fits; every job expected to end by that instant frees its cores
    then, so all of them count in the extra cores (ties included).  Shared by the engine and
    the hybrid leasing model so both make the same decisions.
    """
    avail = free
    i = 0
    while avail < need:
        avail += procs[rjob[i]]
        i += 1
    shadow = max(rexp[i - 1], now)
    while i < len(rexp) and rexp[i] <= shadow:
        avail += procs[rjob[i]]
        i += 1
    return shadow, avail - need


def easy_backfill(
    chunks: Iterable[list[int]],
    procs: list[int],
    req: list[float],
    queued_sizes: list[int],
    free: int,
    extra: int,
    now: float,
    shadow: float,
) -> list[int]:
    """The queued jobs EASY starts now behind the head, in queue order.

    A candidate that fits the idle cores starts if it ends (by its request) by the shadow time,
    or if it uses only extra cores, which it then consumes.  ``queued_sizes`` (sorted cores of
    the queue) stops the scan as soon as nothing left can fit.
    """
    chosen: list[int] = []
    for chunk in chunks:
        for j in chunk:
            p = procs[j]
            if p > free:
                continue
            if now + req[j] <= shadow:
                pass  # ends (by its request) before the head's reservation
            elif p <= extra:
                extra -= p  # runs past the shadow time on cores the head will not need
            else:
                continue
            chosen.append(j)
            free -= p
            if free == 0 or queued_sizes[0] > free:
                return chosen
    return chosen


def _check_options(
    workload: Workload,
    cores: int,
    *,
    priority: FloatArray | IntArray | None,
    agent: Agent | None,
    hold_on_submit: bool,
    tick_s: float | None,
    dynamic: DynamicPriority | None,
    every_event: bool,
) -> None:
    """The :class:`Simulator`'s options that do not go together, each a one-line ValueError."""
    if cores < 1:
        raise ValueError("cores must be >= 1")
    if len(workload) and int(workload.procs.max()) > cores:
        raise ValueError(
            f"workload {workload.name!r} has a job of {int(workload.procs.max())} cores; the pool has "
            f"{cores} (use Workload.with_max_procs to drop wider jobs)"
        )
    if hold_on_submit and agent is None:
        raise ValueError("hold_on_submit needs an agent to release the jobs")
    if tick_s is not None and tick_s <= 0:
        raise ValueError("tick_s must be positive")
    if dynamic is not None and priority is not None:
        raise ValueError("a dynamic priority replaces the static priority")
    if dynamic is not None and agent is not None and (hold_on_submit or not isinstance(dynamic, BoostablePriority)):
        raise ValueError(
            "an agent steers a dynamic priority only by boosting it (a BoostablePriority, no hold on submit)"
        )
    if not every_event and (agent is None or tick_s is None):
        raise ValueError("every_event=False asks the agent at the ticks only: it needs an agent and tick_s")
    if dynamic is not None and len(workload) * 2.0**32 >= 2.0**53:
        raise ValueError("a dynamic priority needs fewer than 2^21 jobs (its queue keys are exact floats)")


def _static_ranks(priority: FloatArray | IntArray | None, n: int) -> list[float]:
    """Each job's place in the static order (a lower key first, ties by row): the submit order without a key."""
    if priority is None:
        return np.arange(n, dtype=np.float64).tolist()
    key = np.asarray(priority, dtype=np.float64)
    if key.shape != (n,):
        raise ValueError(f"priority has shape {key.shape}, expected ({n},)")
    order = np.lexsort((np.arange(n), key))
    rank = np.empty(n, dtype=np.float64)
    rank[order] = np.arange(n)
    return rank.tolist()


class Simulator:
    """Replay a workload on ``cores`` cores; implements :class:`rlsched.core.live.LiveBackend`.

    Args:
        workload: the jobs (sorted by submit time).
        cores: pool size (default: the workload's machine size).
        priority: a static key per job, lower starts first (None: submit order, FCFS).
        backfill: EASY backfilling behind the queue head.
        overrun: ``kill`` jobs at their requested time (default) or let them ``run``.
        agent: a policy called after every batch of simultaneous events; it acts only
            through the Backend levers (boost, hold, release).
        hold_on_submit: gate mode — every job arrives held and waits for the agent's release.
        tick_s: also call the agent every ``tick_s`` seconds (periodic decisions).
        dynamic: a :class:`DynamicPriority` instead of the static ``priority``; with an agent it must be a
            :class:`BoostablePriority` (boost mode: the agent's ranking moves jobs within it).
        every_event: call the agent after every batch of events (default); False: only at the ``tick_s``
            ticks, after the native scheduler's pass, as a daemon polls (boost mode, :mod:`rlsched.sim.boost`).
        quiet_polls: with ``every_event=False``, what becomes of a poll before which nothing was submitted,
            started or finished (:meth:`_poll`): ``all`` makes it; ``defer`` makes only the last of those at
            which nothing fits the idle cores, just before the next event; ``skip`` makes none (exact when the
            agent's ranking is a function of the queue alone, as a static key's).
        name: label stored in the resulting :class:`Schedule`.
    """

    def __init__(
        self,
        workload: Workload,
        cores: int | None = None,
        *,
        priority: FloatArray | IntArray | None = None,
        backfill: bool = True,
        overrun: Overrun = DEFAULT_OVERRUN,
        agent: Agent | None = None,
        hold_on_submit: bool = False,
        tick_s: float | None = None,
        dynamic: DynamicPriority | None = None,
        every_event: bool = True,
        quiet_polls: QuietPolls = "all",
        name: str = "",
    ) -> None:
        self.workload = workload
        self.cores = int(cores if cores is not None else workload.max_procs)
        _check_options(
            workload,
            self.cores,
            priority=priority,
            agent=agent,
            hold_on_submit=hold_on_submit,
            tick_s=tick_s,
            dynamic=dynamic,
            every_event=every_event,
        )
        self.dynamic = dynamic
        self.backfill = backfill
        self.overrun: Overrun = overrun
        self.agent = agent
        self.hold_on_submit = hold_on_submit
        self.tick_s = tick_s
        self.every_event = every_event
        if quiet_polls not in ("all", "defer", "skip"):
            raise ValueError(f"quiet_polls must be 'all', 'defer' or 'skip', not {quiet_polls!r}")
        self.quiet_polls: QuietPolls = quiet_polls
        self.name = name
        # Checked once: isinstance against a runtime protocol costs tens of microseconds.
        self._boostable = dynamic if isinstance(dynamic, BoostablePriority) else None
        if self._boostable is not None:
            self.boost_limit = self._boostable.max_boosted
        n = len(workload)
        run_eff, self._killed = effective_runtimes(workload, overrun)
        # Python lists: scalar access in the event loop is several times faster than NumPy indexing.
        self._submit: list[float] = workload.submit.tolist()
        self._run_arr = run_eff
        self._executable = workload.known_executables  # what the views' policies may read
        self._run: list[float] = run_eff.tolist()
        self._req: list[float] = workload.req_time.tolist()
        self._procs: list[int] = workload.procs.tolist()
        self._rank: list[float] = _static_ranks(priority, n)
        # Row-indexed copies for the vectorised backfill scan of long queues (see _schedule):
        # the cores of each queued job by row (inf when not queued) and a pointer to the oldest queued row.
        self._static_fcfs = priority is None and dynamic is None
        self._rank_arr = np.asarray(self._rank, dtype=np.float64)
        self._req_arr = workload.req_time.astype(np.float64)
        self._qprocs_by_row = np.full(n + 1, np.inf)  # one sentinel past the end stops the pointer
        self._oldest_queued = n
        self._init_loop_state(n)

    def _init_loop_state(self, n: int) -> None:
        """The event loop's state at time 0 (nothing submitted), and the LiveBackend side's counters."""
        self._start = [math.nan] * n
        self._end = [math.nan] * n
        self.now = 0.0
        self.free = self.cores
        # Queue of eligible pending jobs, sorted by key (parallel lists; keys are unique).
        self._qkeys: list[float] = []
        self._qjobs: list[int] = []
        # Size index: sorted cores of the queued jobs, so "does any queued job fit?" is one lookup.
        self._qsizes: list[int] = []
        self._held: dict[int, None] = {}  # insertion-ordered set of held rows
        self._key_of: dict[int, float] = {}  # keys that differ from the static rank (boost, gate order)
        self._boosted: list[int] = []
        self._reordered = False  # a boost changed the queue order since the flag was cleared
        self._events = 0  # submits, starts and finishes so far (a poll with none since the last is quiet)
        self._events_at_poll = -1
        #: Polls at which the agent was asked (``every_event=False``).
        self.polls = 0
        self._release_seq = 0
        # Running jobs sorted by expected end (start + requested), for the shadow time.
        self._rexp: list[float] = []
        self._rjob: list[int] = []
        self._finish_heap: list[tuple[float, int]] = []
        self._finished_since_view: list[int] = []
        self._row_of_id: dict[int, int] | None = None
        self._no_finished: FinishedJobs | None = None  # the finished jobs of a view when none finished
        # The previous view's queued, held and running rows, and its pending and running jobs (view()).
        self._last_parts: tuple[list[int], list[int], list[int], PendingJobs, RunningJobs] | None = None
        self._next_submit = 0
        self._done = 0
        #: When a list, every reservation EASY gives is appended as (row of the head job, shadow time);
        #: tests use it to check that no head job starts after its reservation.
        self.reservation_log: list[tuple[int, float]] | None = None
        # The LiveBackend side (used by agents' levers only, never by the event loop).
        self.errors: Counter[str] = Counter()
        self.actions: Counter[str] = Counter()
        self._held_by_agent: set[int] = set()  # rows held through hold() (not hold_on_submit's gate)

    # ------------------------------------------------------------------ queue primitives
    def _key(self, j: int) -> float:
        if self.dynamic is not None:
            return float(self._rank_arr[j])
        return self._key_of.get(j, self._rank[j])

    def _enqueue(self, j: int) -> None:
        k = self._key(j)
        pos = bisect_right(self._qkeys, k)
        self._qkeys.insert(pos, k)
        self._qjobs.insert(pos, j)
        insort(self._qsizes, self._procs[j])
        self._qprocs_by_row[j] = self._procs[j]
        if j < self._oldest_queued:
            self._oldest_queued = j

    def _dequeue_at(self, pos: int) -> int:
        j = self._qjobs.pop(pos)
        del self._qkeys[pos]
        sizes = self._qsizes
        del sizes[bisect_left(sizes, self._procs[j])]
        self._qprocs_by_row[j] = np.inf
        return j

    def _dequeue_job(self, j: int) -> None:
        pos = bisect_left(self._qkeys, self._key(j))
        if self._qjobs[pos] != j:
            raise SimulationError(f"queue index out of order at row {j}")
        self._dequeue_at(pos)

    def _backfill_candidates(self, free: int, extra: int, now: float, shadow: float) -> IntArray:
        """Queued rows that may be backfilled, in queue order, found by NumPy over the submit window.

        Every queued job lies between the oldest queued row and the next submit, so one
        vectorised pass over that window replaces a Python loop over the whole queue.  The
        test uses the pass's initial ``free``/``extra``: both only shrink as jobs start, so the
        result is a superset that the caller re-checks exactly.
        """
        qprocs = self._qprocs_by_row
        lo = self._oldest_queued
        while qprocs[lo] == np.inf:
            lo += 1
        self._oldest_queued = lo
        window = qprocs[lo : self._next_submit]
        # `now + req <= shadow` exactly as the scalar test writes it, so float rounding agrees.
        ends_in_time = (self._req_arr[lo : self._next_submit] + now) <= shadow
        fits = (window <= free) & (ends_in_time | (window <= extra))
        rows = np.flatnonzero(fits)
        rows += lo
        if not self._static_fcfs:
            rows = rows[np.argsort(self._rank_arr[rows], kind="stable")]
        return rows

    def _dynamic_key(self, priority: float, j: int) -> float:
        # Higher priority first, then submit order: an exact float while priority < 2^32 and rows < 2^21.
        return -priority * (len(self._submit) + 1) + j

    def _reprioritize(self, now: float) -> None:
        """A priority pass: every queued job gets its current priority and the queue is re-sorted."""
        dyn = self.dynamic
        assert dyn is not None
        if not self._qjobs:
            return
        rows = np.array(self._qjobs, dtype=np.int64)
        keys = -dyn.priorities(rows, now) * (len(self._submit) + 1) + rows
        self._rank_arr[rows] = keys  # with a dynamic priority, _key() reads this array
        order = np.argsort(keys, kind="stable")
        self._qjobs = rows[order].tolist()
        self._qkeys = keys[order].tolist()

    def _start_job(self, j: int, now: float) -> None:
        self._events += 1
        if self.dynamic is not None:
            self.dynamic.started(j, now)
        p = self._procs[j]
        self.free -= p
        self._start[j] = now
        end = now + self._run[j]
        self._end[j] = end
        heapq.heappush(self._finish_heap, (end, j))
        exp = now + self._req[j]
        pos = bisect_right(self._rexp, exp)
        self._rexp.insert(pos, exp)
        self._rjob.insert(pos, j)

    def _finish_job(self, j: int) -> None:
        self._events += 1
        if self.dynamic is not None:
            self.dynamic.ended(j, self._end[j])
        self.free += self._procs[j]
        exp = self._start[j] + self._req[j]
        rexp, rjob = self._rexp, self._rjob
        pos = bisect_left(rexp, exp)
        while rjob[pos] != j:
            pos += 1
        del rexp[pos]
        del rjob[pos]
        self._finished_since_view.append(j)
        self._done += 1

    # ------------------------------------------------------------------ the native scheduler
    def _schedule(self, now: float) -> None:
        """One scheduling pass: start the queue in order, then EASY-backfill behind the head."""
        qjobs = self._qjobs
        if not qjobs:
            return
        procs = self._procs
        started = 0
        while started < len(qjobs) and procs[qjobs[started]] <= self.free:
            self._start_job(qjobs[started], now)
            started += 1
        if started:
            sizes = self._qsizes
            qprocs = self._qprocs_by_row
            for j in qjobs[:started]:
                del sizes[bisect_left(sizes, procs[j])]
                qprocs[j] = np.inf
            del qjobs[:started]
            del self._qkeys[:started]
        free = self.free
        if not self.backfill or len(qjobs) < 2:
            return
        nothing_fits = free == 0 or self._qsizes[0] > free
        if nothing_fits and self.reservation_log is None:
            return
        shadow, extra = easy_reservation(procs[qjobs[0]], free, self._rexp, self._rjob, procs, now)
        if self.reservation_log is not None:
            self.reservation_log.append((qjobs[0], shadow))
            if nothing_fits:
                return
        chunks: Iterable[list[int]]
        if len(qjobs) > VECTOR_SCAN_MIN_QUEUE and not self._key_of:
            rows = self._backfill_candidates(free, extra, now, shadow)
            # The pass usually ends after a few starts: convert the candidates to Python ints lazily.
            chunks = (rows[k : k + 64].tolist() for k in range(0, len(rows), 64))
        else:
            chunks = (qjobs[1:],)
        chosen = easy_backfill(chunks, procs, self._req, self._qsizes, free, extra, now, shadow)
        for j in chosen:
            self._dequeue_job(j)
            self._start_job(j, now)

    # ------------------------------------------------------------------ the event loop
    @single_blas_thread  # an agent's learned numbers must not depend on the caller's BLAS threads (issue 22)
    def run(self, progress: Callable[[int], None] | None = None, progress_every: int = 5000) -> Schedule:
        """Replay the whole workload; ``progress(jobs_finished)`` is called now and then."""
        t0 = time.perf_counter()
        n = len(self._submit)
        submit = self._submit
        heap = self._finish_heap
        agent = self.agent
        tick = self.tick_s
        next_tick = submit[0] if (tick is not None and n) else math.inf
        inf = math.inf
        next_report = progress_every
        idle_ticks = 0
        dyn = self.dynamic
        next_pass = inf
        deferred_poll = inf  # a poll put off until something happens (quiet_polls="defer"; see _poll)
        while True:
            i = self._next_submit
            t_sub = submit[i] if i < n else inf
            t_fin = heap[0][0] if heap else inf
            now = min(t_sub, t_fin, next_tick, next_pass)
            if now == inf:
                break
            if now < self.now:
                raise SimulationError(f"time went backwards: {now} < {self.now}")
            if deferred_poll < now and min(t_sub, t_fin, next_pass) <= now:
                # Something happens now: the deferred poll first (a bare tick defers again, replacing it).
                self._deferred_poll(agent, deferred_poll)  # type: ignore[arg-type]
                deferred_poll = inf
            self.now = now
            while heap and heap[0][0] <= now:
                self._finish_job(heapq.heappop(heap)[1])
            if dyn is not None and now >= next_pass:
                self._reprioritize(now)
            i = self._admit(i, now)
            self._events += i - self._next_submit
            self._next_submit = i
            polled = False
            if agent is not None:
                next_tick, polled = self._ask(agent, now, next_tick)
            self._schedule(now)
            if polled and not self.every_event:
                next_tick, deferred_poll = self._poll(agent, now, next_tick)  # type: ignore[arg-type]
            if dyn is not None:
                # Passes matter only while jobs wait; the usage they track is kept by the hook itself.
                next_pass = dyn.next_pass(now) if self._qjobs else inf
            if progress is not None and self._done >= next_report:
                progress(self._done)
                next_report += progress_every
            if not heap and i >= n:
                if not self._idle_tick(now, idle_ticks):
                    break
                idle_ticks += 1  # the agent may still release held jobs at a later tick
        if progress is not None:
            progress(self._done)
        return Schedule(
            workload=self.workload,
            cores=self.cores,
            start=np.array(self._start, dtype=np.float64),
            end=np.array(self._end, dtype=np.float64),
            killed_at_limit=self._killed,
            sim_seconds=time.perf_counter() - t0,
            scheduler=self.name,
        )

    def _admit(self, i: int, now: float) -> int:
        """Submit the jobs from row ``i`` on whose submit time has come (held in gate mode, else queued);
        the first row not submitted."""
        submit, n, dyn = self._submit, len(self._submit), self.dynamic
        while i < n and submit[i] <= now:
            if self.hold_on_submit:
                self._held[i] = None
            else:
                if dyn is not None:
                    self._rank_arr[i] = self._dynamic_key(dyn.submit_priority(i, now), i)
                self._enqueue(i)
            i += 1
        return i

    def _ask(self, agent: Agent, now: float, next_tick: float) -> tuple[float, bool]:
        """The agent's turn before the scheduling pass: it decides now after every batch of events
        (``every_event``); a tick that has come moves on.  The next tick, and whether this is one."""
        polled = now >= next_tick
        if polled:
            next_tick += self.tick_s  # type: ignore[operator]
        if self.every_event:
            apply(agent.decide(self.view()), self)
        return next_tick, polled

    def _idle_tick(self, now: float, idle_ticks: int) -> bool:
        """Nothing runs and nothing is left to submit: True to go on ticking (the agent may still release
        held jobs), else the run is over (a :class:`SimulationError` if jobs still wait)."""
        agent = self.agent
        if self._qjobs or self._held:
            if agent is not None and self.tick_s is not None and self._held and idle_ticks < MAX_IDLE_TICKS:
                return True
            raise SimulationError(
                f"{len(self._qjobs) + len(self._held)} jobs still pending at t={now} with nothing "
                f"running and nothing left to submit (held jobs never released?)"
            )
        if agent is not None and not self.every_event and self._finished_since_view:
            agent.decide(self.view())  # the next poll shows the last finishes (a learner's rewards)
        return False

    def _poll(self, agent: Agent, now: float, next_tick: float) -> tuple[float, float]:
        """A daemon's poll (``every_event=False``): the agent sees the queue the native scheduler left and
        acts; a changed order gets a scheduling pass at once.  Returns the next tick, and the instant of the
        poll deferred until the next event (inf: none).

        With nothing queued and no finish the agent has not seen, the ticks until the next submit or finish
        are skipped: their polls could change nothing.  A quiet poll (nothing submitted, started or finished
        since the previous one) is skipped with ``quiet_polls="skip"``: the queue is the same, and an agent
        whose ranking is a function of the queue ranks it the same way.  With ``"defer"`` it is deferred
        when also no queued job fits the idle cores: whatever its boost, nothing can start now, so only the
        order it leaves matters, and only the last such poll's order reaches the next event.  That poll is
        made just before the next event or priority pass, with the view of its own instant
        (:meth:`_deferred_poll`; the state has not changed since).  Exact for any agent that keeps no state
        between polls (a rule, a fixed model); a learner draws its exploration at fewer polls, and over
        multifactor a job re-niced by a dropped poll only keeps its older priority until the next pass.
        The ticks after a skipped or deferred poll are quiet too until something happens: the loop jumps
        over them (:meth:`_quiet_ticks`).
        """
        pending = self._qjobs or self._held or self._finished_since_view
        if pending and self.quiet_polls != "all" and self._events == self._events_at_poll:
            if self.quiet_polls == "skip":
                return self._quiet_ticks(now, next_tick)[0], math.inf
            if not self._qjobs or self._qsizes[0] > self.free:
                return self._quiet_ticks(now, next_tick)
        if pending:
            self._events_at_poll = self._events
            self.polls += 1
            self._reordered = False
            apply(agent.decide(self.view()), self)
            if self._reordered:
                self._schedule(now)
            return next_tick, math.inf
        i = self._next_submit
        upcoming = min(
            self._submit[i] if i < len(self._submit) else math.inf,
            self._finish_heap[0][0] if self._finish_heap else math.inf,
        )
        tick = self.tick_s
        assert tick is not None
        if upcoming > next_tick and upcoming < math.inf:
            next_tick += math.ceil((upcoming - next_tick) / tick) * tick
        return next_tick, math.inf

    def _quiet_ticks(self, now: float, next_tick: float) -> tuple[float, float]:
        """After a quiet poll at ``now`` (skipped or deferred): the first tick at or after the next event,
        and the last tick before it (``now`` when there is none), whose poll the loop would have deferred.

        Exact: until the next submit, finish or priority pass nothing changes, and each of the ticks in
        between would make the same moves as ``now`` did, to the same effect — none.  Its finishes and
        submits are none; its priority pass is none and the next pass it computes is the same (a
        :class:`DynamicPriority`'s ``next_pass`` is the next instant of a fixed grid, non-decreasing in
        ``now``: checked at the last tick); its scheduling pass starts nothing, as the pass at ``now``
        started none (the poll is quiet): the head still does not fit, and a backfill candidate that failed
        fails again — the shadow time and the extra cores are the same while every running job's
        *expected* end is still ahead (always, when overrunning jobs are killed at their request; with
        ``overrun="run"`` the jump stops at the first one when a queued job fits the idle cores), and
        ``now + requested`` only grows.  Its poll is quiet and skipped or deferred as ``now``'s was (the
        conditions do not read the time), so the deferred poll is the last tick's, made with the view of that
        instant, as before.  The ticks are added one by one, as the loop would, so the grid is the same
        floats.  No jump with nothing left to submit or running (the loop counts idle ticks) or with a
        :attr:`reservation_log` (each pass logs its reservation).
        """
        i, heap, tick = self._next_submit, self._finish_heap, self.tick_s
        assert tick is not None
        if not JUMP_QUIET_TICKS or self.reservation_log is not None or (not heap and i >= len(self._submit)):
            return next_tick, now
        until = min(self._submit[i] if i < len(self._submit) else math.inf, heap[0][0] if heap else math.inf)
        dyn = self.dynamic
        next_pass = dyn.next_pass(now) if dyn is not None and self._qjobs else math.inf
        until = min(until, next_pass)
        if self._qjobs and self._rexp and self._qsizes[0] <= self.free:
            until = min(until, self._rexp[0])
        if next_tick >= until:
            return next_tick, now
        last, following = next_tick, next_tick + tick
        while following < until:
            last, following = following, following + tick
        if dyn is not None and next_pass < math.inf and dyn.next_pass(last) != next_pass:
            return next_tick, now  # a pass instant within rounding of a tick: step through them
        return following, last

    def _deferred_poll(self, agent: Agent, at: float) -> None:
        """The poll of instant ``at``, deferred until now (see :meth:`_poll`): nothing has happened since and
        nothing fits the idle cores, so it only sets the order the next event's scheduling pass uses."""
        now, self.now = self.now, at
        self._events_at_poll = self._events
        self.polls += 1
        apply(agent.decide(self.view()), self)
        self.now = now

    # ------------------------------------------------------------------ Backend interface
    #: A boost ranks every job it is given.
    boost_limit: int | None = None

    def _row_index(self) -> dict[int, int]:
        """Each job id's row (built at the first lever pulled)."""
        if self._row_of_id is None:
            self._row_of_id = {int(v): r for r, v in enumerate(self.workload.job_id.tolist())}
        return self._row_of_id

    def _live_row(self, job_id: int) -> int | None:
        """The row of a submitted job that has not ended; None (counted as ``vanished_job``, as a live
        backend does) for a job that never existed, is not submitted yet or has ended."""
        j = self._row_index().get(int(job_id))
        if j is None or j >= self._next_submit or self._end[j] <= self.now:
            self.errors["vanished_job"] += 1
            return None
        return j

    def view(self) -> ClusterView:
        """The state now, with the jobs finished since the previous view.

        Its pending and running jobs are the previous view's objects when the rows are the same
        (:meth:`_pending_running`): their arrays are read-only, so no agent can change what a later view shows.
        """
        w = self.workload
        finished_rows = np.array(self._finished_since_view, dtype=np.int64)
        self._finished_since_view = []
        pending, running = self._pending_running()
        return ClusterView(
            time_s=self.now,
            total_cores=self.cores,
            idle_cores=self.free,
            pending=pending,
            running=running,
            finished=self._finished_jobs(finished_rows),
            vos=w.vo_names,
            vo_shares=w.vo_shares,
        )

    def _pending_running(self) -> tuple[PendingJobs, RunningJobs]:
        """The pending and running jobs of a view; the previous view's when they are the same rows in the
        same order, as at the polls a boost-mode replay makes between events (their arrays read the workload
        and the start times only, which never change for a row).  The arrays are read-only: shared between
        views, they must not be written (an agent that tried would raise, not see a changed later view)."""
        qjobs, held, rjob = self._qjobs, list(self._held), self._rjob
        last = self._last_parts
        if last is not None and last[0] == qjobs and last[1] == held and last[2] == rjob:
            return last[3], last[4]
        w, run_eff = self.workload, self._run_arr
        pending_rows = np.fromiter([*qjobs, *held], dtype=np.int64, count=len(qjobs) + len(held))
        held_flags = np.zeros(len(pending_rows), dtype=np.bool_)
        held_flags[len(qjobs) :] = True
        running_rows = np.array(rjob, dtype=np.int64)
        start = self._start
        pending = PendingJobs(
            job_id=w.job_id[pending_rows],
            vo=w.vo[pending_rows],
            job_class=w.job_class[pending_rows],
            cores=w.procs[pending_rows],
            req_time_s=w.req_time[pending_rows],
            submit_s=w.submit[pending_rows],
            oracle_run_s=run_eff[pending_rows],
            held=held_flags,
            user=w.user[pending_rows],
            executable=self._executable[pending_rows],
        )
        running = RunningJobs(
            job_id=w.job_id[running_rows],
            vo=w.vo[running_rows],
            job_class=w.job_class[running_rows],
            cores=w.procs[running_rows],
            req_time_s=w.req_time[running_rows],
            submit_s=w.submit[running_rows],
            start_s=np.array([start[j] for j in rjob], dtype=np.float64),
            oracle_run_s=run_eff[running_rows],
            user=w.user[running_rows],
            executable=self._executable[running_rows],
        )
        for jobs in (pending, running):
            for value in vars(jobs).values():
                if isinstance(value, np.ndarray):
                    value.flags.writeable = False
        self._last_parts = (list(qjobs), held, list(rjob), pending, running)
        return pending, running

    def _finished_jobs(self, rows: IntArray) -> FinishedJobs:
        """The jobs of ``rows`` as finished; with none (most polls), one empty record made once and shared:
        its arrays, of no element, are the ones gathering no row gives."""
        if not len(rows) and self._no_finished is not None:
            return self._no_finished
        w, start = self.workload, self._start
        finished_start = np.array([start[j] for j in rows.tolist()], dtype=np.float64)
        finished = FinishedJobs(
            job_id=w.job_id[rows],
            vo=w.vo[rows],
            job_class=w.job_class[rows],
            cores=w.procs[rows],
            submit_s=w.submit[rows],
            start_s=finished_start,
            end_s=finished_start + self._run_arr[rows],
        )
        if not len(rows):
            self._no_finished = finished
        return finished

    def _requeue_all(self) -> None:
        jobs = self._qjobs
        self._qjobs, self._qkeys, self._qsizes = [], [], []
        for j in sorted(jobs, key=self._key):
            self._qkeys.append(self._key(j))
            self._qjobs.append(j)
        self._qsizes = sorted(self._procs[j] for j in self._qjobs)

    def boost(self, ranked_job_ids: Sequence[int]) -> None:
        """These jobs go first, in this order; the previous boost is undone.

        With a :class:`BoostablePriority` (boost mode) the queued jobs of the ranking go to it, which moves
        (at most its ``max_boosted`` of) them; the others stay where their priority puts them.
        """
        if self.dynamic is not None:
            self._boost_dynamic(ranked_job_ids)
            return
        for j in self._boosted:
            self._key_of.pop(j, None)
        rows = [j for j in map(self._live_row, ranked_job_ids) if j is not None]
        self.actions["boost"] += len(rows)
        base = -float(len(rows)) - 1.0
        for pos, j in enumerate(rows):
            self._key_of[j] = base + pos
        self._boosted = rows
        self._requeue_all()

    def _boost_dynamic(self, ranked_job_ids: Sequence[int]) -> None:
        dyn = self._boostable
        if dyn is None:
            raise SimulationError("this dynamic priority cannot be boosted")
        qprocs = self._qprocs_by_row
        rows = self._queued_rows(ranked_job_ids, dyn.max_boosted)
        self.actions["boost"] += len(rows)
        changed = dyn.boost(rows, self.now)
        keys, jobs, rank = self._qkeys, self._qjobs, self._rank_arr
        for j, priority in changed.items():
            if qprocs[j] == math.inf:
                continue
            # Re-key in place: the job stays queued with the same cores, so the size index, the per-row
            # cores and the oldest-queued pointer stand (most of a long queue's boost cost was theirs).
            pos = bisect_left(keys, float(rank[j]))
            if jobs[pos] != j:
                raise SimulationError(f"queue index out of order at row {j}")
            del keys[pos]
            del jobs[pos]
            key = self._dynamic_key(priority, j)
            rank[j] = key
            pos = bisect_right(keys, key)
            keys.insert(pos, key)
            jobs.insert(pos, j)
        self._boosted = rows[: dyn.max_boosted]
        self._reordered = self._reordered or bool(changed)

    def _queued_rows(self, ranked_job_ids: Sequence[int], limit: int) -> list[int]:
        """As the Slurm backend does: the first ``limit`` queued jobs of the ranking (no need to read further).

        Queued: neither running (no order to change) nor held.  :meth:`_live_row` inlined (a poll's hot loop):
        each id that is not live counts one ``vanished_job``, as there.
        """
        row_of, next_submit, end, now = self._row_index(), self._next_submit, self._end, self.now
        start, held = self._start, self._held
        rows: list[int] = []
        vanished = 0
        for job_id in ranked_job_ids:
            j = row_of.get(int(job_id))
            if j is None or j >= next_submit or end[j] <= now:
                vanished += 1
            elif math.isnan(start[j]) and j not in held and j not in rows:
                rows.append(j)
                if len(rows) == limit:
                    break
        if vanished:
            self.errors["vanished_job"] += vanished
        return rows

    def hold(self, job_id: int) -> None:
        """Take a queued job out of the queue until it is released (no effect on running jobs)."""
        j = self._live_row(job_id)
        if j is None or j in self._held or not math.isnan(self._start[j]):
            return
        pos = self._qjobs.index(j)
        self._dequeue_at(pos)
        self._held[j] = None
        self._held_by_agent.add(j)
        self.actions["hold"] += 1

    def release(self, job_id: int) -> None:
        """Let a held job be scheduled.  In gate mode released jobs queue in release order."""
        j = self._live_row(job_id)
        if j is None or j not in self._held:
            return
        del self._held[j]
        self._held_by_agent.discard(j)
        self.actions["release"] += 1
        if self.hold_on_submit and j not in self._key_of:
            # Gate mode: rlsched chose this job now, so it queues behind earlier releases only.
            self._release_seq += 1
            self._key_of[j] = float(self._release_seq) - 1e12
        self._enqueue(j)

    def set_lease_cap(self, n: int) -> None:
        raise NotImplementedError(
            "this simulator models a rigid pool without cloud nodes; use the hybrid leasing model for set_lease_cap"
        )

    # ------------------------------------------------------------------ LiveBackend: what the daemon asks
    def undo(self) -> int:
        """Drop the boost and release the jobs held through :meth:`hold` (not the gate's submit holds)."""
        undone = len(self._boosted) + len(self._held_by_agent)
        if self._boosted and self.dynamic is not None:
            self._boost_dynamic(())
        elif self._boosted:
            for j in self._boosted:
                self._key_of.pop(j, None)
            self._boosted = []
            self._requeue_all()
        for j in sorted(self._held_by_agent):
            self.release(int(self.workload.job_id[j]))
        return undone

    def changes(self) -> dict[str, int]:
        return {"boosted": len(self._boosted), "held": len(self._held_by_agent), "drained": 0}

    def release_gated(self) -> int:
        """Release every held job: in the simulator every hold is rlsched's (submit gate or agent)."""
        held = list(self._held)
        for j in held:
            self.release(int(self.workload.job_id[j]))
        return len(held)

    def _label_rows(self) -> list[tuple[int, str]]:
        return (
            [(j, "pending") for j in self._qjobs]
            + [(j, "held") for j in self._held]
            + [(j, "running") for j in self._rjob]
        )

    def _account(self, j: int) -> str:
        vo = int(self.workload.vo[j])
        names = self.workload.vo_names
        return names[vo] if 0 <= vo < len(names) else str(vo)

    def queue_counts(self) -> dict[tuple[str, str, str, str], int]:
        """Jobs now by (partition = the simulator's name, account = VO, class, state)."""
        partition = self.name or "sim"
        counts: Counter[tuple[str, str, str, str]] = Counter()
        for j, state in self._label_rows():
            cls = JobClass(int(self.workload.job_class[j])).name.lower()
            counts[(partition, self._account(j), cls, state)] += 1
        return dict(counts)

    def job_labels(self) -> dict[int, tuple[str, str]]:
        partition = self.name or "sim"
        return {int(self.workload.job_id[j]): (partition, self._account(j)) for j, _ in self._label_rows()}

    def heartbeat_fields(self) -> dict[str, object]:
        return {}  # no gate watchdog watches a simulation

    def describe(self) -> str:
        return f"simulator ({self.name or self.workload.name}, {self.cores} cores; undo record in memory)"
