"""Simulator speed: replays of CTC-SP2 and SDSC-DS under EASY, with baselines measured in the same run.

Run:  RLSCHED_TRACE_DIR=/path/to/traces .venv/bin/python benchmarks/bench_sim.py

Prints, per trace: load time, simulation time and jobs per second of the engine, the
same replay by the plain textbook EASY of :mod:`rlsched.sim.reference_easy` (the
baseline; ratio = textbook time / engine time), the whole ``rlsched sim run`` process
(imports, loading, simulation, metrics) with its peak memory, and a deep-queue case
(arrivals compressed, so thousands of jobs wait) with and without the vectorised
backfill scan, to show the event cost does not follow the queue length.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TypeVar

import numpy as np

from rlsched.sim import engine
from rlsched.sim.engine import Simulator, effective_runtimes
from rlsched.sim.reference_easy import textbook_easy
from rlsched.sim.traces.swf import read_swf, resolve_trace
from rlsched.sim.workload import Workload

T = TypeVar("T")
TRACES = ("CTC-SP2-1996-3.1-cln", "SDSC-DS-2004-2.1-cln")


def best_of(repeat: int, fn: Callable[[], T]) -> tuple[float, T]:
    """Best wall time of ``repeat`` calls, and the last result."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return best, result


def replay(w: Workload) -> object:
    return Simulator(w).run()


def whole_process(trace: Path) -> tuple[float, float]:
    """Wall time and peak RSS (MiB) of `rlsched sim run` on the trace, as a fresh process."""
    cmd = [sys.executable, "-m", "rlsched.cli", "sim", "run", "--workload", str(trace), "--scheduler", "easy"]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - t0
    if status != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {proc.stderr.read().decode() if proc.stderr else ''}")
    return elapsed, usage.ru_maxrss / 1024.0


def deep_queue(workload: Workload, factor: float) -> Workload:
    """The same jobs arriving ``factor`` times faster: the queue grows to thousands."""
    from dataclasses import replace

    return replace(workload, submit=workload.submit / factor, name=f"{workload.name}/x{factor:g}")


def queue_depth(w: Workload) -> tuple[float, int]:
    """Mean and max number of waiting jobs over the replay (sampled at submits)."""
    s = Simulator(w).run()
    starts = np.sort(s.start)
    waiting = np.arange(1, len(w) + 1) - np.searchsorted(starts, w.submit, side="right")
    return float(waiting.mean()), int(waiting.max())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-textbook", action="store_true", help="skip the (slow) textbook baseline")
    args = parser.parse_args()
    print(f"{'case':<34}{'jobs':>8}{'load s':>8}{'sim s':>8}{'jobs/s':>10}{'textbook s':>12}{'ratio':>8}")
    for name in TRACES:
        path = resolve_trace(name)
        t_load, w = best_of(1, partial(read_swf, path))
        t_sim, _ = best_of(args.repeat, partial(replay, w))
        if args.skip_textbook:
            t_ref = float("nan")
        else:
            runtimes, _ = effective_runtimes(w, "kill")
            t_ref, _ = best_of(1, partial(textbook_easy, w, w.max_procs, runtimes))
        print(
            f"{name + ' easy':<34}{len(w):>8}{t_load:>8.2f}{t_sim:>8.2f}{len(w) / t_sim:>10,.0f}"
            f"{t_ref:>12.2f}{t_ref / t_sim:>8.1f}"
        )
    print()
    print(f"{'whole process: rlsched sim run':<40}{'wall s':>8}{'peak MiB':>10}")
    for name in TRACES:
        elapsed, rss = whole_process(resolve_trace(name))
        print(f"{name:<40}{elapsed:>8.2f}{rss:>10.0f}")
    print()
    print(
        f"{'deep queue (arrivals compressed)':<34}{'mean q':>8}{'max q':>8}{'vector s':>10}{'plain s':>10}{'ratio':>8}"
    )
    base = read_swf(resolve_trace("SDSC-DS-2004-2.1-cln"))
    for factor in (1.0, 1.5, 2.0):
        w = deep_queue(base, factor)
        mean_q, max_q = queue_depth(w)
        t_vec, _ = best_of(args.repeat, partial(replay, w))
        saved = engine.VECTOR_SCAN_MIN_QUEUE
        engine.VECTOR_SCAN_MIN_QUEUE = 10**9
        try:
            t_plain, _ = best_of(1, partial(replay, w))
        finally:
            engine.VECTOR_SCAN_MIN_QUEUE = saved
        print(f"{w.name:<34}{mean_q:>8.0f}{max_q:>8}{t_vec:>10.2f}{t_plain:>10.2f}{t_plain / t_vec:>8.1f}")


if __name__ == "__main__":
    main()
