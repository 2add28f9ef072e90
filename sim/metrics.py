"""Per-job and per-run metrics of a schedule.

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

from rlsched.core.view import BoolArray, FloatArray, JobClass
from rlsched.sim.engine import Schedule

#: Bounded-slowdown threshold (s): runtimes under it count as τ.
BOUNDED_SLOWDOWN_TAU_S = 10.0
#: The acceptable middleware delay for interactive jobs (P-fqi §1).
INTERACTIVE_TARGET_WAIT_S = 120.0
PERCENTILES = (50, 90, 95, 99)


def responsiveness(wait: FloatArray, run: FloatArray) -> FloatArray:
    """W = run / (run + wait) (P-grid §3.2); 1 where run + wait = 0."""
    total = run + wait
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, run / np.where(total > 0, total, 1.0), 1.0)


def bounded_slowdown(wait: FloatArray, run: FloatArray, tau: float = BOUNDED_SLOWDOWN_TAU_S) -> FloatArray:
    return np.maximum((wait + run) / np.maximum(run, tau), 1.0)


def trim_mask(n: int, trim: int) -> BoolArray:
    """True for the jobs kept in the statistics (all but the first and last ``trim``)."""
    if trim < 0:
        raise ValueError("trim must be >= 0")
    keep = np.zeros(n, dtype=np.bool_)
    if 2 * trim < n:
        keep[trim:n - trim] = True
    return keep


def _group_stats(wait: FloatArray, run: FloatArray, w: FloatArray) -> dict[str, Any]:
    n = len(wait)
    if n == 0:
        return {"jobs": 0, "mean_wait_s": None, "median_wait_s": None, "mean_responsiveness": None,
                "sd_responsiveness": None, "frac_wait_under_120s": None}
    return {
        "jobs": n,
        "mean_wait_s": float(wait.mean()),
        "median_wait_s": float(np.median(wait)),
        "mean_responsiveness": float(w.mean()),
        "sd_responsiveness": float(w.std()),
        "frac_wait_under_120s": float((wait < INTERACTIVE_TARGET_WAIT_S).mean()),
    }


def summarize(schedule: Schedule, *, trim: int = 0, workload_label: str | None = None,
              scheduler: str | None = None) -> dict[str, Any]:
    """The run summary (the keys of ``rlsched sim run --json``)."""
    wl = schedule.workload
    n = len(wl)
    wait = schedule.wait
    run = schedule.run
    if n and (not np.isfinite(schedule.start).all() or (wait < -1e-9).any()):
        raise ValueError("schedule has jobs that never started or started before their submission")
    keep = trim_mask(n, trim)
    wk, rk = wait[keep], run[keep]
    wresp = responsiveness(wk, rk)
    bsld = bounded_slowdown(wk, rk)
    first = float(wl.submit.min()) if n else 0.0
    last_end = float(schedule.end.max()) if n else 0.0
    makespan = last_end - first
    work = float(np.sum(run * wl.procs))
    utilization = work / (schedule.cores * makespan) if makespan > 0 else 0.0
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
        "wait_percentiles_s": ({str(p): float(v) for p, v in zip(PERCENTILES, np.percentile(wk, PERCENTILES),
                                                                 strict=True)} if len(wk) else {}),
        "mean_bounded_slowdown": float(bsld.mean()) if len(wk) else None,
        "median_bounded_slowdown": float(np.median(bsld)) if len(wk) else None,
        "mean_responsiveness": float(wresp.mean()) if len(wk) else None,
        "utilization": utilization,
        "makespan_s": makespan,
        "sim_seconds": schedule.sim_seconds,
    }
    cls = wl.job_class[keep]
    out["by_class"] = {
        name: _group_stats(wk[cls == value], rk[cls == value], wresp[cls == value])
        for name, value in (("interactive", JobClass.INTERACTIVE), ("batch", JobClass.BATCH))
    }
    vo = wl.vo[keep]
    by_vo: dict[str, Any] = {}
    for index in np.unique(vo).tolist():
        name = wl.vo_names[index] if index < len(wl.vo_names) else str(index)
        m = vo == index
        stats = _group_stats(wk[m], rk[m], wresp[m])
        stats["cpu_share"] = float(np.sum(rk[m] * wl.procs[keep][m]) / max(np.sum(rk * wl.procs[keep]), 1e-12))
        by_vo[name] = stats
    out["by_vo"] = by_vo
    return out
