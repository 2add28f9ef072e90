"""Ordering by the expected Smith ratio of bounded slowdown: does a runtime *distribution* beat a point prediction?

On one machine, the exchange argument for the sum of bounded slowdowns puts job j before k when
p_j / w_j < p_k / w_k, with w = 1 / max(p, τ) (τ = 10 s); with uncertain runtimes, E[p] / E[w] (Smith's rule on
expectations).  A job that is short one time in three ranks far ahead of a certain medium one, where any point
prediction would put it behind.  The distribution here: the user's last ``k`` finished runtimes, each capped at
this job's request, with or without the learned prediction as one more sample (the prediction alone while the
user has none); the score is log E[p] − log E[w] + ``area`` · log n (n: cores; area 1 ranks as smallest area
first).  The user histories start from the window's past, as the predictors do.

Gate mode, EASY backfilling, on a committed table's windows, beside every rule of :data:`PORTFOLIO` replayed the
same way: prints each variant's mean bounded slowdown over the best rule's on the window (hindsight) and over
``saf:runtime_model=learned``'s (the rule with the same information).  The notes of issue 23 say what it gave.

Run: ``RLSCHED_TRACE_DIR=… python -m benchmarks.diag_expected_smith [--table docs/results/learning-whole]
[--traces KTH-SP2-1996-2.1-cln,…] [--history 5]``
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from collections import defaultdict, deque
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

from benchmarks.diag_portfolio import PORTFOLIO, mean_bsld, rule_score  # noqa: E402
from benchmarks.learning_table import add_table_options, read_table, replay_cores, table_windows  # noqa: E402
from rlsched.core.measures import BOUNDED_SLOWDOWN_TAU_S  # noqa: E402
from rlsched.core.policies.rules import rule_priority  # noqa: E402
from rlsched.core.runtime import usable_requested  # noqa: E402
from rlsched.core.view import FloatArray, IntArray  # noqa: E402
from rlsched.sim.engine import DEFAULT_OVERRUN, Simulator  # noqa: E402
from rlsched.sim.rules import ReplayedRuntimes  # noqa: E402
from rlsched.sim.workload import Workload  # noqa: E402

SAME_INFORMATION = "saf:runtime_model=learned"


class ExpectedSmithPriority:
    """The engine's dynamic priority of the expected Smith ratio (module docstring); fixed at submit."""

    def __init__(self, workload: Workload, history: int, area: float, with_point: bool) -> None:
        self.request = np.maximum(usable_requested(workload.req_time.astype(np.float64), workload.job_class), 1.0)
        self.point = ReplayedRuntimes(workload, "learned", DEFAULT_OVERRUN, self.request)
        self.user: list[int] = workload.user.tolist()
        self.log_cores = np.log(np.maximum(workload.procs.astype(np.float64), 1.0))
        self.area, self.with_point = area, with_point
        self.runs: defaultdict[int, deque[float]] = defaultdict(lambda: deque(maxlen=history))
        self.score = np.zeros(len(workload))
        self.started_at: dict[int, float] = {}
        past = workload.past
        if past is not None and len(past) and len(workload):
            done = np.flatnonzero((past.end_s <= float(workload.submit.min())) & np.isfinite(past.run_s))
            for i in done[np.argsort(past.end_s[done], kind="stable")].tolist():
                self.runs[int(past.user[i])].appendleft(float(past.run_s[i]))

    def submit_priority(self, row: int, now: float) -> float:
        self.point.predict_at_submit(row)
        request = float(self.request[row])
        samples = [min(run, request) for run in self.runs[self.user[row]]]
        if self.with_point or not samples:
            samples.append(float(self.point.runtime[row]))
        runtime = np.maximum(np.asarray(samples), 1.0)
        expected_weight = float(np.mean(1.0 / np.maximum(runtime, BOUNDED_SLOWDOWN_TAU_S)))
        self.score[row] = math.log(float(runtime.mean())) - math.log(expected_weight) + self.area * self.log_cores[row]
        return float(rule_priority(self.score[[row]])[0])

    def priorities(self, rows: IntArray, now: float) -> FloatArray:
        return rule_priority(self.score[rows])

    def started(self, row: int, now: float) -> None:
        self.point.started(row, now)
        self.started_at[row] = now

    def ended(self, row: int, now: float) -> None:
        self.point.ended(row, now)
        self.runs[self.user[row]].appendleft(now - self.started_at.pop(row))

    def next_pass(self, now: float) -> float:
        return math.inf


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_table_options(parser)
    parser.add_argument("--history", default="5", help="the user's last k runtimes; comma-separated to try several")
    args = parser.parse_args()
    table = read_table(args.table)
    variants = [
        (history, area, with_point)
        for history in (int(k) for k in args.history.split(","))
        for area in (0.0, 0.5, 1.0)
        for with_point in (True, False)
    ]
    for row in table.chosen(args.traces):
        windows = table_windows(row, table.settings)
        cores = replay_cores(row)
        scores: dict[str, dict[Variant, float]] = {}
        best: dict[str, float] = {}
        for name in ("validation", "test"):
            t0 = time.perf_counter()
            window = windows[name]
            rules = {rule: rule_score(window, rule, cores) for rule in PORTFOLIO}
            best_rule = min(PORTFOLIO, key=lambda rule: rules[rule])
            best[name] = rules[best_rule]
            print(
                f"{row['trace']} {name}: best rule {best_rule} {rules[best_rule]:.4g}, {SAME_INFORMATION} "
                f"{rules[SAME_INFORMATION]:.4g}"
            )
            scores[name] = {}
            for variant in variants:
                smith = ExpectedSmithPriority(window, *variant)
                sim = Simulator(window, cores, dynamic=smith, backfill=True, overrun=DEFAULT_OVERRUN)
                score = scores[name][variant] = mean_bsld(sim.run())
                print(
                    f"  {_label(variant)}: {score:.4g} ({score / rules[best_rule]:.2f}x the best rule, "
                    f"{score / rules[SAME_INFORMATION]:.2f}x {SAME_INFORMATION})"
                )
            print(f"  [{time.perf_counter() - t0:.0f} s]", flush=True)
        picked = min(variants, key=lambda v: scores["validation"][v])
        print(
            f"{row['trace']}: validation picks {_label(picked)}; on test {scores['test'][picked]:.4g}, "
            f"{scores['test'][picked] / best['test']:.2f}x the best rule on test",
            flush=True,
        )


Variant = tuple[int, float, bool]


def _label(variant: Variant) -> str:
    history, area, with_point = variant
    return f"k={history} area={area:g} {'with' if with_point else 'without'} the prediction"


if __name__ == "__main__":
    main()
