"""FH leasing speed: a full Q-learning run per trace, certificates vs brute force, the whole reproduction.

Run:  RLSCHED_TRACE_DIR=/path/to/traces .venv/bin/python benchmarks/bench_leasing.py [--whole]
      [--setups kth,ctc,sdsc]

Prints, per setup: the FH Q-learning run (every V ∈ 0..M simulated each day from the chosen
clone) with its time per simulated day and per evaluated V and the number of simulations
actually run; then, on the first ``--days`` days, the same daily sweeps by brute force (one
simulation per V) to show the speed-up of the certificates (results are identical, a test
checks it).  ``--whole`` also times the whole reproduction (constant-V sweep, 1000 random
runs, Q-learning, our policy on all setups) on a process pool of ``--workers``.
"""

from __future__ import annotations

import argparse
import tempfile
import time

from rlsched.sim.hybrid_cloud.evaluate import state_for, sweep_caps
from rlsched.sim.hybrid_cloud.runs import fh_qlearning
from rlsched.sim.hybrid_cloud.setups import FH_SETUPS, load_model


def qlearning_run(name: str) -> None:
    t0 = time.perf_counter()
    model, edges = load_model(name)
    load_s = time.perf_counter() - t0
    run = fh_qlearning(model, edges)
    days = len(edges) - 1
    evaluated = days * (model.cores + 1)
    print(
        f"{name:<6} M={model.cores:<5} jobs={model.n:<6} days={days:<4} load {load_s:5.2f} s  "
        f"Q-learning {run.wall_s:6.1f} s  {1000 * run.wall_s / days:6.1f} ms/day  "
        f"{1e6 * run.wall_s / evaluated:6.1f} µs/evaluated V  simulations {run.simulations} of {evaluated} "
        f"({run.simulations / evaluated:.1%})"
    )


def brute_force_ratio(name: str, days: int) -> None:
    model, edges = load_model(name)
    cap = 0
    timings = {}
    for brute in (False, True):
        state = model.initial_state()
        sims = 0
        t0 = time.perf_counter()
        for d in range(min(days, len(edges) - 2)):
            sweep = sweep_caps(model, state, float(edges[d + 1]), model.cores, keep=frozenset([cap]), brute_force=brute)
            sims += sweep.simulations
            state = state_for(sweep, cap)
            cap = int(sweep.cost.argmin()) if d == 0 else cap
        timings[brute] = (time.perf_counter() - t0, sims)
    (fast, fs), (slow, ss) = timings[False], timings[True]
    print(
        f"{name:<6} first {days} days: certificates {fast:6.2f} s ({fs} sims), brute force {slow:6.2f} s "
        f"({ss} sims): {slow / fast:5.1f}x"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--setups", default=",".join(FH_SETUPS))
    parser.add_argument("--days", type=int, default=10, help="days for the brute-force comparison")
    parser.add_argument("--whole", action="store_true", help="also time the whole reproduction")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    names = tuple(s for s in args.setups.split(",") if s)
    print("== FH Q-learning, one full run per trace")
    for name in names:
        qlearning_run(name)
    print(f"== daily all-V sweeps: certificates vs brute force ({args.days} days)")
    for name in names:
        brute_force_ratio(name, args.days)
    if args.whole:
        from rlsched.sim.experiments.fh import run_fh

        with tempfile.TemporaryDirectory() as out:
            t0 = time.perf_counter()
            run_fh(out, {"references", "qlearning", "ours"}, setups=names, workers=args.workers)
            print(
                f"== whole reproduction ({', '.join(names)}; references, Q-learning, ours) on "
                f"{args.workers} workers: {time.perf_counter() - t0:.0f} s"
            )


if __name__ == "__main__":
    main()
