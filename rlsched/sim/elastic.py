"""An elastic pool for the simulator: the pool size (cores) is chosen every period (P-grid §3.2, §4.1).

:class:`ElasticSimulator` is the rigid :class:`~rlsched.sim.engine.Simulator` whose
``set_lease_cap(n)`` sets the number of cores of the pool from now on (every core of
the elastic pool is leased, so the lease cap *is* the pool size).  The simulator
enforces the constraints of P-grid §4.1, whatever the agent asks:

- the pool size stays fixed for at least ``hold_s`` (15 minutes) after each change —
  a request inside the hold period is refused and counted in ``refused_requests``;
- the pool never drops below ``min_cores`` (30), nor below the cores of the running
  jobs (no preemption), nor below the widest job of the workload (so no queued job can
  become unschedulable) — a request below the floor is raised to it and counted in
  ``clamped_requests``;
- the pool never exceeds ``max_cores`` (the size of the resource the pool is drawn
  from) — a request above it is cut to it and counted in ``clamped_requests``.

The pool size over time is recorded as a step function (:class:`PoolHistory`), from
which the utilization ``U = f / Σ_k P_k (T_{k+1} − T_k)`` of P-grid Eq. 3 and the
pool-size figures are computed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from rlsched.core.measures import core_seconds, elastic_utilization, pool_core_seconds, pool_cores_at
from rlsched.core.view import FloatArray, IntArray
from rlsched.sim.engine import Schedule, Simulator
from rlsched.sim.workload import Workload

#: P-grid §4.1: "the number of resources must remain constant for at least 15 minutes".
DEFAULT_HOLD_S = 900.0
#: P-grid §4.1: the pool never shrinks below 30 cores.
DEFAULT_MIN_CORES = 30


@dataclass(frozen=True)
class PoolHistory:
    """The pool size as a right-continuous step function: ``cores[k]`` from ``time_s[k]`` on."""

    time_s: FloatArray
    cores: IntArray

    def __post_init__(self) -> None:
        if self.time_s.shape != self.cores.shape or self.time_s.size == 0:
            raise ValueError("pool history: need as many change times as sizes, and at least one")
        if np.any(np.diff(self.time_s) < 0):
            raise ValueError("pool history: change times must not decrease")

    def cores_at(self, t: FloatArray | float) -> IntArray:
        """Pool size at time(s) ``t`` (the initial size before the first recorded time)."""
        return pool_cores_at(self.time_s, self.cores, t)

    def core_seconds(self, t0: float, t1: float) -> float:
        """``Σ_k P_k (T_{k+1} − T_k)`` over ``[t0, t1]`` (the denominator of P-grid Eq. 3)."""
        return pool_core_seconds(self.time_s, self.cores, t0, t1)

    def mean_cores(self, t0: float, t1: float) -> float:
        return self.core_seconds(t0, t1) / (t1 - t0) if t1 > t0 else float(self.cores_at(t0))


def pool_utilization(schedule: Schedule, history: PoolHistory) -> float:
    """U of P-grid Eq. 3 over the whole run: CPU-seconds of the jobs / core-seconds of the pool.

    The span is from the first submit to the last end, the same span as the rigid
    utilization of :func:`rlsched.sim.summary.summarize`, so the two compare directly.
    """
    wl = schedule.workload
    if len(wl) == 0:
        return 0.0
    t0, t1 = float(wl.submit.min()), float(schedule.end.max())
    work = float(np.sum(core_seconds(schedule.run, wl.procs)))
    return elastic_utilization(work, history.time_s, history.cores, t0, t1)


class ElasticSimulator(Simulator):
    """A simulator whose pool size an agent sets through ``set_lease_cap`` (see the module docstring).

    Args:
        workload: the jobs.
        initial_cores: pool size at the start.
        max_cores: the largest pool the agent may ask for.
        min_cores: the floor of P-grid §4.1 (30).
        hold_s: minimum time between two changes (15 minutes, P-grid §4.1).
        **options: the rest of :class:`~rlsched.sim.engine.Simulator`'s options (agent,
            hold_on_submit, tick_s, backfill, ...).
    """

    def __init__(
        self,
        workload: Workload,
        initial_cores: int,
        *,
        max_cores: int,
        min_cores: int = DEFAULT_MIN_CORES,
        hold_s: float = DEFAULT_HOLD_S,
        **options: Any,
    ) -> None:
        widest = int(workload.procs.max()) if len(workload) else 1
        self.floor_cores = max(int(min_cores), widest)
        if max_cores < self.floor_cores:
            raise ValueError(
                f"elastic pool: max_cores {max_cores} is below the floor {self.floor_cores} "
                f"(min_cores {min_cores}, widest job {widest})"
            )
        if not self.floor_cores <= initial_cores <= max_cores:
            raise ValueError(
                f"elastic pool: initial_cores {initial_cores} must lie in [{self.floor_cores}, {max_cores}]"
            )
        if hold_s < 0:
            raise ValueError(f"elastic pool: hold_s must be ≥ 0, got {hold_s}")
        super().__init__(workload, initial_cores, **options)
        self.max_cores = int(max_cores)
        self.min_cores = int(min_cores)
        self.hold_s = float(hold_s)
        start = float(workload.submit[0]) if len(workload) else 0.0
        self.now = start
        self.last_change_s = start
        self._pool_times: list[float] = [start]
        self._pool_cores: list[int] = [int(initial_cores)]
        self.refused_requests = 0
        self.clamped_requests = 0

    def set_lease_cap(self, n: int) -> None:
        """Set the pool size from now on, within the P-grid §4.1 constraints (module docstring)."""
        n = int(n)
        if n == self.cores:
            return
        if self.now - self.last_change_s < self.hold_s:
            self.refused_requests += 1
            return
        busy = self.cores - self.free
        size = min(max(n, self.floor_cores, busy), self.max_cores)
        if size != n:
            self.clamped_requests += 1
        if size == self.cores:
            return
        self.free += size - self.cores
        self.cores = size
        self.last_change_s = self.now
        if self._pool_times[-1] == self.now:  # two changes at one instant: the last one holds
            self._pool_cores[-1] = size
        else:
            self._pool_times.append(self.now)
            self._pool_cores.append(size)

    @property
    def pool_history(self) -> PoolHistory:
        return PoolHistory(np.array(self._pool_times, dtype=np.float64), np.array(self._pool_cores, dtype=np.int64))

    def run(self, progress: Callable[[int], None] | None = None, progress_every: int = 5000) -> Schedule:
        """Replay the workload; the returned schedule's ``cores`` is the largest pool used."""
        schedule = super().run(progress=progress, progress_every=progress_every)
        return Schedule(
            workload=schedule.workload,
            cores=max(self._pool_cores),
            start=schedule.start,
            end=schedule.end,
            killed_at_limit=schedule.killed_at_limit,
            sim_seconds=schedule.sim_seconds,
            scheduler=schedule.scheduler,
        )
