"""Would the scored search's verdict deploy better if its rule were not chosen on the window it is judged on?

``train``'s verdict compares the selected model with the best of some forty rules on the validation window, the
rule's score taken on the very window that chose it: the most optimistic of forty (``benchmarks/diag_verdicts.py``
measures how much of a rule's lead there is luck).  A cross-fitted verdict, fixed before any number here was seen:

- the validation window (as the table replayed it) is cut in two halves by job count; every rule and the scored
  search's selected function are replayed on the whole window once, and each is scored on each half's jobs;
- fold k: the rule best on half k is judged on the other half, against the model there; the ratio model / rule
  on the held-out half (above 1: the model worse, whichever way the objective goes);
- the model loses when the geometric mean of the two folds' ratios exceeds 1 + b, beats below 1 − b, and ties
  between, b being the verdict's own tie band relative to the model's score (seeds' spread / model's score);
- it deploys the model unless it loses, then the rule today's verdict deploys (validation's best).

Per table it prints each row's two verdicts and, over the rows, goal 1's count (the deployed choice worse than
the test window's best rule beyond the spread, over the same replays as the report) and the geometric mean of the
deployed choice over that rule, for today's verdict and the cross-fitted one.  Only the scored search: its
selected function is in the table (``scored.selected.spec``), where a sarsa-esn model would have to be trained
again.  A check first: each whole-window replay must give the table's validation score (else the row is skipped
and said so).

Run: ``RLSCHED_TRACE_DIR=… python -m benchmarks.diag_crossfit_verdict [--table docs/results/learning]
[--traces …] [--workers 2]``.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

from benchmarks.diag_verdicts import Compared, compare_row, geomean  # noqa: E402
from benchmarks.learning_table import (  # noqa: E402
    CommittedTable,
    add_table_options,
    read_table,
    replay_cores,
    table_windows,
)
from rlsched.sim.workload import Workload  # noqa: E402
from rlsched.workflow.split import simulate_in  # noqa: E402
from rlsched.workflow.verdict import schedule_score  # noqa: E402

#: Scores that agree to this (relative) are the table's: a replay is deterministic.
SAME = 1e-9


def half_scores(table: CommittedTable, window: Workload, schedule: Any) -> tuple[float, float]:
    """The objective on the first and on the second half of ``window``'s jobs (by job count) of one replay."""
    n = len(window)
    first = np.arange(n) < n // 2
    run, wait, classes = schedule.run, schedule.wait, window.job_class
    return tuple(  # type: ignore[return-value]
        float(table.objective.score(run[mask], wait[mask], classes[mask])) for mask in (first, ~first)
    )


def crossfit_outcome(
    table: CommittedTable, halves: Mapping[str, tuple[float, float]], model: tuple[float, float], band: float
) -> tuple[str, float, list[str]]:
    """The cross-fitted verdict (see the module docstring): its outcome, the folds' geometric-mean ratio and the
    rule each fold picked.  ``halves``: every rule's score on each half."""
    ratios, picks = [], []
    for k in (0, 1):
        pick = min(halves, key=lambda label: (table.sign * halves[label][k], label))
        held_out = 1 - k
        ratios.append(table.over_best(model[held_out], halves[pick][held_out]))
        picks.append(pick)
    ratio = geomean(ratios)
    outcome = "loses" if ratio > 1 + band else "beats" if ratio < 1 - band else "ties"
    return outcome, ratio, picks


def row_verdicts(
    table: CommittedTable, row: dict[str, Any], workers: int
) -> tuple[Compared, str, float, list[str]] | None:
    """The scored search's :class:`Compared` (today's verdict) and its cross-fitted outcome on one row; None when
    a replay does not give the table's validation score."""
    window = table_windows(row, table.settings)["validation"]
    cores = replay_cores(row)
    labels = sorted(label for label, v in row["rules"].items() if v.get("validation") is not None)
    specs = [*labels, str(row["scored"]["selected"]["spec"])]
    recorded = [float(row["rules"][label]["validation"]) for label in labels]
    recorded.append(float(row["scored"]["verdict"]["model_score"]))
    replays = _replay(table, window, specs, cores, workers)
    for spec, (whole, _halves), want in zip(specs, replays, recorded, strict=True):
        if not math.isclose(whole, want, rel_tol=SAME):
            print(f"  {row['trace']}: {spec} replays to {whole!r}, the table says {want!r}: skipped")
            return None
    halves = {label: replays[i][1] for i, label in enumerate(labels)}
    verdict = row["scored"]["verdict"]
    band = float(verdict["spread"]) / abs(float(verdict["model_score"])) if verdict["model_score"] else 0.0
    outcome, ratio, picks = crossfit_outcome(table, halves, replays[-1][1], band)
    today = next(c for c in compare_row("", table, row) if c.learner == "scored")
    return today, outcome, ratio, picks


def _replay(
    table: CommittedTable, window: Workload, specs: Sequence[str], cores: int | None, workers: int
) -> list[tuple[float, tuple[float, float]]]:
    jobs = [(table, window, spec, cores) for spec in specs]
    if workers <= 1:
        return [_one(job) for job in jobs]
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(_one, jobs))


def _one(job: tuple[CommittedTable, Workload, str, int | None]) -> tuple[float, tuple[float, float]]:
    table, window, spec, cores = job
    ran = simulate_in(table.deployment, window, spec, cores)
    schedule = ran.schedule
    whole = schedule_score(table.objective, schedule)
    return whole, half_scores(table, window, schedule)


def summary(name: str, judged: Sequence[tuple[Compared, str]]) -> list[str]:
    """Goal 1 and the geometric mean over the test window's best rule, today's verdict against the cross-fitted."""
    lines = []
    for what, outcome_of in (("today's verdict", lambda c, o: c.outcome), ("cross-fitted", lambda c, o: o)):
        chosen = [(c, outcome_of(c, o) != "loses") for c, o in judged]
        misses = sum(c.model_misses if model else c.rule_misses for c, model in chosen)
        ratio = geomean([c.model_over_best if model else c.rule_over_best for c, model in chosen])
        lines.append(f"{name}, {what}: goal 1 missed on {misses} of {len(chosen)}; deployed / best rule {ratio:.3g}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_table_options(parser)
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()
    table = read_table(args.table)
    judged = []
    for row in table.chosen(args.traces):
        if "models" not in row.get("jittered", {}):
            continue
        got = row_verdicts(table, row, args.workers)
        if got is None:
            continue
        today, outcome, ratio, picks = got
        judged.append((today, outcome))
        print(
            f"{row['trace']:28} today {today.outcome:5} (vs {today.rule}); cross-fitted {outcome:5} "
            f"(model / held-out rule {ratio:.3g}; the halves picked {picks[0]}, {picks[1]}); on test the model "
            f"{today.model_over_best:.3g}, the rule {today.rule_over_best:.3g} × the best rule"
        )
    print("\n".join(summary(args.table.name, judged)))


if __name__ == "__main__":
    main()
