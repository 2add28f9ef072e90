"""The FH workloads (FH Table 1) as they are set up here, and the numbers FH published.

FH used older versions of three Parallel Workloads Archive logs.  The files here are
the current ``-cln`` versions (see /work/shared/traces/README.md).  FH's job counts
tell which part of each log they simulated:

* KTH-SP2: FH 28,479 jobs on M = 100; the whole file has 28,476 records, 28,475 after
  the reader drops one without a processor count.  FH used the whole log (≈ 11 months).
* CTC-SP2: FH 77,199 jobs on M = 430; the whole file has 77,222 jobs (its first 11
  months only 76,264), so FH used the whole log.  Its header gives MaxNodes 338
  ("batch partition; 512 total"); FH's 430 comes from an older version.  ``ctc`` uses
  FH's M = 430, ``ctc-file`` the file's 338.
* SDSC-DS (DataStar): FH 74,903 jobs over 11 months on M = 1664; the file covers 13
  months (85,045 jobs with a runtime).  The first 11 months *from the log's start time*
  (header StartTime; the first job comes 24.7 days later) hold 74,244 jobs, FH's count
  within 1 %; 11 months from the first job would hold 79,552.  ``sdsc`` is that cut,
  ``sdsc-file`` the whole 13 months.

"11 months" is 11 × 30.44 days = 334.8 days.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from rlsched.core.view import FloatArray
from rlsched.sim.hybrid_cloud.hybrid import HybridModel, day_edges
from rlsched.sim.workload import Workload

#: Days in the 11-month cut of FH §2.2.
ELEVEN_MONTHS_DAYS = 11 * 30.44


@dataclass(frozen=True)
class TraceSetup:
    """A workload as simulated: trace file, local machine size M and the cut (days from the first submit)."""

    name: str
    label: str
    trace: str
    cores: int
    days: float | None
    note: str


SETUPS: dict[str, TraceSetup] = {
    "kth": TraceSetup("kth", "KTH", "KTH-SP2-1996-2.1-cln", 100, None, "FH setup: the whole log (≈ 11 months), M=100"),
    "ctc": TraceSetup(
        "ctc", "CTC", "CTC-SP2-1996-3.1-cln", 430, None, "FH setup: the whole log (≈ 11 months), M=430 (FH Table 1)"
    ),
    "sdsc": TraceSetup(
        "sdsc",
        "SDSC05",
        "SDSC-DS-2004-2.1-cln",
        1664,
        ELEVEN_MONTHS_DAYS,
        "FH setup: the first 11 of 13 months (from the log's start time), M=1664",
    ),
    "ctc-file": TraceSetup("ctc-file", "CTC (file)", "CTC-SP2-1996-3.1-cln", 338, None, "whole file, the file's M=338"),
    "sdsc-file": TraceSetup(
        "sdsc-file", "SDSC (file)", "SDSC-DS-2004-2.1-cln", 1664, None, "whole file (13 months), M=1664"
    ),
    "kth-quick": TraceSetup(
        "kth-quick",
        "KTH (3 weeks)",
        "KTH-SP2-1996-2.1-cln",
        100,
        28.0,
        "first 4 weeks of the KTH log (3 weeks of jobs), for tests",
    ),
    "ctc-quick": TraceSetup(
        "ctc-quick", "CTC (3 weeks)", "CTC-SP2-1996-3.1-cln", 430, 21.0, "first 3 weeks of the CTC log, for tests"
    ),
}

#: The FH reproduction proper (FH Tables 2–4).
FH_SETUPS = ("kth", "ctc", "sdsc")

#: FH Table 1 (jobs, M, utilisation %) and the published results, by setup label.
FH_PUBLISHED: dict[str, dict[str, float]] = {
    "kth": {
        "jobs": 28479,
        "M": 100,
        "util_pct": 68.9,
        "best_V": 31,
        "best_twt_imp": 70.38,
        "best_cost": 45.39,
        "best_balance": 25.0,
        "random_mean": 14.0,
        "random_best": 20.0,
        "q_twt_imp": 46.54,
        "q_cost": 22.31,
        "q_balance": 24.23,
    },
    "ctc": {
        "jobs": 77199,
        "M": 430,
        "util_pct": 66.2,
        "best_V": 62,
        "best_twt_imp": 58.46,
        "best_cost": 30.43,
        "best_balance": 28.0,
        "random_mean": 11.0,
        "random_best": 18.0,
        "q_twt_imp": 46.66,
        "q_cost": 23.67,
        "q_balance": 22.99,
    },
    "sdsc": {
        "jobs": 74903,
        "M": 1664,
        "util_pct": 60.1,
        "best_V": 184,
        "best_twt_imp": 51.53,
        "best_cost": 30.14,
        "best_balance": 21.4,
        "random_mean": 5.0,
        "random_best": 11.0,
        "q_twt_imp": 34.44,
        "q_cost": 20.69,
        "q_balance": 13.75,
    },
}


def setup(name: str) -> TraceSetup:
    try:
        return SETUPS[name]
    except KeyError:
        raise ValueError(f"unknown leasing setup {name!r}; choose from {', '.join(SETUPS)}") from None


#: Jittered replays (:meth:`rlsched.sim.workload.Workload.jittered`): each submit moves by up to this much.
JITTER_S = 300.0


@functools.lru_cache(maxsize=8)
def load_workload(name: str, jitter_seed: int = 0) -> Workload:
    """The setup's workload (read once per process); ``jitter_seed`` > 0: a jittered replay of it."""
    from rlsched.sim.traces.swf import read_swf, resolve_trace

    s = setup(name)
    if jitter_seed < 0:
        raise ValueError("jitter_seed must be >= 0")
    workload = read_swf(resolve_trace(s.trace), max_procs=s.cores)
    if s.days is not None:
        # Times count from the log's start time (header StartTime), as calendar months do.
        workload = workload.cut(0.0, s.days * 86_400.0, name=f"{workload.name}[{s.days:g}d]")
    if jitter_seed:
        workload = workload.jittered(jitter_seed, JITTER_S, name=f"{workload.name}~{jitter_seed}")
    return workload


@functools.lru_cache(maxsize=8)
def load_model(name: str, jitter_seed: int = 0) -> tuple[HybridModel, FloatArray]:
    """The hybrid model of a setup and its day edges (built once per process)."""
    model = HybridModel(load_workload(name, jitter_seed), setup(name).cores)
    return model, day_edges(model)
