"""Runtime predictors measured on their own, per trace: error, under-predictions, order agreement.

Mean absolute error, share of under-predicted jobs, order agreement, mean log error and the jobs found that end
within a minute (their definitions:
:mod:`rlsched.sim.prediction_errors`), every job of each trace as recorded.

Run:  RLSCHED_TRACE_DIR=/path/to/traces nice -n 10 .venv/bin/python benchmarks/bench_prediction.py \
          [--trace CTC-SP2-1996-3.1-cln ...]

How each trace is replayed and scored: :mod:`rlsched.sim.prediction_errors`, whose
:func:`rlsched.sim.prediction_errors.prediction_errors` is the function to call.
"""

from __future__ import annotations

import argparse
import math

from rlsched.sim.prediction_errors import MODELS, PredictionScore, prediction_errors, recorded_events
from rlsched.sim.traces.sidecar import read_trace
from rlsched.sim.traces.swf import resolve_trace
from rlsched.workflow.learning import TRACES

__all__ = ["MODELS", "TRACES", "PredictionScore", "prediction_errors", "recorded_events"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", nargs="*", default=list(TRACES))
    args = parser.parse_args()
    print(
        "| trace | jobs | model | MAE (s) | under-predicted | order agreement | log error "
        "| under 1 min: recall / precision | time (s) |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for name in args.trace:
        workload = read_trace(resolve_trace(name))
        for s in prediction_errors(workload):
            print(
                f"| {name} | {s.jobs:,} | {s.model} | {s.mean_abs_error_s:,.0f} | {100 * s.under_share:.1f} % "
                f"| {100 * s.order_agreement:.1f} % | {s.mean_log_error:.2f} "
                f"| {_share(s.short_recall)} / {_share(s.short_precision)} | {s.seconds:.1f} |",
                flush=True,
            )


def _share(value: float) -> str:
    return f"{100 * value:.0f} %" if math.isfinite(value) else "-"


if __name__ == "__main__":
    main()
