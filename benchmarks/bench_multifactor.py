"""Speed of the ``multifactor`` policy (Slurm's priority/multifactor + EASY) against plain EASY, same run.

Run:  RLSCHED_TRACE_DIR=/path/to/traces .venv/bin/python benchmarks/bench_multifactor.py [--trace NAME]

Prints, per variant, the replay time of the whole trace (CTC-SP2 by default, 77k jobs), jobs per
second, the number of priority passes, the mean wait, and the ratio to EASY measured in the same
process (the baseline).  Target (issue 13): multifactor evaluates CTC-SP2 in seconds.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from rlsched.sim.policies import simulate_policy
from rlsched.sim.traces.swf import read_swf, resolve_trace

VARIANTS = (
    "easy",
    "multifactor",
    "multifactor:fair_tree=false",
    "multifactor:users=true",
    "multifactor:calc_period_s=60",
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", default="CTC-SP2-1996-3.1-cln")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    t0 = time.perf_counter()
    workload = read_swf(resolve_trace(args.trace))
    print(
        f"{args.trace}: {len(workload):,} jobs, {workload.max_procs} cores, loaded in {time.perf_counter() - t0:.1f} s"
    )
    base = None
    for spec in VARIANTS:
        best = float("inf")
        for _ in range(args.repeat):
            t = time.perf_counter()
            run = simulate_policy(workload, spec)
            best = min(best, time.perf_counter() - t)
        base = best if base is None else base
        wait = float(np.mean(run.schedule.wait))
        print(
            f"{spec:32s} {best:6.2f} s  {len(workload) / best:9,.0f} jobs/s  mean wait {wait:9,.0f} s  "
            f"× EASY {best / base:5.2f}"
        )


if __name__ == "__main__":
    main()
