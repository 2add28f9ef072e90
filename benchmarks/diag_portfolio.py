"""Portfolio scheduling: does switching between the field's rules every week beat the best single rule?

A periodic portfolio scheduler (Deng, Verboon & Iosup, JSSPP 2013): every ``--period-days`` the rules of a
portfolio are each replayed on the jobs submitted in the last ``--lookback-days`` (from an empty machine, EASY
backfilling; a job's runtime is its recorded one where the trace records it as ended by then, its request
otherwise: what a live scheduler knows), and the queue is ordered by the best of them until the next switch.
Every rule keeps its own runtime predictor fed the whole time, so a switch changes the order, not what the rules
have learned.  If the best rule changes from week to week (the learning tables' "How far one window's best rule
carries to the next"), a choice made weekly could beat any one rule; the notes of issue 23 say whether it did.

Gate mode (the engine's dynamic priority, as a rule on a prediction replays), so the portfolio and every rule of
it are compared like for like on the same window of a committed table's trace (its jobs, cores and split; the
look-back reaches into the window before).  Prints, per window, the portfolio's mean bounded slowdown over the best
rule's on that window (hindsight), and the rules it chose most.

Run: ``RLSCHED_TRACE_DIR=… python -m benchmarks.diag_portfolio [--table docs/results/learning-whole]
[--traces KTH-SP2-1996-2.1-cln,…] [--period-days 7] [--lookback-days 14] [--windows validation,test]``
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

from benchmarks.learning_table import add_table_options, read_table, replay_cores, table_whole  # noqa: E402
from rlsched.core.objective import Objective  # noqa: E402
from rlsched.core.policies import resolve  # noqa: E402
from rlsched.core.policies.registry import rule_setup  # noqa: E402
from rlsched.core.policies.rules import rule_priority  # noqa: E402
from rlsched.core.view import FloatArray, IntArray  # noqa: E402
from rlsched.sim.engine import DEFAULT_OVERRUN, DynamicPriority, Schedule, Simulator  # noqa: E402
from rlsched.sim.policies import bind, simulate_policy  # noqa: E402
from rlsched.sim.rules import RulePriority  # noqa: E402
from rlsched.sim.workload import Workload  # noqa: E402
from rlsched.workflow.verdict import schedule_score  # noqa: E402

_REQUEST_RULES = ("fcfs", "sjf", "saf", "f1", "f2", "f3", "f4", "wfp3", "unicep")
_PREDICTED_RULES = ("sjf", "saf", "f1", "f2", "f3", "f4")
#: The field's rules on the request, and the static ones on each prediction (WFP3 and UNICEP on a prediction are
#: left out: their re-prioritisation passes make every look-back replay several times slower).
PORTFOLIO: tuple[str, ...] = _REQUEST_RULES + tuple(
    f"{rule}:runtime_model={model}" for model in ("learned", "user-last2") for rule in _PREDICTED_RULES
)
_DAY_S = 86400.0


def mean_bsld(schedule: Schedule) -> float:
    """The table's objective (the mean bounded slowdown) of one replay."""
    return schedule_score(Objective(), schedule)


def rule_score(workload: Workload, rule: str, cores: int | None) -> float:
    return mean_bsld(simulate_policy(workload, rule, cores, mode="gate").schedule)


class _FcfsPriority:
    """FCFS as a dynamic priority (the other members are :class:`RulePriority`)."""

    def __init__(self, workload: Workload) -> None:
        self.submit = workload.submit.astype(np.float64)

    def submit_priority(self, row: int, now: float) -> float:
        return float(rule_priority(self.submit[[row]])[0])

    def priorities(self, rows: IntArray, now: float) -> FloatArray:
        return rule_priority(self.submit[rows])

    def started(self, row: int, now: float) -> None:
        pass

    def ended(self, row: int, now: float) -> None:
        pass

    def next_pass(self, now: float) -> float:
        return math.inf


def _member(workload: Workload, rule: str) -> DynamicPriority:
    setup = rule_setup(bind(resolve(rule), workload))
    return _FcfsPriority(workload) if setup is None else RulePriority(workload, setup, DEFAULT_OVERRUN)


class PortfolioPriority:
    """The engine's dynamic priority of the portfolio (module docstring): the chosen member's, re-chosen every
    ``period_s`` from the first submit by ``choose(now)``."""

    def __init__(
        self, workload: Workload, rules: tuple[str, ...], period_s: float, choose: Callable[[float], str | None]
    ) -> None:
        self.members = {rule: _member(workload, rule) for rule in rules}
        self.current = rules[0]
        self.period_s = period_s
        self.choose = choose
        self.next_switch = float(workload.submit[0]) if len(workload) else math.inf
        self.choices: list[str] = []

    def _switch_if_due(self, now: float) -> None:
        while now >= self.next_switch:
            chosen = self.choose(self.next_switch)
            if chosen is not None:
                self.current = chosen
                self.choices.append(chosen)
            self.next_switch += self.period_s

    def submit_priority(self, row: int, now: float) -> float:
        self._switch_if_due(now)
        # Every member sees every submit, so each predictor predicts each job as it would alone.
        own = {rule: member.submit_priority(row, now) for rule, member in self.members.items()}
        return own[self.current]

    def priorities(self, rows: IntArray, now: float) -> FloatArray:
        self._switch_if_due(now)
        return self.members[self.current].priorities(rows, now)

    def started(self, row: int, now: float) -> None:
        for member in self.members.values():
            member.started(row, now)

    def ended(self, row: int, now: float) -> None:
        for member in self.members.values():
            member.ended(row, now)

    def next_pass(self, now: float) -> float:
        return min(self.next_switch, self.members[self.current].next_pass(now))


def lookback_chooser(
    whole: Workload, cores: int | None, rules: tuple[str, ...], lookback_s: float
) -> Callable[[float], str | None]:
    """The best rule on the jobs of ``whole`` submitted in the ``lookback_s`` before ``now``: each replayed with
    its recorded runtime where the trace records the job as ended by ``now``, with its request otherwise (None
    with fewer than 20 such jobs: the portfolio keeps its rule)."""
    recorded_end = whole.submit + np.nan_to_num(whole.recorded_wait, nan=0.0) + whole.run

    def choose(now: float) -> str | None:
        lo, hi = (int(i) for i in np.searchsorted(whole.submit, [now - lookback_s, now]))
        if hi - lo < 20:
            return None
        recent = whole.window(lo, hi)
        known = recorded_end[lo:hi] <= now
        recent = replace(recent, run=np.where(known, recent.run, np.maximum(recent.req_time, 1.0)))
        scores = {rule: rule_score(recent, rule, cores) for rule in rules}
        return min(rules, key=lambda rule: scores[rule])

    return choose


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_table_options(parser)
    parser.add_argument("--period-days", type=float, default=7.0)
    parser.add_argument("--lookback-days", type=float, default=14.0)
    parser.add_argument("--windows", default="validation,test")
    args = parser.parse_args()
    table = read_table(args.table)
    period, lookback = args.period_days * _DAY_S, args.lookback_days * _DAY_S
    for row in table.chosen(args.traces):
        whole, bounds = table_whole(row, table.settings)
        cores = replay_cores(row)
        for name in args.windows.split(","):
            t0 = time.perf_counter()
            window = whole.window(*bounds[name])
            rules = {rule: rule_score(window, rule, cores) for rule in PORTFOLIO}
            best = min(PORTFOLIO, key=lambda rule: rules[rule])
            choose = lookback_chooser(whole, cores, PORTFOLIO, lookback)
            portfolio = PortfolioPriority(window, PORTFOLIO, period, choose)
            sim = Simulator(window, cores, dynamic=portfolio, backfill=True, overrun=DEFAULT_OVERRUN)
            score = mean_bsld(sim.run())
            most = ", ".join(f"{rule} {n}" for rule, n in Counter(portfolio.choices).most_common(3))
            print(
                f"{row['trace']} {name} (every {args.period_days:g} d on the last {args.lookback_days:g} d): "
                f"portfolio {score:.4g}, {score / rules[best]:.2f}x the best rule {best} {rules[best]:.4g}; "
                f"{len(portfolio.choices)} choices, most {most} [{time.perf_counter() - t0:.0f} s]",
                flush=True,
            )


if __name__ == "__main__":
    main()
