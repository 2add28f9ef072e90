"""The replay of recorded schedules, and the former ``--scheduler`` names.

The classic schedulers are registry rules (:mod:`rlsched.core.policies`): an ordering of
the queue (a static priority key per job) plus a choice of backfilling — just as a Slurm
site configures its priority weights and ``sched/backfill`` — run by
:func:`rlsched.sim.policies.simulate_policy`.  This module keeps ``native`` (the start
times the trace recorded) and maps the names ``rlsched sim run --scheduler`` used to take
onto registry policies (:func:`legacy_scheduler`).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from rlsched.core.policies import PolicySpec, resolve
from rlsched.sim.engine import Schedule
from rlsched.sim.workload import Workload

#: The scheduler names of ``rlsched sim run --scheduler`` (deprecated: use ``--policy``), and ``native``.
SCHEDULER_NAMES = ("fcfs", "easy", "sjf", "edf", "native")


def legacy_scheduler(scheduler: str, backfill: bool | None = None) -> tuple[PolicySpec, str]:
    """The registry policy a former ``--scheduler`` name (and ``--backfill`` choice) stands for, and its label.

    ``fcfs``/``easy`` and ``sjf``/``easy-sjf`` differ only by backfilling; ``edf`` is the
    registry's EDF (:func:`rlsched.core.agents.edf_deadline`) under the ``requested`` runtime
    model, a static key the native scheduler runs (before, its deadline was submit +
    requested time, i.e. a W target of 1/2; now the target is the agents' 0.9).
    """
    if scheduler == "native":
        if backfill is not None:
            raise ValueError("'native' replays recorded starts; --backfill does not apply")
        return resolve("native"), "native"
    defaults = {"fcfs": False, "easy": True, "sjf": False, "edf": False}
    if scheduler not in defaults:
        raise ValueError(f"unknown scheduler {scheduler!r}; choose from {', '.join(SCHEDULER_NAMES)}")
    base = defaults[scheduler]
    use_backfill = base if backfill is None else backfill
    label = scheduler if use_backfill == base else f"{scheduler}+{'easy' if use_backfill else 'nobf'}"
    if scheduler == "edf":
        return resolve("edf", runtime_model="requested", backfill=use_backfill), label
    if scheduler == "sjf":
        return resolve("easy-sjf" if use_backfill else "sjf"), label
    return resolve("easy" if use_backfill else "fcfs"), label


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
    return Schedule(
        workload=workload,
        cores=workload.max_procs,
        start=start,
        end=start + workload.run,
        killed_at_limit=0,
        sim_seconds=0.0,
        scheduler="native",
    )


def with_recorded_waits(workload: Workload) -> Workload:
    """The jobs whose wait the trace recorded (the others are dropped and counted as ``wait_missing``)."""
    known = np.isfinite(workload.recorded_wait)
    if known.all() or not known.any():
        return workload
    dropped = dict(workload.dropped)
    dropped["wait_missing"] = dropped.get("wait_missing", 0) + int((~known).sum())
    return replace(workload.select(known), dropped=dropped)
