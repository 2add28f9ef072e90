"""Is a committed table's sarsa-esn model a learned ranking, or still its pretraining rule — and what does it see?

For each trace of a committed ``rlsched learning`` table (its ``results.json``: the same jobs, cores, split, mode,
seeds and passes), sarsa-esn is trained again through train's library as the table trained it.  Prints, per seed,
its validation score by pass beside the table's (``same`` when they reproduce to 1e-9) and, per pass, the agent's
decisions so far and whether it still followed its pretraining rule at the pass's end (in boost mode a decision
is a job started from the ranking, so a train window where few jobs queue may never reach ``pretrain_decisions``:
that pass's model ranks as the pretraining rule, EDF by default).

``--write`` records those flags in the table as ``rlsched learning`` now records them (each row's
``learned.pass_pretraining``, in ``results.json`` and in its ``rows/`` file when there is one), only for rows
whose every pass reproduced, and writes the report again from it.

``--features`` also replays the table's selected model on the validation and the test window (greedy, as the table
scored it) and summarises, per window, what its rankings saw: each state input's 10th, 50th and 90th percentile
and maximum, the share of rankings whose first job is interactive, and where that job's request falls among the
pending ones' (0: the shortest request, 1: the longest).  What a selection on validation does not carry to test
shows there as inputs outside the range training saw, or a first pick of another kind.

Run: ``RLSCHED_TRACE_DIR=… python -m benchmarks.diag_sarsa_passes [--table docs/results/learning]
[--traces …] [--workers 2] [--write] [--features]``.
"""

from __future__ import annotations

import argparse
import json
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

from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

from benchmarks.learning_table import (  # noqa: E402
    add_table_options,
    read_table,
    table_train_plan,
    table_windows,
    trace_spec,
)
from rlsched.core.atomic import write_json_atomic  # noqa: E402
from rlsched.core.view import JobClass  # noqa: E402
from rlsched.workflow.learning import row_path  # noqa: E402
from rlsched.workflow.learning_report import read_results, write_outputs  # noqa: E402
from rlsched.workflow.train import _load, run_tasks  # noqa: E402
from rlsched.workflow.train_task import TrainResult, TrainTask  # noqa: E402

#: Scores that agree to this (relative) reproduce: a replay is deterministic for a seed.
SAME = 1e-9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_table_options(parser)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--write", action="store_true", help="record the flags in the table (reproduced rows only)")
    parser.add_argument("--features", action="store_true", help="summarise the selected model's inputs")
    args = parser.parse_args()
    table = read_table(args.table)
    flags: dict[str, dict[str, list[bool]]] = {}
    for row in table.chosen(args.traces):
        t0 = time.perf_counter()
        windows = table_windows(row, table.settings)
        with tempfile.TemporaryDirectory(prefix="rlsched-passes-") as tmp:
            tasks = table_train_plan(table, row, windows, table.learned_spec(), Path(tmp) / "model.npz")
            results = run_tasks(tasks, workers=args.workers)
            reproduced = _print_passes(row, results)
            if reproduced:
                flags[row["trace"]] = {str(r.seed): r.pass_pretraining for r in results}
            if args.features:
                _print_features(row, tasks, results, windows, Path(tmp))
        print(f"  {time.perf_counter() - t0:.0f} s", flush=True)
    if args.write:
        _write(args.table, flags)


def _print_passes(row: dict[str, Any], results: list[TrainResult]) -> bool:
    """Each seed's passes beside the table's; whether every score reproduced."""
    committed = row["learned"]["epoch_validation"]
    selected = row["learned"]["selected"]
    print(f"{row['trace']} (selected: seed {selected['seed']}, pass {selected['epoch'] + 1})", flush=True)
    every = True
    for r in results:
        before = [float(v) for v in committed[str(r.seed)]]
        same = len(before) == len(r.validation_scores) and all(
            abs(a - b) <= SAME * max(abs(a), abs(b), 1.0) for a, b in zip(before, r.validation_scores, strict=True)
        )
        every &= same
        passes = ", ".join(
            f"pass {p + 1}: {score:.4g} ({decisions} decisions{', still pretraining' if still else ''})"
            for p, (score, decisions, still) in enumerate(
                zip(r.validation_scores, r.pass_decisions, r.pass_pretraining, strict=True)
            )
        )
        table = " ".join(f"{v:.4g}" for v in before)
        print(f"  seed {r.seed}: {passes}; table [{table}] {'same' if same else 'DIFFERENT'}", flush=True)
    return every


def _print_features(
    row: dict[str, Any], tasks: list[TrainTask], results: list[TrainResult], windows: dict[str, Any], tmp: Path
) -> None:
    """The selected model replayed on validation and test, its rankings' inputs summarised per window."""
    seed = int(row["learned"]["selected"]["seed"])
    k = [r.seed for r in results].index(seed)
    path = tmp / f"seed{seed}.npz"
    path.write_bytes(results[k].model)
    for name in ("validation", "test"):
        task = replace(tasks[k], validation=windows[name])
        agent = _load(path, task, learn=False, workload=windows[name])
        seen = _watch_rankings(agent)
        score = task.validation_score(task.spec, agent)
        states = np.array(seen["state"])
        print(f"  {name}: {row['learned']['policy']} {score:.4g}, {len(states)} rankings", flush=True)
        if not len(states):
            continue
        for i, label in enumerate(agent.encoder.state_names):
            if label.startswith("queue_share_vo"):  # a column per VO: too many to print, and not a scale
                continue
            q = np.percentile(states[:, i], [10, 50, 90])
            print(f"    {label:<28} p10 {q[0]:8.3f}  p50 {q[1]:8.3f}  p90 {q[2]:8.3f}  max {states[:, i].max():8.3f}")
        print(
            f"    first job interactive in {100 * np.mean(seen['interactive']):.1f} % of rankings; its request's "
            f"place among the pending: mean {np.mean(seen['place']):.2f} (0 shortest, 1 longest)",
            flush=True,
        )


def _watch_rankings(agent: Any) -> dict[str, list[Any]]:
    """Record, at each boost ranking of ``agent``, the state vector, whether the first job is interactive and its
    request's place among the pending jobs' requests."""
    seen: dict[str, list[Any]] = {"state": [], "interactive": [], "place": []}
    rank = agent._rank

    def watched(view: Any, agg: Any, actions: Any, run_s: Any, order: Any, rule_rank: Any = None) -> Any:
        ranked = rank(view, agg, actions, run_s, order, rule_rank)
        pend, first = view.pending, int(ranked[0])
        seen["state"].append(agent.encoder.state_vector(agg))
        seen["interactive"].append(int(pend.job_class[first]) == int(JobClass.INTERACTIVE))
        below = np.count_nonzero(pend.req_time_s < pend.req_time_s[first])
        seen["place"].append(below / max(len(pend) - 1, 1))
        return ranked

    agent._rank = watched
    return seen


def _write(folder: Path, flags: dict[str, dict[str, list[bool]]]) -> None:
    """Each reproduced row's ``learned.pass_pretraining``, in results.json (the report and figure written again
    from it, as ``rlsched learning --report-only`` does) and in its rows/ file."""
    data = read_results(folder)
    for row in data["traces"]:
        if row["trace"] in flags:
            row["learned"]["pass_pretraining"] = flags[row["trace"]]
    write_outputs(data, folder)
    specs = {row["trace"]: trace_spec(row) for row in data["traces"]}
    for name, by_seed in flags.items():
        path = row_path(folder / "rows", specs[name])
        if path.is_file():
            saved = json.loads(path.read_text())
            saved["row"]["learned"]["pass_pretraining"] = by_seed
            write_json_atomic(path, saved, mode=0o644)
    print(f"{folder}: pass_pretraining recorded for {', '.join(flags) or 'no row'}")


if __name__ == "__main__":
    main()
