"""Would the scored search deploy better by averaging its seeds' scoring functions than by keeping one seed?

The committed ``rlsched learning`` tables keep, of the scored search's seeds, the one best on the validation
window, and its verdict is judged against the best rule there.  The seeds' test scores scatter (KTH-SP2 in the
whole table: 15.2, 19.5, 16.1; the selected one is 19.5), so a seed picked by one window is partly picked by
chance.  A scoring function is a weighted sum of the same features for every seed, and the search keeps the
weights at unit length, so the seeds' functions can be averaged into one: the mean of their weight vectors,
brought back to unit length.  It reads no window the seeds did not read.

For each trace of a table (its ``results.json``: the same jobs, cores, split, mode and objective), this replays
every seed's function and the average on the validation window and on the test window as recorded and with its
jittered submits (the tables' replays: ``rlsched.workflow.learning.JITTER_SEEDS``).  The seeds' replays must give
the table's own scores (a check that the replays are the table's); then, per trace, the selected seed and the
average over the test window's replays against the best rule over the same replays (the table's like-for-like
goal 1), and what the average's verdict on validation would deploy: the average where it beats the rule
validation picks beyond the seeds' spread, that rule where it loses, as ``train`` judges a model.

Run: ``RLSCHED_TRACE_DIR=… python -m benchmarks.diag_scored_ensemble [--table docs/results/learning-whole]
[--traces KTH-SP2-1996-2.1-cln,…] [--workers 2] [--out FILE.json]``
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

from benchmarks.learning_table import CommittedTable, add_table_options, read_table, replay_cores, table_windows  # noqa: E402
from rlsched.core.policies.spec import format_policy, split_policy  # noqa: E402
from rlsched.workflow.learning import JITTER_S, JITTER_SEEDS, apart, replay_stats, replays_on_test  # noqa: E402
from rlsched.workflow.split import simulate_in  # noqa: E402
from rlsched.workflow.verdict import schedule_score  # noqa: E402

#: How close a seed's replay here must come to the table's own score for it (relative).
SAME_SCORE = 1e-9


def averaged_spec(specs: list[str]) -> str:
    """The seeds' scoring functions averaged: the mean of their unit weight vectors, brought back to unit length
    (a positive scale ranks alike).  The seeds must read the same features."""
    parsed = [split_policy(s) for s in specs]
    names = {name for name, _ in parsed}
    features = {str(params["features"]) for _, params in parsed}
    if names != {"scored"} or len(features) != 1:
        raise ValueError(f"the seeds are not scoring functions of the same features: {specs}")
    weights = np.array([[float(w) for w in str(params["weights"]).split("/")] for _, params in parsed])
    unit = weights / np.linalg.norm(weights, axis=1, keepdims=True)
    mean = unit.mean(axis=0)
    norm = float(np.linalg.norm(mean))
    if norm == 0.0:
        raise ValueError(f"the seeds' weights cancel out: {specs}")
    params = dict(parsed[0][1])
    params["weights"] = "/".join(repr(float(w)) for w in mean / norm)
    return format_policy("scored", params)


def _score(job: tuple[Any, ...]) -> float:
    table, row, window, jitter_seed, spec = job
    if jitter_seed is not None:
        window = window.jittered(jitter_seed, JITTER_S)
    ran = simulate_in(table.deployment, window, spec, replay_cores(row))
    return float(schedule_score(table.objective, ran.schedule))


def replayed(table: CommittedTable, row: dict[str, Any], specs: dict[str, str], workers: int) -> dict[str, Any]:
    """Each spec's score on validation and on the test window's replays (as recorded, then jittered)."""
    places = [("validation", None), ("test", None), *(("test", seed) for seed in JITTER_SEEDS)]
    windows = table_windows(row, table.settings)
    jobs = [(table, row, windows[w], s, spec) for spec in specs.values() for w, s in places]
    if workers > 1:
        with ProcessPoolExecutor(workers) as pool:
            scores = list(pool.map(_score, jobs))
    else:
        scores = [_score(job) for job in jobs]
    out = {}
    for i, name in enumerate(specs):
        mine = scores[i * len(places) : (i + 1) * len(places)]
        out[name] = {"spec": specs[name], "validation": mine[0], "test": replay_stats(mine[1:])}
    return out


def trace_result(table: CommittedTable, row: dict[str, Any], workers: int) -> dict[str, Any]:
    """One trace: the seeds' and the average's replays, checked against the table, and what each deploys."""
    searches = row["scored"]["searches"]
    specs = {f"seed {s['seed']}": str(s["spec"]) for s in searches}
    specs["average"] = averaged_spec([str(s["spec"]) for s in searches])
    runs = replayed(table, row, specs, workers)
    for s in searches:  # the replays here are the table's, or nothing below means anything
        mine = runs[f"seed {s['seed']}"]
        for window, theirs in (("validation", s["validation"]), ("test", s["test"])):
            got = mine[window] if window == "validation" else mine["test"]["seeds"][0]
            if abs(got - float(theirs)) > SAME_SCORE * max(1.0, abs(float(theirs))):
                raise SystemExit(f"{row['trace']}: seed {s['seed']} replays {got} on {window}, the table {theirs}")
    like = replays_on_test(row, table.objective.higher_is_better)
    if like is None:
        raise SystemExit(f"{row['trace']}: the table kept no jittered replays of its selected models")
    verdict = row["scored"]["verdict"]
    average = runs["average"]
    gain = table.sign * (float(verdict["rule_score"]) - average["validation"])
    outcome = "ties" if abs(gain) <= float(verdict["spread"]) else "beats" if gain > 0 else "loses"
    rule = row["validation_pick"]["rule"]
    deployed = average["test"] if outcome == "beats" else like["validation_pick"]
    return {
        "trace": row["trace"],
        "runs": runs,
        "best": like["best"],
        "selected": like["deployed_scored"] if row["deployed_scored"]["kind"] == "model" else _selected(runs, row),
        "deployed_scored": like["deployed_scored"],
        "average_verdict": outcome,
        "average_deployed": {"what": "average" if outcome == "beats" else rule, **deployed},
    }


def _selected(runs: dict[str, Any], row: dict[str, Any]) -> dict[str, Any]:
    """The seed the verdict selected, over the test window's replays (the table keeps them for a deployed one)."""
    name = f"seed {row['scored']['selected']['seed']}"
    return {"what": name, **runs[name]["test"]}


def summary(table: CommittedTable, results: list[dict[str, Any]]) -> list[str]:
    """Per trace and as geometric means: each choice over the best rule's mean, and misses beyond the spread."""
    lines = [
        f"{'trace':<28}{'best rule':>14}{'selected seed':>16}{'average':>12}{'deployed now':>16}{'average deploys':>18}"
    ]
    columns: dict[str, list[float]] = {"selected": [], "average": [], "deployed_scored": [], "average_deployed": []}
    misses = dict.fromkeys(columns, 0)
    for r in results:
        best = r["best"]
        picks = {
            "selected": r["selected"],
            "average": {"what": "average", **r["runs"]["average"]["test"]},
            "deployed_scored": r["deployed_scored"],
            "average_deployed": r["average_deployed"],
        }
        cells = []
        for key, pick in picks.items():
            ratio = table.over_best(pick["mean"], best["mean"])
            columns[key].append(ratio)
            worse = table.sign * (pick["mean"] - best["mean"]) > 0 and apart(pick, best)
            misses[key] += worse
            cells.append(f"{ratio:.3f}{'*' if worse else ' '}")
        lines.append(
            f"{r['trace']:<28}{best['mean']:>14.4g}{cells[0]:>16}{cells[1]:>12}{cells[2]:>16}{cells[3]:>18}"
            f"  ({r['average_verdict']})"
        )
    geo = {k: float(np.exp(np.mean(np.log(v)))) for k, v in columns.items()}
    lines.append(
        f"{'geometric mean':<28}{'':>14}{geo['selected']:>16.3f}{geo['average']:>12.3f}"
        f"{geo['deployed_scored']:>16.3f}{geo['average_deployed']:>18.3f}"
    )
    lines.append(
        f"{'misses (* beyond the spread)':<28}{'':>14}{misses['selected']:>16}{misses['average']:>12}"
        f"{misses['deployed_scored']:>16}{misses['average_deployed']:>18}"
    )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_table_options(parser)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--out", type=Path, help="write every replay to this JSON file")
    args = parser.parse_args()
    table = read_table(args.table)
    results = []
    for row in table.chosen(args.traces):
        results.append(trace_result(table, row, args.workers))
        r = results[-1]
        print(
            f"{row['trace']}: average {r['runs']['average']['validation']:.4g} on validation "
            f"({r['average_verdict']} the rule's {row['scored']['verdict']['rule_score']:.4g}), "
            f"test {r['runs']['average']['test']['mean']:.4g} ± {r['runs']['average']['test']['spread']:.2g}",
            flush=True,
        )
        if args.out is not None:
            args.out.write_text(json.dumps(results, indent=1))
    print("\n".join(summary(table, results)))


if __name__ == "__main__":
    main()
