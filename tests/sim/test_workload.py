"""Workload helpers (rlsched/sim/workload.py) not covered by the trace readers' tests."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from rlsched.sim.workload import make_workload


def test_a_jittered_replay_moves_each_job_a_little_and_keeps_the_jobs() -> None:
    submit = np.arange(0.0, 5000.0, 100.0)
    w = make_workload(submit, run=np.arange(len(submit)) + 10.0, procs=np.ones(len(submit), dtype=int), max_procs=4)
    j = w.jittered(7, 300.0, name="replay")
    assert j.name == "replay" and len(j) == len(w)
    assert np.all(np.diff(j.submit) >= 0) and j.submit.min() >= 0.0
    # The same jobs (each keeps its own run time), each moved by at most the spread.
    order = np.argsort(j.job_id)
    np.testing.assert_array_equal(j.job_id[order], w.job_id)
    np.testing.assert_array_equal(j.run[order], w.run)
    assert np.abs(j.submit[order] - w.submit).max() <= 300.0
    assert not np.array_equal(j.submit[order], w.submit)
    # A seed gives one replay; another seed another.
    np.testing.assert_array_equal(w.jittered(7, 300.0).submit, j.submit)
    assert not np.array_equal(w.jittered(8, 300.0).submit, j.submit)
    np.testing.assert_array_equal(w.jittered(7, 0.0).submit, w.submit)
    with pytest.raises(ValueError, match="spread_s"):
        w.jittered(1, -1.0)


def test_a_window_carries_the_jobs_before_it_and_a_selection_does_not() -> None:
    w = make_workload([0.0, 10.0, 20.0, 30.0, 40.0], run=[5.0, 50.0, 5.0, 5.0, 5.0], procs=[1] * 5, max_procs=2)
    w = replace(w, recorded_wait=np.array([1.0, np.nan, 2.0, 0.0, 0.0]))
    later = w.window(2, 5, name="later")
    assert later.name == "later" and len(later) == 3 and later.past is not None
    np.testing.assert_array_equal(later.past.submit_s, [0.0, 10.0])
    np.testing.assert_array_equal(later.past.end_s, [6.0, 60.0])  # submit + recorded wait (none: 0) + run
    np.testing.assert_array_equal(later.past.request_s, w.req_time[:2])
    # A window of a window: its past is the outer past and the outer window's rows before it.
    inner = later.window(1, 3)
    assert inner.past is not None
    np.testing.assert_array_equal(inner.past.submit_s, [0.0, 10.0, 20.0])
    assert later.select(np.arange(1, 3)).past is None
    assert later.cut(25.0, 50.0).past is None


def test_the_programs_are_the_policies_to_read_only_where_the_workload_says_so() -> None:
    w = make_workload([0.0, 10.0, 20.0, 30.0], run=[5.0] * 4, procs=[1] * 4, max_procs=2)
    w = replace(w, executable=np.array([7, -1, 7, 9]))
    # A public trace's executable ids are data, not what the replayed policies know, unless asked.
    assert not w.programs_known
    np.testing.assert_array_equal(w.known_executables, [-1, -1, -1, -1])
    later = w.window(2, 4)
    assert later.past is not None
    np.testing.assert_array_equal(later.past.executables, [-1, -1])
    known = replace(w, programs_known=True)
    np.testing.assert_array_equal(known.known_executables, [7, -1, 7, 9])
    # Kept by a window, a jittered replay and a selection; the past carries them.
    window = known.window(2, 4)
    assert window.programs_known and window.jittered(1, 5.0).programs_known and known.select([0, 1]).programs_known
    assert window.past is not None
    np.testing.assert_array_equal(window.past.executables, [7, -1])
