"""The classic schedulers, as configurations of the simulator's native scheduler.

A classic scheduler is an ordering of the queue (a static priority key per job)
plus a choice of backfilling — just as a Slurm site configures its priority
weights and ``sched/backfill``.  Learning agents are not listed here: they steer
the same native scheduler through the Backend levers (see :mod:`rlsched.sim.engine`).

``native`` is different: it replays the start times the trace recorded.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from rlsched.core.view import FloatArray
from rlsched.sim.engine import DEFAULT_OVERRUN, Overrun, Schedule, Simulator
from rlsched.sim.workload import Workload


def _fcfs_key(w: Workload) -> FloatArray | None:
    return None  # submit order is the simulator's default


def _sjf_key(w: Workload) -> FloatArray:
    # Shortest requested time first; the actual runtime is unknown at decision time.
    return w.req_time.astype(np.float64)


def edf_deadline(w: Workload) -> FloatArray:
    """Deadline of each job for EDF: submit + requested time.

    A job that starts by this deadline has responsiveness W = run/(run+wait) >= 1/2
    if it runs as long as it asked (P-grid §3.2 measures W; its pretraining policy is
    "early deadline first", §3.3, without a stated deadline, so we take the latest
    start that keeps W at or above one half under the requested time).
    """
    return (w.submit + w.req_time).astype(np.float64)


@dataclass(frozen=True)
class SchedulerSpec:
    name: str
    description: str
    priority: Callable[[Workload], FloatArray | None]
    backfill: bool


SCHEDULERS: dict[str, SchedulerSpec] = {
    "fcfs": SchedulerSpec("fcfs", "first come first served, no backfilling", _fcfs_key, False),
    "easy": SchedulerSpec("easy", "FCFS order with EASY backfilling (Mu'alem & Feitelson 2001)",
                          _fcfs_key, True),
    "sjf": SchedulerSpec("sjf", "shortest requested time first (EASY backfilling with --backfill)",
                         _sjf_key, False),
    "edf": SchedulerSpec("edf", "earliest deadline (submit + requested time) first "
                         "(EASY backfilling with --backfill)", edf_deadline, False),
}

#: Every scheduler name the CLI accepts.
SCHEDULER_NAMES = (*SCHEDULERS, "native")


def replay_native(workload: Workload) -> Schedule:
    """The schedule the trace recorded: start = submit + recorded wait.

    Jobs without a recorded wait cannot be placed; the caller must drop them
    (``workload.select(np.isfinite(workload.recorded_wait))``) and report it.
    """
    if not workload.has_recorded_waits:
        raise ValueError(f"workload {workload.name!r} has no recorded wait times: 'native' needs a real trace")
    if not np.isfinite(workload.recorded_wait).all():
        missing = int((~np.isfinite(workload.recorded_wait)).sum())
        raise ValueError(f"workload {workload.name!r}: {missing} jobs have no recorded wait; select them out first")
    start = workload.submit + workload.recorded_wait
    return Schedule(workload=workload, cores=workload.max_procs, start=start, end=start + workload.run,
                    killed_at_limit=0, sim_seconds=0.0, scheduler="native")


def with_recorded_waits(workload: Workload) -> Workload:
    """The jobs whose wait the trace recorded (the others are dropped and counted as ``wait_missing``)."""
    known = np.isfinite(workload.recorded_wait)
    if known.all() or not known.any():
        return workload
    dropped = dict(workload.dropped)
    dropped["wait_missing"] = dropped.get("wait_missing", 0) + int((~known).sum())
    return replace(workload.select(known), dropped=dropped)


def simulate(workload: Workload, scheduler: str, *, cores: int | None = None, backfill: bool | None = None,
             overrun: Overrun = DEFAULT_OVERRUN, progress: Callable[[int], None] | None = None) -> Schedule:
    """Replay ``workload`` under a named classic scheduler (see :data:`SCHEDULER_NAMES`)."""
    if scheduler == "native":
        if backfill is not None:
            raise ValueError("'native' replays recorded starts; --backfill does not apply")
        return replay_native(workload)
    try:
        spec = SCHEDULERS[scheduler]
    except KeyError:
        raise ValueError(f"unknown scheduler {scheduler!r}; choose from {', '.join(SCHEDULER_NAMES)}") from None
    use_backfill = spec.backfill if backfill is None else backfill
    label = spec.name if use_backfill == spec.backfill else f"{spec.name}+{'easy' if use_backfill else 'nobf'}"
    sim = Simulator(workload, cores, priority=spec.priority(workload), backfill=use_backfill,
                    overrun=overrun, name=label)
    return sim.run(progress=progress)
