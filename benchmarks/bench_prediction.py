"""Runtime predictors measured on their own: mean absolute error and share of under-predictions per trace.

Run:  RLSCHED_TRACE_DIR=/path/to/traces nice -n 10 .venv/bin/python benchmarks/bench_prediction.py \
          [--trace CTC-SP2-1996-3.1-cln ...]

How each trace is replayed and scored: :mod:`rlsched.sim.prediction_errors`, whose
:func:`rlsched.sim.prediction_errors.prediction_errors` is the function to call.
"""

from __future__ import annotations

import argparse

from rlsched.sim.prediction_errors import MODELS, PredictionScore, prediction_errors, recorded_events
from rlsched.sim.traces.swf import read_swf, resolve_trace

__all__ = ["MODELS", "TRACES", "PredictionScore", "prediction_errors", "recorded_events"]

TRACES = ("CTC-SP2-1996-3.1-cln", "SDSC-DS-2004-2.1-cln", "KTH-SP2-1996-2.1-cln", "LPC-EGEE-2004-1.2-cln")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", nargs="*", default=list(TRACES))
    args = parser.parse_args()
    print("| trace | jobs | model | MAE (s) | under-predicted | time (s) |")
    print("|---|---|---|---|---|---|")
    for name in args.trace:
        workload = read_swf(resolve_trace(name))
        for s in prediction_errors(workload):
            print(
                f"| {name} | {s.jobs:,} | {s.model} | {s.mean_abs_error_s:,.0f} | {100 * s.under_share:.1f} % "
                f"| {s.seconds:.1f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
