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
the table's own scores (a check that the replays are the table's), and the selected seed's verdict the table's.
Then, per trace, each choice's mean over the test window's replays against the best rule's over the same replays
(the tables' like-for-like goal 1; ``*``: worse beyond the larger spread): the selected seed and the average
themselves, and what each deploys by its verdict on validation (against the rule validation picks, with the
seeds' spread): the model unless it loses, then that rule (what ``train`` and the tables deploy), and, stricter,
the model only where it beats the rule.

Run: ``RLSCHED_TRACE_DIR=… python -m benchmarks.diag_scored_ensemble [--table docs/results/learning-whole]
[--traces KTH-SP2-1996-2.1-cln,…] [--workers 2] [--out FILE.json]``; ``--summary-only FILE.json`` prints a saved
run's summary again.
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
from rlsched.workflow.learning import JITTER_S, JITTER_SEEDS, replay_stats  # noqa: E402
from rlsched.workflow.learning_report import apart, replays_on_test  # noqa: E402
from rlsched.workflow.split import simulate_in  # noqa: E402
from rlsched.workflow.verdict import outcome_of, schedule_score  # noqa: E402

#: How close a seed's replay here must come to the table's own score for it (relative).  Not exact: the committed
#: rows were replayed by earlier commits, and on CTC-SP2 in docs/results/learning-whole seed 0's test score differs
#: in its seventh digit (15.663493 here, 15.663484 there), the other rows' to 1e-9.
SAME_SCORE = 1e-6


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
    deployment, objective, cores, window, jitter_seed, spec = job
    if jitter_seed is not None:
        window = window.jittered(jitter_seed, JITTER_S)
    return float(schedule_score(objective, simulate_in(deployment, window, spec, cores).schedule))


def replayed(table: CommittedTable, row: dict[str, Any], specs: dict[str, str], workers: int) -> dict[str, Any]:
    """Each spec's score on validation and on the test window's replays (as recorded, then jittered); a spec two
    names share (seeds that found the same function) is replayed once."""
    places = [("validation", None), ("test", None), *(("test", seed) for seed in JITTER_SEEDS)]
    windows = table_windows(row, table.settings)
    unique = list(dict.fromkeys(specs.values()))
    how = (table.deployment, table.objective, replay_cores(row))
    jobs = [(*how, windows[w], s, spec) for spec in unique for w, s in places]
    if workers > 1:
        with ProcessPoolExecutor(workers) as pool:
            scores = list(pool.map(_score, jobs))
    else:
        scores = [_score(job) for job in jobs]
    out = {}
    for name, spec in specs.items():
        i = unique.index(spec)
        mine = scores[i * len(places) : (i + 1) * len(places)]
        out[name] = {"spec": spec, "validation": mine[0], "test": replay_stats(mine[1:])}
    return out


#: The choices compared, in the summary's order: (key, column title).
CHOICES = (
    ("seed", "selected seed"),
    ("average", "average"),
    ("seed_if_beats", "seed if it beats"),
    ("average_if_beats", "avg if it beats"),
    ("seed_unless_loses", "seed unless loses"),
    ("average_unless_loses", "avg unless loses"),
)


def verdict_outcome(table: CommittedTable, verdict: dict[str, Any], validation: float) -> str:
    """``train``'s verdict on a model scoring ``validation`` against the table's verdict's rule and spread."""
    return outcome_of(table.objective, validation, float(verdict["rule_score"]), float(verdict["spread"]))


def trace_result(table: CommittedTable, row: dict[str, Any], workers: int) -> dict[str, Any]:
    """One trace: the seeds' and the average's replays, checked against the table, and what each choice deploys:
    the model where its verdict on validation allows, else the rule validation picks (the table's ``deploy``)."""
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
    rule = like["validation_pick"]
    seed = f"seed {row['scored']['selected']['seed']}"
    models = {"seed": (seed, runs[seed]), "average": ("average", runs["average"])}
    outcomes = {key: verdict_outcome(table, verdict, run["validation"]) for key, (_, run) in models.items()}
    if outcomes["seed"] != verdict["outcome"]:
        raise SystemExit(
            f"{row['trace']}: the selected seed {outcomes['seed']} here, {verdict['outcome']} in the table"
        )
    picks = {key: {"what": name, **run["test"]} for key, (name, run) in models.items()}
    for key in models:
        picks[f"{key}_if_beats"] = picks[key] if outcomes[key] == "beats" else rule
        picks[f"{key}_unless_loses"] = picks[key] if outcomes[key] != "loses" else rule
    return {"trace": row["trace"], "runs": runs, "best": like["best"], "outcomes": outcomes, "picks": picks}


def summary(table: CommittedTable, results: list[dict[str, Any]]) -> list[str]:
    """Per trace and as geometric means: each choice over the best rule's mean (``*``: worse beyond the larger
    spread, a miss), and the seed's and the average's verdicts on validation."""
    width = 19
    lines = [f"{'trace':<28}{'best rule':>11}" + "".join(f"{title:>{width}}" for _, title in CHOICES) + "  verdicts"]
    ratios: dict[str, list[float]] = {key: [] for key, _ in CHOICES}
    misses = dict.fromkeys(ratios, 0)
    for r in results:
        best = r["best"]
        cells = []
        for key, _ in CHOICES:
            pick = r["picks"][key]
            ratio = table.over_best(pick["mean"], best["mean"])
            ratios[key].append(ratio)
            worse = ratio > 1 and apart(pick, best)
            misses[key] += worse
            cells.append(f"{ratio:.3f}{'*' if worse else ' '}")
        verdicts = f"seed {r['outcomes']['seed']}, average {r['outcomes']['average']}"
        lines.append(
            f"{r['trace']:<28}{best['mean']:>11.4g}" + "".join(f"{c:>{width}}" for c in cells) + f"  {verdicts}"
        )
    geo = [float(np.exp(np.mean(np.log(ratios[key])))) for key, _ in CHOICES]
    lines.append(f"{'geometric mean':<39}" + "".join(f"{g:>{width - 1}.3f} " for g in geo))
    lines.append(f"{'misses':<39}" + "".join(f"{misses[key]:>{width - 1}} " for key, _ in CHOICES))
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_table_options(parser)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--out", type=Path, help="write every replay to this JSON file")
    parser.add_argument("--summary-only", type=Path, metavar="FILE", help="print the summary of a saved --out file")
    args = parser.parse_args()
    table = read_table(args.table)
    if args.summary_only is not None:
        print("\n".join(summary(table, json.loads(args.summary_only.read_text()))))
        return
    results = []
    for row in table.chosen(args.traces):
        results.append(trace_result(table, row, args.workers))
        r = results[-1]
        print(
            f"{row['trace']}: average {r['runs']['average']['validation']:.4g} on validation "
            f"({r['outcomes']['average']} the rule's {row['scored']['verdict']['rule_score']:.4g}), "
            f"test {r['runs']['average']['test']['mean']:.4g} ± {r['runs']['average']['test']['spread']:.2g}",
            flush=True,
        )
        if args.out is not None:
            args.out.write_text(json.dumps(results, indent=1))
    print("\n".join(summary(table, results)))


if __name__ == "__main__":
    main()
