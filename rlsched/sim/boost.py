"""Boost mode in a replay: the agent's ranking steers the batch system's priority order, as the daemon does it.

Live, boost mode (``[backend] mode = "boost"``) never holds a job: every ``poll_interval_s`` the daemon asks
the agent for its ranking of the pending jobs and gives the first ``max_boosted`` of them a ladder of
Nice offsets (Slurm, ``rlsched/backends/slurm/backend.py``; PBS does the same with ``qalter -p``): rank
*i* of *k* gets ``Nice = −step·(k − i)``, ``step`` a power of ten above any base priority, so the boosted
jobs go first in ranking order and every other job keeps the place the site's own priority gives it.
Slurm's scheduler and its backfill then start jobs as they always do.

Here the same happens in the engine (:class:`rlsched.sim.engine.Simulator`):

- the site's order is a :class:`rlsched.sim.engine.DynamicPriority`: ``fifo`` (equal priorities, ties by
  submit order) or Slurm's priority/multifactor (:class:`rlsched.sim.multifactor.MultifactorPriority`,
  re-computed every PriorityCalcPeriod);
- :class:`BoostPriority` lays the Nice ladder over it: priority = base + ``step·(k − i)`` for the boosted
  jobs; a boosted job's base priority is re-computed when its offset changes (Slurm re-computes a job's
  priority when its Nice is updated), every other job keeps its priority until the next base pass;
- the agent is asked only every ``poll_interval_s`` of simulated time (``Simulator(every_event=False)``),
  after the scheduler's pass at that instant; a changed order gets a scheduling pass at once (polls that
  can change nothing are deferred, see ``BoostSettings.quiet_polls``).  Jobs that
  arrive between polls queue in the base order until the next poll; a boosted job that starts keeps
  nothing, the others keep their offsets until the next poll re-ranks;
- EASY backfilling behind the queue head, with reservations and kill times from the requested time (the
  time limit): what an agent believes a job's runtime to be changes its rank, never its reservation.

The model is written out, with what it leaves out, in docs/slurm.md ("Boost mode in the simulator").
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from rlsched.core.view import Agent, FloatArray, IntArray
from rlsched.sim.engine import DEFAULT_OVERRUN, DynamicPriority, Overrun, QuietPolls, Schedule, Simulator
from rlsched.sim.workload import Workload

#: The Slurm backend's default ``max_boosted`` (``SlurmBackendConfig``; a test keeps the two equal — the
#: simulator may not import a backend).
DEFAULT_MAX_BOOSTED = 32
#: Slurm keeps Nice in 32 bits around an offset of 2^31: the ladder must stay below this (the backend's bound).
MAX_NICE = 2**31 - 4
#: The site orders boost mode can lay its ladder over (besides a ``multifactor`` policy spec).
BASE_FIFO = "fifo"


@dataclass(frozen=True)
class BoostSettings:
    """How the daemon runs boost mode, for a replay.

    - ``poll_interval_s``: the daemon's ``[backend] poll_interval_s``: how often the agent ranks.
    - ``max_boosted``: the backend's ``max_boosted``: how many top-ranked pending jobs get an offset.
    - ``base``: the site's own order: ``fifo``, or a ``multifactor`` policy spec (``multifactor``,
      ``multifactor:slurm_conf=/etc/slurm/slurm.conf``, ``multifactor:weight_age=5000,…``), whose
      ``backfill`` parameter also decides backfilling (``fifo``: EASY backfilling).
    - ``quiet_polls``: make every poll when it falls due.  Off by default: a poll before which nothing was
      submitted, started or finished and at which no queued job fits the idle cores can start nothing, so it
      is deferred and only the last such poll before the next event is made (at its own instant's view):
      the same schedule for any agent that keeps no state between polls (a rule, a fixed model), in less
      time; a learner draws its exploration at fewer polls (``Simulator._poll``).
    """

    poll_interval_s: float = 10.0
    max_boosted: int = DEFAULT_MAX_BOOSTED
    base: str = BASE_FIFO
    quiet_polls: bool = False

    def __post_init__(self) -> None:
        if not (math.isfinite(self.poll_interval_s) and self.poll_interval_s > 0):
            raise ValueError(f"boost: poll_interval_s must be > 0, got {self.poll_interval_s}")
        if self.max_boosted < 1:
            raise ValueError(f"boost: max_boosted must be >= 1, got {self.max_boosted}")
        name = self.base.strip().partition(":")[0].strip()
        if name not in (BASE_FIFO, "multifactor"):
            raise ValueError(f"boost: base must be 'fifo' or a 'multifactor' policy spec, got {self.base!r}")

    @property
    def base_is_fifo(self) -> bool:
        return self.base.strip() == BASE_FIFO


def nice_step(bound: float) -> int:
    """The gap between two ranks of the ladder: a power of ten above ``bound``, the largest base priority
    (the Slurm backend's ``nice_step``)."""
    step = int(10 ** math.ceil(math.log10(bound + 1))) if bound > 0 else 1
    return min(step, MAX_NICE)


class BoostPriority:
    """A :class:`rlsched.sim.engine.BoostablePriority`: a base priority with rlsched's Nice ladder on top.

    ``base`` None is FIFO (every base priority 0, ties by submit order); ``bound`` is the largest
    priority the base can give (multifactor: the sum of its weights), which sets the ladder's step.
    """

    def __init__(self, n_rows: int, base: DynamicPriority | None, *, max_boosted: int, bound: float) -> None:
        if max_boosted < 1:
            raise ValueError(f"max_boosted must be >= 1, got {max_boosted}")
        self.base = base
        self.step = nice_step(bound)
        # The backend boosts no more ranks than fit in Slurm's Nice range.
        self.max_boosted = max(1, min(max_boosted, MAX_NICE // self.step))
        if self.step * self.max_boosted + bound >= 2.0**32:
            raise ValueError(
                f"boost: a ladder of {self.max_boosted} steps of {self.step} over priorities up to "
                f"{bound:g} leaves Slurm's 32-bit priority range"
            )
        self._base_priority: FloatArray = np.zeros(n_rows, dtype=np.float64)
        self._offset: FloatArray = np.zeros(n_rows, dtype=np.float64)
        self._boosted: list[int] = []
        #: Polls whose ranking changed at least one offset, and offsets changed in all (the daemon's
        #: ``scontrol update`` calls).
        self.reboosts = 0
        self.offsets_changed = 0

    @property
    def boosted(self) -> list[int]:
        """The rows that hold an offset now, best first."""
        return list(self._boosted)

    # ------------------------------------------------------------------ DynamicPriority
    def submit_priority(self, row: int, now: float) -> float:
        p = self.base.submit_priority(row, now) if self.base is not None else 0.0
        self._base_priority[row] = p
        return p

    def priorities(self, rows: IntArray, now: float) -> FloatArray:
        if self.base is not None:
            self._base_priority[rows] = self.base.priorities(rows, now)
        out: FloatArray = self._base_priority[rows] + self._offset[rows]
        return out

    def started(self, row: int, now: float) -> None:
        if self.base is not None:
            self.base.started(row, now)
        if self._offset[row]:
            # A running job's Nice orders nothing; the next poll's ranking no longer holds it.
            self._offset[row] = 0.0
            self._boosted.remove(row)

    def ended(self, row: int, now: float) -> None:
        if self.base is not None:
            self.base.ended(row, now)

    def next_pass(self, now: float) -> float:
        return self.base.next_pass(now) if self.base is not None else math.inf

    # ------------------------------------------------------------------ the boost lever
    def boost(self, rows: Sequence[int], now: float) -> dict[int, float]:
        """The daemon's boost: the first ``max_boosted`` of ``rows`` (queued, best first) get the ladder, the
        jobs boosted before and not now lose their offset.  Returns the new priority of every changed row."""
        top = list(dict.fromkeys(rows))[: self.max_boosted]
        k = len(top)
        wanted = {row: float(self.step * (k - rank)) for rank, row in enumerate(top)}
        changed = [row for row in self._boosted if row not in wanted]
        changed += [row for row, offset in wanted.items() if self._offset[row] != offset]
        for row in self._boosted:
            self._offset[row] = 0.0
        for row, offset in wanted.items():
            self._offset[row] = offset
        self._boosted = top
        if not changed:
            return {}
        self.reboosts += 1
        self.offsets_changed += len(changed)
        rows_changed = np.array(changed, dtype=np.int64)
        if self.base is not None:
            # Slurm re-computes a job's priority when its Nice changes (the others wait for the next pass).
            self._base_priority[rows_changed] = self.base.priorities(rows_changed, now)
        new = self._base_priority[rows_changed] + self._offset[rows_changed]
        return dict(zip(changed, new.tolist(), strict=True))


def simulate_boost(
    workload: Workload,
    agent: Agent,
    settings: BoostSettings,
    base: DynamicPriority | None,
    bound: float,
    cores: int | None = None,
    *,
    backfill: bool = True,
    ranks_queue_only: bool = False,
    overrun: Overrun = DEFAULT_OVERRUN,
    progress: Callable[[int], None] | None = None,
    name: str = "",
) -> tuple[Schedule, BoostPriority]:
    """Replay ``workload`` with ``agent`` (built for boost mode) ranking every ``settings.poll_interval_s``
    over ``base`` (None: FIFO; ``bound``: its largest priority).  ``ranks_queue_only``: the agent's ranking
    is a function of the pending jobs alone (a static key), so quiet polls are skipped, not deferred.
    Returns the schedule (``mode="boost"``) and the overlay (its counters)."""
    priority = BoostPriority(len(workload), base, max_boosted=settings.max_boosted, bound=bound)
    quiet: QuietPolls = "all" if settings.quiet_polls else "skip" if ranks_queue_only else "defer"
    sim = Simulator(
        workload,
        cores,
        dynamic=priority,
        agent=agent,
        tick_s=settings.poll_interval_s,
        every_event=False,
        quiet_polls=quiet,
        backfill=backfill,
        overrun=overrun,
        name=name,
    )
    schedule = sim.run(progress=progress)
    return replace(schedule, mode="boost"), priority
