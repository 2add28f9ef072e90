"""Run summaries of a schedule: per-job and per-run measures.

Per job: wait, responsiveness W = run/(run+wait) (P-grid §3.2; 1 for a job that
neither waited nor ran), bounded slowdown max((wait+run)/max(run, τ), 1) with
τ = 10 s (Feitelson et al., JSSPP 1997).  Per run: means, medians and percentiles,
utilization, makespan, per class (interactive/batch) and per VO, and the share of
interactive jobs that waited under two minutes (P-fqi §1: the delay the grid
community accepts).  The first and last ``trim`` jobs (by submit order) can be left
out of the statistics, as P-grid §4.1 does with 500; they are still simulated.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rlsched.core.measures import (
    BOUNDED_SLOWDOWN_TAU_S,
    INTERACTIVE_TARGET_WAIT_S,
    GroupStats,
    bounded_slowdown,
    core_seconds,
    cpu_share,
    responsiveness,
    stats_by_group,
    utilization,
)
from rlsched.core.view import BoolArray, JobClass
from rlsched.sim.engine import Schedule

PERCENTILES = (50, 90, 95, 99)

#: W, bounded slowdown and the per-group statistics are defined in :mod:`rlsched.core.measures`.
__all__ = ["BOUNDED_SLOWDOWN_TAU_S", "INTERACTIVE_TARGET_WAIT_S", "PERCENTILES", "summarize", "trim_mask"]


def trim_mask(n: int, trim: int) -> BoolArray:
    """True for the jobs kept in the statistics (all but the first and last ``trim``)."""
    if trim < 0:
        raise ValueError("trim must be >= 0")
    keep = np.zeros(n, dtype=np.bool_)
    if 2 * trim < n:
        keep[trim : n - trim] = True
    return keep


def _summary_keys(stats: GroupStats) -> dict[str, Any]:
    """The keys of one ``by_class``/``by_vo`` entry of the run summary."""
    return {
        "jobs": stats.jobs,
        "mean_wait_s": stats.mean_wait_s,
        "median_wait_s": stats.median_wait_s,
        "mean_responsiveness": stats.mean_w,
        "sd_responsiveness": stats.sd_w,
        "frac_wait_under_120s": stats.frac_wait_under_target,
    }


def summarize(
    schedule: Schedule, *, trim: int = 0, workload_label: str | None = None, scheduler: str | None = None
) -> dict[str, Any]:
    """The run summary (the keys of ``rlsched sim run --json``)."""
    wl = schedule.workload
    n = len(wl)
    wait = schedule.wait
    run = schedule.run
    if n and (not np.isfinite(schedule.start).all() or (wait < -1e-9).any()):
        raise ValueError("schedule has jobs that never started or started before their submission")
    keep = trim_mask(n, trim)
    wk, rk = wait[keep], run[keep]
    wresp = responsiveness(run_s=rk, wait_s=wk)
    bsld = bounded_slowdown(run_s=rk, wait_s=wk)
    first = float(wl.submit.min()) if n else 0.0
    last_end = float(schedule.end.max()) if n else 0.0
    makespan = last_end - first
    work = float(np.sum(core_seconds(run, wl.procs)))
    out: dict[str, Any] = {
        "workload": workload_label or wl.name,
        "scheduler": scheduler or schedule.scheduler,
        "cores": schedule.cores,
        "jobs": int(keep.sum()),
        "jobs_simulated": n,
        "jobs_trimmed": int(n - keep.sum()),
        "jobs_dropped": dict(wl.dropped),
        "fields_fixed": dict(wl.fixed),
        "killed_at_limit": schedule.killed_at_limit,
        "mean_wait_s": float(wk.mean()) if len(wk) else None,
        "median_wait_s": float(np.median(wk)) if len(wk) else None,
        "wait_percentiles_s": (
            {str(p): float(v) for p, v in zip(PERCENTILES, np.percentile(wk, PERCENTILES), strict=True)}
            if len(wk)
            else {}
        ),
        "mean_bounded_slowdown": float(bsld.mean()) if len(wk) else None,
        "median_bounded_slowdown": float(np.median(bsld)) if len(wk) else None,
        "mean_responsiveness": float(wresp.mean()) if len(wk) else None,
        "utilization": utilization(work, schedule.cores, makespan),
        "makespan_s": makespan,
        "sim_seconds": schedule.sim_seconds,
    }
    cls = wl.job_class[keep]
    classes = (("interactive", int(JobClass.INTERACTIVE)), ("batch", int(JobClass.BATCH)))
    class_stats = stats_by_group(cls, wresp, wk, [value for _, value in classes])
    out["by_class"] = {name: _summary_keys(class_stats[value]) for name, value in classes}
    vo = wl.vo[keep]
    kept_work = core_seconds(rk, wl.procs[keep])
    by_vo: dict[str, Any] = {}
    for index, vo_stats in stats_by_group(vo, wresp, wk, np.unique(vo).tolist()).items():
        name = wl.vo_names[index] if index < len(wl.vo_names) else str(index)
        stats = _summary_keys(vo_stats)
        stats["cpu_share"] = cpu_share(kept_work, vo == index)
        by_vo[name] = stats
    out["by_vo"] = by_vo
    return out
