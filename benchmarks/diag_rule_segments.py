"""Which rule should ``train`` deploy in a losing model's place?  Judged on windows no table and no choice saw.

``--rule-windows 3`` and ``--rule-prior public`` were not made defaults because the only evidence for them was
the learning tables' own test windows, seen before the choice (docs/workflow.md, "The rule deployed instead").
Here each trace of a committed whole-trace table (its cores, mode and objective) is cut, from job ``--start``
(12,000: past the 12,000-job table, whose validation windows are the public prior) up to the whole table's test
window (its last 25 %), into consecutive segments of ``--segment`` jobs; ``--per-trace`` of them, evenly spaced,
are split as ``train`` splits a trace (50/25/25), each window replayed from its past.  Every candidate rule is
replayed on the train window's two halves, the validation window and the test window, and each way of choosing
the rule is scored on the test window:

- ``validation``: the best rule on the validation window (the default);
- ``3 windows``: the best geometric mean over the train halves and validation (``--rule-windows 3``);
- ``public prior``: the best geometric mean over the other traces' 12,000-job validation windows
  (``--rule-prior public``, the segment's own trace left out);
- ``easy`` and ``multifactor``: no choice at all, what a site runs without rlsched.

Each pick is compared with the test window's best rule (hindsight: the best as replayed once).  Both are replayed
on three more copies of the test window with every submit moved by up to ±300 s, as the tables give a rule its
spread, and a pick *misses* where its mean is worse than the best's beyond the larger spread
(:func:`rlsched.workflow.learning.apart`).  Per segment one line; at the end, per pick: the geometric mean of
its ratio to the best, its misses, and against the default pick how often it is better and worse beyond the
spread, over the segments where the rules' scores differ at all on the test window.

Run: ``RLSCHED_TRACE_DIR=… python -m benchmarks.diag_rule_segments [--table docs/results/learning-whole]
[--traces KTH-SP2-1996-2.1-cln,…] [--segment 4000] [--per-trace 3] [--workers 2] [--pieces DIR]
[--out results.json]`` (about two minutes a segment of 4,000 jobs on 2 cores); ``--summary-only
results.json`` prints an earlier run's summary again.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from dataclasses import dataclass
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

from benchmarks.learning_table import CommittedTable, add_table_options, read_table, replay_cores, trace_spec  # noqa: E402
from rlsched.cli._common import load_workload  # noqa: E402
from rlsched.core.objective import Objective  # noqa: E402
from rlsched.sim.workload import Workload, with_class_rule  # noqa: E402
from rlsched.workflow.learning import JITTER_S, JITTER_SEEDS, replay_stats  # noqa: E402
from rlsched.workflow.learning_report import apart  # noqa: E402
from rlsched.workflow.pieces import PieceStore  # noqa: E402
from rlsched.workflow.site import trace_class_rule  # noqa: E402
from rlsched.workflow.split import Deployment, TimeSplit, simulate_in  # noqa: E402
from rlsched.workflow.verdict import RulePrior, RuleScores, rule_over_windows, schedule_score, score_rules  # noqa: E402

#: The ways of choosing the rule that are choices (the default first), and the fixed rules beside them.
CHOICES = ("validation", "3 windows", "public prior")
FIXED = ("easy", "multifactor")


def segment_starts(n_jobs: int, start: int, stop: int, size: int, per_trace: int) -> list[int]:
    """The first job of ``per_trace`` segments of ``size`` jobs inside ``[start, stop)`` (of ``n_jobs``), evenly
    spaced over the whole segments that fit there; fewer where fewer fit."""
    stop = min(stop, n_jobs)
    fit = max(0, (stop - start) // size)
    if fit == 0 or per_trace <= 0:
        return []
    picked = sorted({int(i) for i in np.linspace(0, fit - 1, min(per_trace, fit)).round()})
    return [start + i * size for i in picked]


def segment_windows(whole: Workload, start: int, size: int, split: TimeSplit) -> dict[str, Workload]:
    """Segment ``[start, start + size)`` of ``whole`` split as ``train`` splits a trace, each window with its past:
    the train window's halves, validation and test (the last two classed by the train window's rule, as train
    classes them)."""
    segment = whole.window(start, start + size, name=f"{whole.name}[{start}:{start + size}]")
    train = split.window(segment, "train")
    rule = trace_class_rule(train)
    half = len(train) // 2
    return {
        "train 1/2": train.window(0, half, name=f"{train.name}[1/2]"),
        "train 2/2": train.window(half, len(train), name=f"{train.name}[2/2]"),
        "validation": with_class_rule(split.window(segment, "validation"), rule),
        "test": with_class_rule(split.window(segment, "test"), rule),
    }


def choose(objective: Objective, scored: dict[str, RuleScores], prior: RulePrior) -> dict[str, str]:
    """Each way of choosing the rule, from the rules' scores on the windows before the test window."""
    validation = scored["validation"]
    best = validation.best(objective)
    assert best is not None, "no rule was replayed on the validation window"
    windows, _ = rule_over_windows(objective, {k: v for k, v in scored.items() if k != "test"})
    picks = {"validation": best, "3 windows": windows, "public prior": prior.pick(objective, validation.specs)}
    picks.update({rule: rule for rule in FIXED if rule in scored["test"].scores})
    return picks


@dataclass(frozen=True)
class Replayer:
    """How one trace's windows are replayed: the table's mode, objective and cores."""

    deployment: Deployment
    objective: Objective
    cores: int | None
    workers: int
    store: PieceStore | None

    def rules(self, window: Workload) -> RuleScores:
        return score_rules(
            window, self.deployment, self.objective, cores=self.cores, workers=self.workers, store=self.store
        )

    def jittered(self, test: Workload, labels: set[str], scored: RuleScores) -> dict[str, dict[str, Any]]:
        """Each of ``labels`` over the test window as replayed and its jittered copies: mean, spread, values."""
        copies = [test.jittered(seed, JITTER_S) for seed in JITTER_SEEDS]
        out = {}
        for label in sorted(labels):
            spec = scored.specs[label]
            again = [
                schedule_score(self.objective, simulate_in(self.deployment, w, spec, self.cores).schedule)
                for w in copies
            ]
            out[label] = replay_stats([scored.scores[label], *again])
        return out


def judge_segment(replayer: Replayer, windows: dict[str, Workload], prior: RulePrior) -> dict[str, Any]:
    """One segment: every rule on each window, each pick, and each pick against the test window's best."""
    scored = {name: replayer.rules(window) for name, window in windows.items()}
    picks = choose(replayer.objective, scored, prior)
    best = scored["test"].best(replayer.objective)
    assert best is not None, "no rule was replayed on the test window"
    stats = replayer.jittered(windows["test"], {best, *picks.values()}, scored["test"])
    return {
        "best": best,
        "picks": picks,
        "test": stats,
        "scores": {name: s.scores for name, s in scored.items()},
    }


def pick_outcome(table: CommittedTable, segment: dict[str, Any], how: str) -> tuple[float, bool]:
    """A pick's ratio to the test window's best (means over the replays; above 1 worse) and whether it misses
    that rule beyond the spread."""
    stats = segment["test"]
    mine, best = stats[segment["picks"][how]], stats[segment["best"]]
    ratio = table.over_best(mine["mean"], best["mean"])
    return ratio, ratio > 1 and apart(mine, best)


def against_default(table: CommittedTable, segment: dict[str, Any], how: str) -> int:
    """+1 where ``how``'s pick is better than the default's beyond the spread, -1 worse, 0 a tie."""
    stats = segment["test"]
    mine, theirs = stats[segment["picks"][how]], stats[segment["picks"]["validation"]]
    if not apart(mine, theirs):
        return 0
    return 1 if table.sign * (theirs["mean"] - mine["mean"]) > 0 else -1


def rules_differ(segment: dict[str, Any]) -> bool:
    """Whether the rules' scores on the test window differ at all (where no job waits, every rule scores alike
    and no choice can miss)."""
    scores = [v for v in segment["scores"]["test"].values() if math.isfinite(v)]
    return bool(scores) and max(scores) > min(scores)


def summary(table: CommittedTable, segments: list[dict[str, Any]]) -> list[str]:
    """Per way of choosing, over the segments where the rules differ on test: the geometric mean of its ratio to
    the best, its misses, and how often it is better and worse than the default beyond the spread."""
    differ = [s for s in segments if rules_differ(s)]
    lines = [f"{len(differ)} of {len(segments)} segments where the rules' scores on the test window differ:"]
    for how in (*CHOICES, *FIXED):
        judged = [s for s in differ if how in s["picks"]]
        if not judged:
            continue
        outcomes = [pick_outcome(table, s, how) for s in judged]
        geo = math.exp(float(np.mean([math.log(r) for r, _ in outcomes])))
        versus = [against_default(table, s, how) for s in judged]
        lines.append(
            f"{how:<14} ratio to the test window's best {geo:.3f} (geometric mean over {len(judged)}); "
            f"misses it beyond the spread in {sum(m for _, m in outcomes)}"
            + (
                ""
                if how == "validation"
                else f"; against the default: better in {versus.count(1)}, worse in {versus.count(-1)}"
            )
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_table_options(parser)
    parser.set_defaults(table=Path("docs/results/learning-whole"))
    parser.add_argument("--start", type=int, default=12_000, help="the first job a segment may hold")
    parser.add_argument("--segment", type=int, default=4_000, help="jobs per segment")
    parser.add_argument("--per-trace", type=int, default=3, help="segments per trace, evenly spaced")
    parser.add_argument("--workers", type=int, default=2, help="processes replaying the rules")
    parser.add_argument("--pieces", type=Path, default=None, help="keep each replay here, to resume a stopped run")
    parser.add_argument("--out", type=Path, default=None, help="write every segment's scores here (JSON)")
    parser.add_argument(
        "--summary-only", type=Path, default=None, help="print the summary of an earlier run's --out, replaying nothing"
    )
    args = parser.parse_args()
    table = read_table(Path(args.table))
    if args.summary_only is not None:
        for line in summary(table, json.loads(args.summary_only.read_text())["segments"]):
            print(line)
        return
    run(table, args)


def run(table: CommittedTable, args: argparse.Namespace) -> None:
    split = TimeSplit.from_dict(table.settings["split"])
    store = PieceStore(args.pieces) if args.pieces is not None else None
    public = RulePrior.public()
    segments: list[dict[str, Any]] = []
    for row in table.chosen(args.traces):
        whole = load_workload(trace_spec(row), max_procs=replay_cores(row))
        stop = split.bounds(len(whole))["test"][0]
        replayer = Replayer(table.deployment, table.objective, replay_cores(row), args.workers, store)
        starts = segment_starts(len(whole), args.start, stop, args.segment, args.per_trace)
        if not starts:
            print(f"{row['trace']:<28}no segment of {args.segment} jobs between job {args.start} and {stop}")
        for start in starts:
            segment = judge_segment(
                replayer, segment_windows(whole, start, args.segment, split), public.without(row["trace"])
            )
            segment.update(trace=row["trace"], start=start, size=args.segment)
            segments.append(segment)
            cells = [f"{how} {pick_outcome(table, segment, how)[0]:.2f}" for how in segment["picks"]]
            print(f"{row['trace']:<28}{start:>7}  best {segment['best']}; " + ", ".join(cells), flush=True)
            if args.out is not None:
                args.out.write_text(json.dumps({"command": sys.argv[1:], "segments": segments}, indent=1))
    for line in summary(table, segments):
        print(line)


if __name__ == "__main__":
    main()
