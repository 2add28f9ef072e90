"""The field's rules per trace: bounded slowdown with EASY backfilling, on the request, predictions, the oracle.

Run:  RLSCHED_TRACE_DIR=/path/to/traces nice -n 10 .venv/bin/python benchmarks/bench_rules.py \
          [--trace CTC-SP2-1996-3.1-cln ...] [--policy easy-sjf ...]

The second half of each trace (jobs from the middle one on, by submit order) is replayed alone on the trace's
machine, as issue 23's table does; every rule runs with ``backfill=true``.  Prints mean bounded slowdown
(τ = 10 s), mean wait and the replay's wall time per policy.  :func:`rule_table` is the function to call.
"""

from __future__ import annotations

import argparse
import time

from rlsched.sim.policies import simulate_policy
from rlsched.sim.summary import summarize
from rlsched.sim.traces.swf import read_swf, resolve_trace
from rlsched.sim.workload import Workload

TRACES = ("CTC-SP2-1996-3.1-cln", "SDSC-DS-2004-2.1-cln", "KTH-SP2-1996-2.1-cln", "LPC-EGEE-2004-1.2-cln")
POLICIES = (
    "easy",
    "easy-sjf",
    "saf:backfill=true",
    "f1:backfill=true",
    "f2:backfill=true",
    "f3:backfill=true",
    "f4:backfill=true",
    "wfp3:backfill=true",
    "unicep:backfill=true",
    "easy-sjf:runtime_model=user-last2",
    "easy-sjf:runtime_model=learned",
    "saf:backfill=true,runtime_model=user-last2",
    "saf:backfill=true,runtime_model=learned",
    "f4:backfill=true,runtime_model=user-last2",
    "f4:backfill=true,runtime_model=learned",
    "easy-sjf:runtime_model=oracle",
    "saf:backfill=true,runtime_model=oracle",
)


def second_half(workload: Workload) -> Workload:
    """The jobs from the middle one (by submit order) on, their submit times shifted to start at 0."""
    start = float(workload.submit[len(workload) // 2])
    return workload.cut(start, float("inf"), name=f"{workload.name} (second half)")


def rule_table(workload: Workload, policies: tuple[str, ...] = POLICIES) -> list[tuple[str, float, float, float]]:
    """(policy, mean bounded slowdown, mean wait in s, wall seconds) of every policy on ``workload``."""
    rows = []
    for spec in policies:
        t0 = time.perf_counter()
        summary = summarize(simulate_policy(workload, spec).schedule)
        rows.append(
            (spec, float(summary["mean_bounded_slowdown"]), float(summary["mean_wait_s"]), time.perf_counter() - t0)
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", nargs="*", default=list(TRACES))
    parser.add_argument("--policy", nargs="*", default=list(POLICIES))
    args = parser.parse_args()
    print("| trace | policy | bsld | mean wait (s) | time (s) |")
    print("|---|---|---|---|---|")
    for name in args.trace:
        half = second_half(read_swf(resolve_trace(name)))
        for spec, bsld, wait, seconds in rule_table(half, tuple(args.policy)):
            print(f"| {name} | {spec} | {bsld:.2f} | {wait:,.0f} | {seconds:.1f} |", flush=True)


if __name__ == "__main__":
    main()
