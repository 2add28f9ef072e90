"""Runtime predictors measured on their own, per trace: error, under-predictions, order agreement.

Mean absolute error, share of under-predicted jobs, order agreement, mean log error and the jobs found that end
within a minute (their definitions:
:mod:`rlsched.sim.prediction_errors`), every job of each trace as recorded.

Run:  RLSCHED_TRACE_DIR=/path/to/traces nice -n 10 .venv/bin/python benchmarks/bench_prediction.py \
          [--trace CTC-SP2-1996-3.1-cln ...] [--job-names]

``--job-names`` adds a row for the learned predictor that reads each job's program (the SWF executable id, field
14, as the daemon reads job names live: :attr:`rlsched.sim.workload.Workload.programs_known`), beside the rows
without it.

How each trace is replayed and scored: :mod:`rlsched.sim.prediction_errors`, whose
:func:`rlsched.sim.prediction_errors.prediction_errors` is the function to call.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import replace

from rlsched.sim.prediction_errors import MODELS, PredictionScore, prediction_errors, recorded_events
from rlsched.sim.traces.sidecar import read_trace
from rlsched.sim.traces.swf import resolve_trace
from rlsched.workflow.learning import TRACES

__all__ = ["MODELS", "TRACES", "PredictionScore", "prediction_errors", "recorded_events"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", nargs="*", default=list(TRACES))
    parser.add_argument("--job-names", action="store_true", help="add the learned predictor reading the programs")
    args = parser.parse_args()
    print(
        "| trace | jobs | model | MAE (s) | under-predicted | order agreement | log error "
        "| under 1 min: recall / precision | time (s) |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for name in args.trace:
        workload = read_trace(resolve_trace(name))
        scores = [(s.model, s) for s in prediction_errors(workload)]
        if args.job_names:
            named = replace(workload, programs_known=True)
            scores += [("learned, job names", s) for s in prediction_errors(named, ("learned",))]
        for model, s in scores:
            print(
                f"| {name} | {s.jobs:,} | {model} | {s.mean_abs_error_s:,.0f} | {100 * s.under_share:.1f} % "
                f"| {100 * s.order_agreement:.1f} % | {s.mean_log_error:.2f} "
                f"| {_share(s.short_recall)} / {_share(s.short_precision)} | {s.seconds:.1f} |",
                flush=True,
            )


def _share(value: float) -> str:
    return f"{100 * value:.0f} %" if math.isfinite(value) else "-"


if __name__ == "__main__":
    main()
