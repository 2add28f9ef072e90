"""Boost mode's cost: the same policies replayed in gate and in boost mode on the first jobs of CTC-SP2.

Run:  RLSCHED_TRACE_DIR=/path/to/traces .venv/bin/python benchmarks/bench_boost.py [--jobs 20000]

Prints, per policy and mode: wall time of the replay, mean bounded slowdown, mean W and mean wait, so
the speed cost of boost mode (:mod:`rlsched.sim.boost`) is measured with the result it gives.
``--quiet-polls`` also runs boost mode with every poll made (``BoostSettings.quiet_polls``), the reference
the skipped and deferred polls must agree with.
"""

from __future__ import annotations

import argparse
import time

from rlsched.sim.boost import BoostSettings
from rlsched.sim.policies import simulate_policy
from rlsched.sim.summary import summarize
from rlsched.sim.traces.swf import read_swf, resolve_trace

TRACE = "CTC-SP2-1996-3.1-cln"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--policies", default="easy-sjf,sarsa-esn")
    parser.add_argument("--quiet-polls", action="store_true")
    args = parser.parse_args()
    workload = read_swf(resolve_trace(TRACE))
    workload = workload.select(slice(0, args.jobs), name=f"{TRACE}[:{args.jobs}]")
    span_days = (float(workload.submit[-1]) - float(workload.submit[0])) / 86400.0
    print(f"{workload.name}: {len(workload)} jobs over {span_days:.0f} days, {workload.max_procs} cores")
    runs: list[tuple[str, str, BoostSettings | None]] = [("gate", "", None), ("boost", "", BoostSettings())]
    if args.quiet_polls:
        runs.append(("boost", " (every poll)", BoostSettings(quiet_polls=True)))
    for policy in args.policies.split(","):
        for mode, note, settings in runs:
            t0 = time.perf_counter()
            run = simulate_policy(workload, policy, mode="boost" if mode == "boost" else "gate", boost=settings)
            wall = time.perf_counter() - t0
            summary = summarize(run.schedule)
            print(
                f"{policy:12s} {mode + note:20s} {wall:7.1f} s   bsld {summary['mean_bounded_slowdown']:8.2f}   "
                f"W {summary['mean_responsiveness']:.3f}   mean wait {summary['mean_wait_s']:8.0f} s",
                flush=True,
            )


if __name__ == "__main__":
    main()
