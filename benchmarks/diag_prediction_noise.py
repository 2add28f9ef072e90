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

``--base learned`` asks what a detector of the short jobs would buy on top of the shipped ``learned`` predictor.
The rules then read the ``learned`` predictor exactly as the table's ``…:runtime_model=learned`` rules read it
(built and taught the window's past by :func:`rlsched.sim.rules.warmed_predictor`, fed the replay's ends), except
for the jobs a simulated detector flags (:class:`DetectedShort`).  With ``--exact-below S`` (default 60) a job
that runs under S seconds is flagged with probability R (each of ``--recall``, default 1: a perfect detector) and
then predicted its runtime (with ``--found-at S``: min(learned prediction, S), a detector that knows "short" but
not how short); any other job is wrongly flagged with probability Q (each of
``--false-positive-rate``, default 0) and then predicted min(learned prediction, ``--flag-s``, default 30 s).
One uniform draw per job decides both, so the grid's detections are nested (recall 0.8 finds every job recall
0.5 finds); an imperfect detector is drawn once per ``--detector-seeds`` seed and its ratio is the geometric mean
over them.  The grid is ``--recall`` × ``--false-positive-rate``, after the learned predictor alone (no job
flagged; the table's recorded ratio of those rules is printed beside it as a check).  Per trace and setting it
prints the detector's own recall and precision on the window, the recall and precision of the predictions under S
seconds the rules got (learned's own hits and the detector's, over the jobs the replay predicted; mean over the
six replays), and the best rule's ratio; at the end, per setting, the geometric mean and how many traces are
≥ 10 % better, against the best rule and against the learned predictor alone.  ``--causal last2,…`` adds real
detectors, which see only what a live scheduler knows (:class:`benchmarks.diag_short_jobs.CausalShort`, fed the
replay's submits and ends, its memory taught the window's past as the predictor is): a job one of them flags is
predicted min(learned prediction, ``--flag-s``).  One replay of a window moves by tens of per cent with any
change (the table's jittered copies of a window differ up to 3× on CTC-SP2): ``--jitter-seeds 1,2,3`` replays each
setting on the table's jittered copies of the test window too (each against the best rule's score the table
recorded on that copy), and a setting's ratio is the geometric mean over the windows and detector seeds.

A diagnostic: nothing here is selected on or deployed.  docs/rules.md ("What a better predictor would buy")
quotes it.

Run: ``RLSCHED_TRACE_DIR=… python -m benchmarks.diag_prediction_noise [--table docs/results/learning]
[--traces KTH-SP2-1996-2.1-cln,…] [--sigmas 0,0.5,1,2] [--seed 0] [--blind-below 60]``, or
``… --base learned [--exact-below 60] [--recall 1,0.8,0.5] [--false-positive-rate 0,0.01,0.05] [--flag-s 30]
[--found-at 30] [--detector-seeds 0,1,2] [--causal last2,script,req<=300] [--jitter-seeds 1,2,3]``.
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import sys
import time
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from collections.abc import Callable, Collection, Iterator, Sequence  # noqa: E402
from contextlib import contextmanager  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from functools import partial  # noqa: E402
from typing import Any  # noqa: E402
from unittest import mock  # noqa: E402

import numpy as np  # noqa: E402

import rlsched.sim.policies as sim_policies  # noqa: E402
import rlsched.sim.rules as sim_rules  # noqa: E402
from benchmarks.diag_short_jobs import FlaggedPredictor, causal_short, hits  # noqa: E402
from benchmarks.learning_table import (  # noqa: E402
    CommittedTable,
    add_table_options,
    read_table,
    replay_cores,
    table_whole,
    table_windows,
)
from rlsched.core.prediction import MIN_PREDICTION_S, RuntimePredictor  # noqa: E402
from rlsched.core.runtime import usable_requested  # noqa: E402
from rlsched.core.view import UNKNOWN_EXECUTABLE  # noqa: E402
from rlsched.sim.prediction_errors import SHORT_JOB_S, order_agreement, short_job_hits  # noqa: E402
from rlsched.sim.workload import Workload  # noqa: E402
from rlsched.workflow.split import simulate_in  # noqa: E402
from rlsched.workflow.verdict import schedule_score  # noqa: E402

RULES = ("sjf", "saf", "f1", "f2", "f3", "f4")
SIGMAS = (0.0, 0.25, 0.5, 1.0, 1.5, 2.0)
#: ``--base learned``: a wrongly flagged job is predicted at most this (a detector that says "short" says no more).
FLAG_S = 30.0


class BlurredOracle:
    """A :class:`rlsched.core.prediction.RuntimePredictor` that knows each job's runtime up to a fixed error
    (the jobs of one window, by id; any other job, such as one of the window's past, gets its request)."""

    name = "learned"  # the name the rules ask for: the replay is patched to build this one instead

    def __init__(self, prediction: dict[int, float]) -> None:
        self.prediction = prediction

    @property
    def unseen_finished(self) -> int:
        return 0

    def predict(
        self,
        job_id: int,
        user: int,
        vo: int,
        cores: int,
        request_s: float,
        submit_s: float,
        executable: int = UNKNOWN_EXECUTABLE,
    ) -> float:
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


class DetectedShort(FlaggedPredictor):
    """The ``learned`` predictor with a simulated detector of the short jobs on top (module docstring).

    ``inner`` predicts and learns as it would alone (it learns each job's actual runtime, whatever the detector
    said); a flagged job's prediction is replaced: ``flags[job_id] = (seconds, exact)`` gives it ``seconds``
    (exact: a short job found, its runtime) or min(inner's prediction, ``seconds``) (a job flagged wrongly).
    Every prediction handed out is kept in ``made``, by job id, and the flagged jobs among them in ``flagged``.
    """

    def __init__(self, inner: RuntimePredictor, flags: dict[int, tuple[float, bool]]) -> None:
        super().__init__(inner)
        self.flags = flags

    def flag(
        self, job_id: int, prediction: float, user: int, cores: int, request_s: float, submit_s: float
    ) -> float | None:
        flag = self.flags.get(job_id)
        if flag is None:
            return None
        seconds, exact = flag
        return seconds if exact else min(prediction, seconds)


def detector_flags(
    run: np.ndarray,
    request: np.ndarray,
    ids: Sequence[int],
    *,
    below_s: float,
    recall: float,
    false_positive_rate: float,
    flag_s: float = FLAG_S,
    seed: int = 0,
    found_s: float | None = None,
) -> dict[int, tuple[float, bool]]:
    """A simulated detector of the jobs that run under ``below_s``: each of them found with probability
    ``recall`` (flagged ``(runtime, True)``, the runtime clamped to [1 s, request]; with ``found_s``, a detector
    that knows "short" but not how short, ``(found_s, False)``), each other job flagged wrongly with probability
    ``false_positive_rate`` (``(flag_s, False)``); one uniform draw per job from ``seed``, so a higher recall or
    rate flags a superset.  By ``ids`` (the ids the replayed agents see)."""
    draw = np.random.default_rng(seed).random(len(run))
    short = run < below_s
    exact = np.clip(run, MIN_PREDICTION_S, np.maximum(request, MIN_PREDICTION_S))
    out: dict[int, tuple[float, bool]] = {}
    for k in np.flatnonzero(short & (draw < recall)).tolist():
        out[ids[k]] = (float(exact[k]), True) if found_s is None else (found_s, False)
    for k in np.flatnonzero(~short & (draw < false_positive_rate)).tolist():
        out[ids[k]] = (flag_s, False)
    return out


#: A detector on top of ``learned`` (``--base learned``): simulated (recall, false-positive rate), causal (a name of
#: :func:`benchmarks.diag_short_jobs.detectors`), or none.
Detector = tuple[float, float] | str | None


@contextmanager
def learned_with(
    wrap: Callable[[RuntimePredictor, Workload], FlaggedPredictor], built: list[FlaggedPredictor]
) -> Iterator[None]:
    """Replays inside build each ``learned`` predictor as :func:`rlsched.sim.rules.warmed_predictor` does (the
    same warmed copy, cached across the settings), wrapped by ``wrap`` (the predictor, the replayed window) and
    kept in ``built``.  Boost mode's agents take it from :mod:`rlsched.sim.policies`, gate mode's rules from
    :mod:`rlsched.sim.rules`: both are patched."""
    warmed: Callable[[str, Workload], RuntimePredictor] = sim_rules.warmed_predictor

    def wrapped(name: str, workload: Workload) -> RuntimePredictor:
        predictor = warmed(name, workload)
        if name != "learned":
            return predictor
        built.append(wrap(predictor, workload))
        return built[-1]

    with (
        mock.patch.object(sim_policies, "warmed_predictor", wrapped),
        mock.patch.object(sim_rules, "warmed_predictor", wrapped),
    ):
        yield


def window_ids(test: Workload, mode: str) -> list[int]:
    """The ids the replayed policies know the window's jobs by: boost mode's agents see the trace's job ids,
    gate mode's replayed rules the window's rows."""
    return test.job_id.tolist() if mode == "boost" else list(range(len(test)))


def best_of_rules(table: CommittedTable, test: Workload, cores: int | None, best: float) -> tuple[float, str]:
    """(the best of :data:`RULES` on ``learned`` over ``best``, the window's best rule's score, which rule) in the
    current patches."""
    scores = {}
    for rule in RULES:
        ran = simulate_in(table.deployment, test, f"{rule}:runtime_model=learned", cores)
        scores[rule] = schedule_score(table.objective, ran.schedule)
    mine = min(scores, key=lambda r: table.sign * scores[r])
    return table.over_best(scores[mine], best), mine


def run_oracle(table: CommittedTable, args: argparse.Namespace) -> None:
    """The blurred oracle against the best rule (the module docstring's first paragraph)."""
    sigmas = [float(s) for s in args.sigmas.split(",") if s]
    ratios: dict[str, list[float]] = {f"σ = {s:g}": [] for s in sigmas}
    print("| trace | σ | order agreement | best rule on it / best rule | (user-last2; learned agreement) |")
    print("|---|---|---|---|---|")
    for row in table.chosen(args.traces):
        test = table_windows(row, table.settings)["test"]
        cores = replay_cores(row)
        own = row["prediction"]
        for sigma in sigmas:
            prediction, run = blurred(test, sigma, args.seed, args.blind_below)
            by_id = dict(zip(window_ids(test, table.deployment.mode), prediction.tolist(), strict=True))
            with mock.patch.object(sim_rules, "make_predictor", lambda _name, p=by_id: BlurredOracle(p)):
                sim_rules._WARMED.clear()  # a warmed predictor of another σ must not be reused
                ratio, _ = best_of_rules(table, test, cores, float(row["best_rule_test"]["test"]))
            sim_rules._WARMED.clear()
            ratios[f"σ = {sigma:g}"].append(ratio)
            agreement = order_agreement(prediction, run, test.submit.astype(np.float64))
            theirs = "; ".join(f"{own[m].get('order_agreement', math.nan):.3f}" for m in ("user-last2", "learned"))
            print(f"| {row['trace']} | {sigma:g} | {agreement:.3f} | {ratio:.2f} | {theirs} |", flush=True)
    print()
    summarise(ratios)


def run_learned(table: CommittedTable, args: argparse.Namespace) -> None:
    """The learned predictor alone and with detectors of the short jobs (module docstring)."""
    grid = [(float(r), float(q)) for r in args.recall.split(",") if r for q in args.false_positive_rate.split(",") if q]
    settings: list[tuple[str, Detector]] = [("learned alone", None)]
    settings += [(f"R {r:g}, Q {q:g}", (r, q)) for r, q in grid]
    settings += [(f"causal {name}", name) for name in args.causal.split(",") if name]
    seeds = [int(v) for v in args.detector_seeds.split(",") if v]
    ratios: dict[str, list[float]] = {label: [] for label, _ in settings}
    gains: dict[str, list[float]] = {label: [] for label, _ in settings}
    found = "its runtime" if args.found_at is None else f"min(learned, {args.found_at:g} s)"
    print(f"Detector of the jobs under {args.exact_below:g} s: a found one is predicted {found}, a wrongly flagged ")
    print(f"one (any causally flagged one) min(learned, {args.flag_s:g} s); an imperfect one over seeds {seeds}.")
    print()
    print(
        "| trace | setting | short jobs | detector recall / precision | predicted short: recall / precision "
        "| best rule on it / best rule (per seed) | / learned alone | which rule | s |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    jitters = [int(v) for v in args.jitter_seeds.split(",") if v]
    for row in table.chosen(args.traces):
        windows = test_windows(table, row, jitters)
        past_executable = executables_before_test(table, row) if args.causal else None
        alone = math.nan
        for label, detector in settings:
            t0 = time.perf_counter()
            random = isinstance(detector, tuple) and (0 < detector[0] < 1 or 0 < detector[1] < 1)
            out = one_setting(
                table,
                row,
                windows,
                detector,
                seeds if random else seeds[:1],
                args.exact_below,
                args.flag_s,
                args.found_at,
                past_executable,
            )
            ratio = _geo(out.ratios)
            alone = ratio if detector is None else alone
            ratios[label].append(ratio)
            gains[label].append(ratio / alone)
            each = f" ({', '.join(f'{v:.2f}' for v in out.ratios)})" if len(out.ratios) > 1 else ""
            check = f" (table: {_geo(table_learned_ratios(table, row, jitters)):.2f})" if detector is None else ""
            print(
                f"| {row['trace']} | {label} | {out.short_share:.1%} | {out.detector} | {out.predicted} "
                f"| {ratio:.2f}{each}{check} | {ratio / alone:.2f} | {out.rules} | {time.perf_counter() - t0:.0f} |",
                flush=True,
            )
    print()
    summarise(ratios)
    print()
    print("Over the learned predictor alone:")
    summarise(gains)


@dataclass(frozen=True)
class SettingOutcome:
    """One detector setting on a trace's windows, over the detector's seeds."""

    ratios: list[float]  # the best rule on it over the best rule, per window and seed
    rules: str  # which rule was best, per window and seed
    short_share: float  # the window's jobs that ran under the detected length
    detector: str  # its own recall / precision (mean over the replays)
    predicted: str  # the recall / precision of the predictions under that length the replays made


def one_setting(
    table: CommittedTable,
    row: dict[str, Any],
    windows: list[tuple[Workload, float]],
    detector: Detector,
    seeds: list[int],
    below_s: float,
    flag_s: float = FLAG_S,
    found_s: float | None = None,
    past_executable: np.ndarray | None = None,
) -> SettingOutcome:
    """The rules on ``learned`` with ``detector`` on each of ``windows`` (a window, its best rule's score), once
    per seed (``flag_s``, ``found_s``: :func:`detector_flags`; a causally flagged job is predicted at most
    ``flag_s``; ``past_executable``: the executables of the windows' past, for the causal detectors that read
    them, :func:`executables_before_test`)."""
    cores = replay_cores(row)
    ratios, rules, mine, said = [], [], [], []
    for (test, best), seed in itertools.product(windows, seeds):
        request = usable_requested(test.req_time.astype(np.float64), test.job_class)
        run = np.minimum(np.maximum(test.run.astype(np.float64), 0.0), request)
        ids = window_ids(test, table.deployment.mode)
        wrap: Callable[[RuntimePredictor, Workload], FlaggedPredictor]
        if isinstance(detector, str):
            wrap = partial(causal_short, detector=detector, flag_s=flag_s, ids=ids, past_executable=past_executable)
        else:
            flags: dict[int, tuple[float, bool]] = {}
            if detector is not None:
                recall, rate = detector
                flags = detector_flags(
                    run,
                    request,
                    ids,
                    below_s=below_s,
                    recall=recall,
                    false_positive_rate=rate,
                    flag_s=flag_s,
                    seed=seed,
                    found_s=found_s,
                )
            wrap = partial(lambda predictor, _window, f: DetectedShort(predictor, f), f=flags)
        built: list[FlaggedPredictor] = []
        with learned_with(wrap, built):
            ratio, rule = best_of_rules(table, test, cores, best)
        if len(built) != len(RULES):
            raise RuntimeError(f"{row['trace']}: {len(built)} learned predictors wrapped for {len(RULES)} replays")
        ratios.append(ratio)
        rules.append(rule)
        for predictor in built:
            seen = np.array([i in predictor.made for i in ids])
            if detector is not None:
                mine.append(hits(np.array([i in predictor.flagged for i in ids])[seen], run[seen] < below_s))
            said.append(replay_hits(predictor, ids, seen, run, below_s))
    short = float(np.mean(windows[0][0].run < below_s))
    return SettingOutcome(ratios, "/".join(rules), short, _pair(mine), _pair(said))


def replay_hits(
    predictor: FlaggedPredictor, ids: Sequence[int], seen: np.ndarray, run: np.ndarray, below_s: float
) -> tuple[float, float]:
    """The recall / precision of one replay's predictions under ``below_s`` as a detector of the jobs that ran
    under it (:func:`rlsched.sim.prediction_errors.short_job_hits` when ``below_s`` is its length), over the
    window's jobs the replay predicted (``seen``: boost mode's agents never see a job that starts and ends between
    two polls)."""
    predicted = np.array([predictor.made.get(i, math.inf) for i in ids])[seen]
    if below_s == SHORT_JOB_S:
        return short_job_hits(predicted, run[seen])
    return hits(predicted < below_s, run[seen] < below_s)


def _pair(hits: list[tuple[float, float]]) -> str:
    """Mean recall / mean precision (over the replays where it is defined; "-" where it never is)."""
    if not hits:
        return "-"
    means = []
    for values in zip(*hits, strict=True):
        defined = [v for v in values if not math.isnan(v)]
        means.append(f"{np.mean(defined):.2f}" if defined else "-")
    return " / ".join(means)


def test_windows(table: CommittedTable, row: dict[str, Any], jitters: list[int]) -> list[tuple[Workload, float]]:
    """The trace's test window and its copies jittered as the table jittered them (``jitters``: some of the table's
    jitter seeds), each with its best rule's score as the table recorded it."""
    test = table_windows(row, table.settings)["test"]
    out = [(test, float(row["best_rule_test"]["test"]))]
    jittered = row["jittered"]
    best = jittered["rules"][row["best_rule_test"]["rule"]]["seeds"]
    for seed in jitters:
        k = jittered["jitter_seeds"].index(seed)
        out.append((test.jittered(seed, float(jittered["jitter_s"])), float(best[k])))
    return out


def executables_before_test(table: CommittedTable, row: dict[str, Any]) -> np.ndarray:
    """The executable of each job before the trace's test window: its past's, by row, as
    :func:`rlsched.core.prediction.learn_history` numbers them (the jittered copies share the past)."""
    whole, bounds = table_whole(row, table.settings)
    return whole.executable[: bounds["test"][0]]


def table_learned_ratios(table: CommittedTable, row: dict[str, Any], jitters: list[int]) -> list[float]:
    """The best of :data:`RULES` on ``learned`` over the best rule, as the table recorded the test replays (the
    test window, then its copies jittered by ``jitters``)."""
    jittered = row["jittered"]
    best_rule = row["best_rule_test"]["rule"]
    windows = [
        (
            float(row["best_rule_test"]["test"]),
            [float(row["rules"][f"{r}:runtime_model=learned"]["test"]) for r in RULES],
        )
    ]
    for seed in jitters:
        k = jittered["jitter_seeds"].index(seed)
        scores = [float(jittered["rules"][f"{r}:runtime_model=learned"]["seeds"][k]) for r in RULES]
        windows.append((float(jittered["rules"][best_rule]["seeds"][k]), scores))
    out = []
    for best, scores in windows:
        out.append(table.over_best(min(scores, key=lambda v: table.sign * v), best))
    return out


def _geo(values: list[float]) -> float:
    return math.exp(float(np.mean(np.log(values))))


def summarise(ratios: dict[str, list[float]]) -> None:
    """Per setting: the geometric mean over the traces and how many are ≥ 10 % better."""
    for label, values in ratios.items():
        if values:
            geo = _geo(values)
            wins = sum(v <= 0.9 for v in values)
            print(f"{label}: geometric mean {geo:.2f} over {len(values)} traces; ≥ 10 % better on {wins}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_table_options(parser)
    parser.add_argument("--base", choices=("oracle", "learned"), default="oracle")
    parser.add_argument("--sigmas", default=",".join(f"{s:g}" for s in SIGMAS), help="oracle: the blurs")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--blind-below",
        type=float,
        default=0.0,
        metavar="S",
        help="oracle: predicts the request for every job that ran less than S seconds (default 0: none)",
    )
    parser.add_argument("--exact-below", type=float, default=SHORT_JOB_S, metavar="S", help="learned: the detected")
    parser.add_argument("--recall", default="1", help="learned: the detector's recalls (comma-separated)")
    parser.add_argument("--false-positive-rate", default="0", help="learned: its false-positive rates")
    parser.add_argument("--flag-s", type=float, default=FLAG_S, help="learned: a wrongly flagged job's ceiling")
    parser.add_argument(
        "--found-at",
        type=float,
        metavar="S",
        help="learned: a found short job is predicted min(learned, S), not its runtime",
    )
    parser.add_argument(
        "--jitter-seeds",
        default="",
        help="learned: also replay the test window jittered as the table did, by these of its seeds (e.g. 1,2,3)",
    )
    parser.add_argument("--detector-seeds", default="0", help="learned: an imperfect detector's seeds (mean)")
    parser.add_argument(
        "--causal", default="", help="learned: causal detectors too (names of benchmarks.diag_short_jobs.detectors)"
    )
    args = parser.parse_args()
    table = read_table(args.table)
    if args.base == "oracle":
        run_oracle(table, args)
    else:
        run_learned(table, args)


if __name__ == "__main__":
    main()
