"""Does the scored search do better when every replay of it runs in the mode its policy is deployed in?

The committed ``rlsched learning`` tables search the ``scored`` policy in gate mode (the function's order as the
engine's priority, EASY backfilling) and then judge what it found in boost mode (the top ``max_boosted`` of its
ranking re-ranked every poll ahead of Slurm's base order), the mode it is deployed in.  For each trace of a
table (its ``results.json``: the same jobs, cores, split, seeds, objective and search settings) this trains the
search again through train's library with :attr:`rlsched.sim.search.SearchConfig.boost` set to the table's boost
settings — its family's start, its fitness and its selection all replayed in boost mode — and replays every
seed's policy on the test window.  Prints each seed's validation and test score, then the mean ± standard
deviation over the seeds and the seed train would select (by validation), beside the table's own gate-mode
search and its best rule on test.  docs/scoring.md quotes it ("The mode of the search").

``--search-mode gate`` keeps the table's gate-mode search and ``--warmup-jobs N`` gives every fitness sequence a
warm-up of N jobs (:attr:`rlsched.sim.search.SearchConfig.warmup_jobs`: the member schedules them, they are not
scored, so the sequence starts from the queue its own order built): the same comparison for that one change
(docs/scoring.md, "A warm-up before each sequence").  ``--select-on train`` makes each search select its member on
the whole training window instead of the validation window (:attr:`rlsched.sim.search.SearchConfig.select_on`),
so that train's choice of the seed, made on validation, reads a window the search never saw (docs/scoring.md,
"Selecting the member on the training window").

Run: ``RLSCHED_TRACE_DIR=… python -m benchmarks.diag_scored_mode [--table docs/results/learning-whole]
[--traces KTH-SP2-1996-2.1-cln,…] [--workers 2] [--search-mode boost|gate] [--warmup-jobs 0]
[--select-on validation|train]`` (default: every
trace of the table, boost mode, no warm-up; a boost replay costs about 5× a gate one, so a seed takes 10–15
minutes on KTH-SP2).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from typing import Any, Literal  # noqa: E402

import numpy as np  # noqa: E402

from benchmarks.diag_learned_reward import stats  # noqa: E402
from benchmarks.learning_table import (  # noqa: E402
    CommittedTable,
    add_table_options,
    read_table,
    replay_cores,
    scores_on,
    table_windows,
)
from rlsched.sim.search import SearchConfig  # noqa: E402
from rlsched.workflow.train import run_tasks, select, train_plan  # noqa: E402
from rlsched.workflow.train_scored import scored_search_config  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_table_options(parser)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--search-mode", choices=("boost", "gate"), default="boost")
    parser.add_argument("--warmup-jobs", type=int, default=0)
    parser.add_argument("--select-on", choices=("validation", "train"), default="validation")
    args = parser.parse_args()
    table = read_table(args.table)
    if args.search_mode == "boost" and table.deployment.mode != "boost":
        sys.exit(f"{args.table}: the table ran in {table.deployment.mode} mode; its search already did")
    if args.search_mode == "gate" and args.warmup_jobs == 0 and args.select_on == "validation":
        sys.exit(
            "--search-mode gate without --warmup-jobs or --select-on train is the table's own search: "
            "nothing to compare"
        )
    search = table_search(
        table, boost=args.search_mode == "boost", warmup_jobs=args.warmup_jobs, select_on=args.select_on
    )
    label = f"{args.search_mode}-mode search" + (f", warm-up {args.warmup_jobs}" if args.warmup_jobs else "")
    label += ", selected on train" if args.select_on == "train" else ""
    for row in table.chosen(args.traces):
        t0 = time.perf_counter()
        validation, test, selected = search_and_test(table, row, search, args.workers)
        for seed, v, t in zip(table.settings["seeds"], validation, test, strict=True):
            print(f"{row['trace']:<28} seed {seed}: validation {v:.4g}, test {t:.4g}", flush=True)
        best = float(row["best_rule_test"]["test"])
        gate = [float(s["test"]) for s in row["scored"]["searches"]]
        chosen = table.settings["seeds"].index(selected)
        ratio = table.over_best(float(np.mean(test)), best)
        print(
            f"{row['trace']:<28} {label}: test {stats(test)} ({ratio:.3f} of the best rule), selected seed "
            f"{selected} {test[chosen]:.4g}; the table's "
            f"gate-mode search: {stats(gate)} ({table.over_best(float(np.mean(gate)), best):.3f}), its deployed "
            f"choice {row['deployed_scored']['what']} {float(row['deployed_scored']['test']):.4g}; best rule "
            f"{row['best_rule_test']['rule']} {best:.4g}; {time.perf_counter() - t0:.0f} s",
            flush=True,
        )


def table_search(
    table: CommittedTable,
    *,
    boost: bool = True,
    warmup_jobs: int = 0,
    select_on: Literal["validation", "train"] = "validation",
) -> SearchConfig:
    """The table's search settings, every replay in its boost mode (``boost``) or in gate mode as the table's,
    with ``warmup_jobs`` before each fitness sequence, selecting on ``select_on``."""
    s = table.settings["search"]
    config = scored_search_config(
        s["runtime_model"],
        population=int(s["population"]),
        generations=int(s["generations"]),
        sequences=int(s["sequences"]),
        sequence_jobs=int(s["sequence_jobs"]),
        validation_replays=int(s["validation_replays"]),
        warmup_jobs=warmup_jobs,
        select_on=select_on,
    )
    return replace(config, boost=table.deployment.settings()) if boost else config


def search_and_test(
    table: CommittedTable, row: dict[str, Any], search: SearchConfig, workers: int
) -> tuple[list[float], list[float], int]:
    """Each seed's validation score (train's, in the table's mode), its policy's test score, and the seed train
    selects."""
    windows = table_windows(row, table.settings)
    with tempfile.TemporaryDirectory(prefix="rlsched-scored-mode-") as tmp:
        tasks = train_plan(
            windows["train"],
            "scored",
            Path(tmp) / "model.npz",
            seeds=tuple(table.settings["seeds"]),
            cores=replay_cores(row),
            validation=windows["validation"],
            deployment=table.deployment,
            objective=table.objective,
            search=search,
        )
        results = run_tasks(tasks, workers=workers)
        selected = select(results, table.objective).seed
        test = scores_on(windows["test"], tasks, results, Path(tmp))
    return [float(r.best_score) if r.best_score is not None else float("nan") for r in results], test, selected


if __name__ == "__main__":
    main()
