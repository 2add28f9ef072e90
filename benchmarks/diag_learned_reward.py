"""Does training sarsa-esn for the objective (``reward=bsld``) beat P-grid's λ-reward (``reward=W``)?

For each trace of a committed ``rlsched learning`` table (its ``results.json``: the same jobs, cores, split, mode,
seeds and epochs), sarsa-esn is trained through train's library once per reward — ``W`` (P-grid's λ·W + (1 − λ)·F,
what the table's sarsa-esn row used) and the table's objective (``bsld``: the bounded slowdown's growth, credited
as incurred, :class:`rlsched.core.agents.SchedulingAgent`) — its pass and seed selected on validation as train
does, and every seed's selected model replayed on the test window.  Prints each reward's validation and test
score (mean ± standard deviation over the seeds) and the test mean over the table's best rule on test.
docs/workflow.md quotes it ("What the learner is rewarded for"; with ``--pretrain-rule best``, "Pretraining from
a rule").

Run: ``RLSCHED_TRACE_DIR=… python -m benchmarks.diag_learned_reward [--table docs/results/learning]
[--traces KTH-SP2-1996-2.1-cln,…] [--workers 2] [--variant reward=bsld,runtime_model=learned …]
[--pretrain-rule best|RULE]`` (default: every trace of the table; the variants ``reward=W`` and ``reward=`` the
table's objective; pretraining on EDF, as the table's sarsa-esn).  A variant's parameters go over the table's own
sarsa-esn spec (its ``--learned-runtime`` included: :meth:`benchmarks.learning_table.CommittedTable.learned_spec`).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

from benchmarks.learning_table import (  # noqa: E402
    CommittedTable,
    add_table_options,
    read_table,
    scores_on,
    table_train_plan,
    table_windows,
)
from rlsched.sim.workload import Workload  # noqa: E402
from rlsched.workflow.train import run_tasks  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_table_options(parser)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--variant", action="append", default=[], help="sarsa-esn parameters, k=v,… (repeat)")
    parser.add_argument(
        "--pretrain-rule",
        default=None,
        help="as train's --pretrain-rule: a rule, or 'best' (the best rule on each train window) for every variant",
    )
    args = parser.parse_args()
    table = read_table(args.table)
    settings, objective = table.settings, table.objective
    variants = args.variant or [f"reward={r}" for r in dict.fromkeys(("W", objective.name))]
    header = f"{'trace':<28}{'sarsa-esn with':>36}{'validation':>20}{'test':>20}{'test / best rule':>18}{'s':>7}"
    print(header, flush=True)
    for row in table.chosen(args.traces):
        windows = table_windows(row, settings)
        for variant in variants:
            t0 = time.perf_counter()
            validation, test = train_and_test(table, windows, row, variant, args.workers, args.pretrain_rule)
            best = float(row["best_rule_test"]["test"])
            ratio = np.mean(test) / best if not objective.higher_is_better else best / np.mean(test)
            print(
                f"{row['trace']:<28}{variant:>36}{stats(validation):>20}{stats(test):>20}{ratio:>18.2f}"
                f"{time.perf_counter() - t0:>7.0f}",
                flush=True,
            )


def stats(values: list[float]) -> str:
    return f"{np.mean(values):.4g} ± {np.std(values):.2g}"


def train_and_test(
    table: CommittedTable,
    windows: dict[str, Workload],
    row: dict[str, Any],
    variant: str,
    workers: int,
    pretrain_rule: str | None = None,
) -> tuple[list[float], list[float]]:
    """Each seed's selected validation score and its model's test score, sarsa-esn with ``variant``'s parameters."""
    with tempfile.TemporaryDirectory(prefix="rlsched-reward-") as tmp:
        tasks = table_train_plan(
            table, row, windows, table.learned_spec(variant), Path(tmp) / "model.npz", pretrain_rule
        )
        if tasks[0].pretrain_choice is not None:
            choice = tasks[0].pretrain_choice
            print(f"  pretraining on {choice['rule']} (train window {choice['score']:.4g}, {choice['seconds']:.0f} s)")
        results = run_tasks(tasks, workers=workers)
        test = scores_on(windows["test"], tasks, results, Path(tmp))
    return [float(r.best_score) if r.best_score is not None else float("nan") for r in results], test


if __name__ == "__main__":
    main()
