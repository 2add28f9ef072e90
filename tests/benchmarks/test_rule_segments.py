"""benchmarks/diag_rule_segments.py: where its segments fall, how each way of choosing picks its rule, and how a
pick is judged on the test window."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from benchmarks.diag_rule_segments import (
    against_default,
    choose,
    pick_outcome,
    segment_starts,
    segment_windows,
    summary,
)
from benchmarks.learning_table import CommittedTable
from rlsched.core.objective import Objective
from rlsched.core.policies.spec import PolicySpec
from rlsched.sim.workload import Workload, make_workload
from rlsched.workflow.learning import replay_stats
from rlsched.workflow.split import TimeSplit
from rlsched.workflow.verdict import RulePrior, RuleScores

BSLD = Objective.from_dict({"name": "bsld", "class_weights": {}})
TABLE = CommittedTable(settings={"objective": BSLD.to_dict()}, rows=[])


def test_segments_are_whole_evenly_spaced_and_stay_inside_the_range() -> None:
    # 10 whole segments of 1,000 fit in [2,000, 12,500): the first, the middle (the 4.5th rounds to even) and
    # the last.
    assert segment_starts(20_000, 2_000, 12_500, 1_000, 3) == [2_000, 6_000, 11_000]
    assert segment_starts(20_000, 2_000, 12_500, 1_000, 20) == [2_000 + 1_000 * i for i in range(10)]
    assert segment_starts(5_000, 2_000, 12_500, 1_000, 3) == [2_000, 3_000, 4_000]  # the trace ends first
    assert segment_starts(20_000, 2_000, 2_999, 1_000, 3) == []  # no whole segment fits


def _workload(n: int) -> Workload:
    rng = np.random.default_rng(0)
    return make_workload(
        np.arange(n) * 60.0, rng.integers(10, 1_000, n), np.ones(n), req_time=np.full(n, 2_000.0), max_procs=4
    )


def test_each_window_of_a_segment_starts_from_everything_before_it() -> None:
    windows = segment_windows(_workload(1_000), 200, 400, TimeSplit())
    assert [len(w) for w in windows.values()] == [100, 100, 100, 100]
    assert [len(w.past.user) for w in windows.values()] == [200, 300, 400, 500]  # type: ignore[union-attr]


def _scores(**scores: float) -> RuleScores:
    return RuleScores(scores=dict(scores), specs={label: PolicySpec(label, {}) for label in scores})


def test_each_way_of_choosing_reads_only_its_own_windows() -> None:
    scored = {
        "train 1/2": _scores(sjf=10.0, f1=11.0, easy=20.0),
        "train 2/2": _scores(sjf=10.0, f1=11.0, easy=20.0),
        "validation": _scores(sjf=10.0, f1=9.5, easy=20.0),  # f1 best here by a little
        "test": _scores(sjf=1.0, f1=100.0, easy=2.0),  # the test window must not sway any choice
    }
    prior = RulePrior("p", BSLD, {"other": {"sjf": 30.0, "f1": 30.0, "easy": 5.0}})
    assert choose(BSLD, scored, prior) == {
        "validation": "f1",
        "3 windows": "sjf",  # 1.0, 1.0, 1.05 against f1's 1.1, 1.1, 1.0
        "public prior": "easy",
        "easy": "easy",
    }


def _segment(best: list[float], default: list[float], other: list[float]) -> dict[str, Any]:
    return {
        "best": "b",
        "picks": {"validation": "d", "3 windows": "o"},
        "test": {"b": replay_stats(best), "d": replay_stats(default), "o": replay_stats(other)},
        "scores": {"test": {"b": best[0], "d": default[0], "o": other[0]}},
    }


def test_a_pick_misses_only_beyond_the_larger_spread() -> None:
    segment = _segment([10.0, 10.0], [20.0, 20.0], [9.0, 13.0])  # the other: mean 11, spread 2
    assert pick_outcome(TABLE, segment, "validation") == (2.0, True)
    ratio, missed = pick_outcome(TABLE, segment, "3 windows")
    assert math.isclose(ratio, 1.1) and not missed
    assert against_default(TABLE, segment, "3 windows") == 1
    assert against_default(TABLE, _segment([10.0, 10.0], [11.0, 11.0], [9.0, 13.0]), "3 windows") == 0
    # Where every rule scores alike on test (no job waits), no choice can miss: such segments are not summed.
    alike = _segment([1.0, 1.0], [1.0, 1.0], [1.0, 1.0])
    lines = summary(TABLE, [segment, alike, segment])
    assert lines[0].startswith("2 of 3 segments")
    assert lines[1].startswith("validation") and "2.000" in lines[1] and "spread in 2" in lines[1]
    assert "better in 2, worse in 0" in lines[2]
