"""What would a better runtime predictor buy the rules on it?  The oracle, blurred, against the best rule.

The oracle (each job's actual runtime) is blurred by a multiplicative log-normal error of σ = 0 … 2 (the
prediction is runtime × exp(σ·z), z standard normal per job and fixed by ``--seed``, never above the request nor
below 1 s), and the rules that read a runtime (SJF, SAF, F1–F4) are replayed on it over each trace's test window
of a committed ``rlsched learning`` table, in the table's mode and objective.  Per trace and σ it prints the
blurred oracle's order agreement on the window's jobs (:func:`rlsched.sim.prediction_errors.order_agreement`)
and the best of those rules over the test window's best rule (the table's hindsight yardstick, as recorded: < 1
is better); at the end, per σ, the geometric mean over the traces and how many are ≥ 10 % better.  The table's
own predictors' order agreement (on the table's jobs) is printed beside, for where they stand.  With
``--blind-below S`` the oracle does not know which jobs end within S seconds: it predicts their request.

A diagnostic: nothing here is selected on or deployed.  docs/rules.md ("What a better predictor would buy")
quotes it.

Run: ``RLSCHED_TRACE_DIR=… python -m benchmarks.diag_prediction_noise [--table docs/results/learning]
[--traces KTH-SP2-1996-2.1-cln,…] [--sigmas 0,0.5,1,2] [--seed 0]``.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from collections.abc import Collection  # noqa: E402
from typing import Any  # noqa: E402
from unittest import mock  # noqa: E402

import numpy as np  # noqa: E402

import rlsched.sim.rules as sim_rules  # noqa: E402
from benchmarks.learning_table import add_table_options, read_table, table_windows  # noqa: E402
from rlsched.core.prediction import MIN_PREDICTION_S  # noqa: E402
from rlsched.core.runtime import usable_requested  # noqa: E402
from rlsched.sim.prediction_errors import order_agreement  # noqa: E402
from rlsched.sim.workload import Workload  # noqa: E402
from rlsched.workflow.split import simulate_in  # noqa: E402
from rlsched.workflow.verdict import schedule_score  # noqa: E402

RULES = ("sjf", "saf", "f1", "f2", "f3", "f4")
SIGMAS = (0.0, 0.25, 0.5, 1.0, 1.5, 2.0)


class BlurredOracle:
    """A :class:`rlsched.core.prediction.RuntimePredictor` that knows each job's runtime up to a fixed error
    (the jobs of one window, by id; any other job, such as one of the window's past, gets its request)."""

    name = "learned"  # the name the rules ask for: the replay is patched to build this one instead

    def __init__(self, prediction: dict[int, float]) -> None:
        self.prediction = prediction

    @property
    def unseen_finished(self) -> int:
        return 0

    def predict(self, job_id: int, user: int, vo: int, cores: int, request_s: float, submit_s: float) -> float:
        return self.prediction.get(job_id, request_s)

    def finished(self, job_id: int, run_s: float) -> bool:
        return False

    def state(self, keep: Collection[int] | None = None) -> dict[str, Any]:
        return {}


def blurred(window: Workload, sigma: float, seed: int, blind_below_s: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """(the blurred predictions, the runtimes capped at the request) of ``window``'s rows; a job that ran less
    than ``blind_below_s`` is predicted its request (the oracle does not know it will end early)."""
    request = usable_requested(window.req_time.astype(np.float64), window.job_class)
    run = np.minimum(np.maximum(window.run.astype(np.float64), 0.0), request)
    z = np.random.default_rng(seed).standard_normal(len(window))
    prediction = np.where(run < blind_below_s, request, run * np.exp(sigma * z))
    return np.clip(prediction, MIN_PREDICTION_S, np.maximum(request, MIN_PREDICTION_S)), run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_table_options(parser)
    parser.add_argument("--sigmas", default=",".join(f"{s:g}" for s in SIGMAS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--blind-below",
        type=float,
        default=0.0,
        metavar="S",
        help="the oracle predicts the request for every job that ran less than S seconds (default 0: none)",
    )
    args = parser.parse_args()
    table = read_table(args.table)
    objective, deployment, sign = table.objective, table.deployment, table.sign
    sigmas = [float(s) for s in args.sigmas.split(",") if s]
    ratios: dict[float, list[float]] = {s: [] for s in sigmas}
    print("| trace | σ | order agreement | best rule on it / best rule | (user-last2; learned agreement) |")
    print("|---|---|---|---|---|")
    for row in table.chosen(args.traces):
        test = table_windows(row, table.settings)["test"]
        cores = row["cores"] if row["core_fraction"] < 1 else None
        best = float(row["best_rule_test"]["test"])
        own = row["prediction"]
        for sigma in sigmas:
            prediction, run = blurred(test, sigma, args.seed, args.blind_below)
            scores = []
            # Boost mode's agents see the trace's job ids, gate mode's replayed rules the window's rows.
            ids = test.job_id.tolist() if deployment.mode == "boost" else range(len(test))
            by_id = dict(zip(ids, prediction.tolist(), strict=True))
            with mock.patch.object(sim_rules, "make_predictor", lambda _name, p=by_id: BlurredOracle(p)):
                sim_rules._WARMED.clear()  # a warmed predictor of another σ must not be reused
                for rule in RULES:
                    ran = simulate_in(deployment, test, f"{rule}:runtime_model=learned", cores)
                    scores.append(schedule_score(objective, ran.schedule))
            sim_rules._WARMED.clear()
            mine = min(scores, key=lambda v: sign * v)
            ratio = mine / best if sign > 0 else best / mine
            ratios[sigma].append(ratio)
            agreement = order_agreement(prediction, run, test.submit.astype(np.float64))
            theirs = "; ".join(f"{own[m].get('order_agreement', math.nan):.3f}" for m in ("user-last2", "learned"))
            print(f"| {row['trace']} | {sigma:g} | {agreement:.3f} | {ratio:.2f} | {theirs} |", flush=True)
    print()
    for sigma, values in ratios.items():
        if values:
            geo = math.exp(float(np.mean(np.log(values))))
            wins = sum(v <= 0.9 for v in values)
            print(f"σ = {sigma:g}: geometric mean {geo:.2f} over {len(values)} traces; ≥ 10 % better on {wins}")


if __name__ == "__main__":
    main()
