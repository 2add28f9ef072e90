"""The short-job diagnostics' reusable parts: the causal facts a detector sees (benchmarks/diag_short_jobs.py) and
the simulated detector on top of a predictor (benchmarks/diag_prediction_noise.py)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from benchmarks.diag_prediction_noise import DetectedShort, detector_flags
from benchmarks.diag_short_jobs import causal_facts, causal_short, detectors
from rlsched.core.prediction import UserLastTwo
from rlsched.sim.workload import make_workload


def test_causal_facts_see_only_the_jobs_that_have_ended() -> None:
    w = make_workload(
        submit=[0, 10, 20, 40, 600, 700],
        run=[30, 500, 10, 5, 1000, 0],
        req_time=[100, 1000, 100, 100, 1000, 100],
        procs=[1, 1, 1, 1, 1, 1],
        max_procs=4,
    )
    w = replace(w, user=np.zeros(6, dtype=np.int64), recorded_wait=np.zeros(6))
    facts = causal_facts(w)
    # Job 2 is submitted before job 0 ends (at 30): nothing finished yet, whatever the submit order says.
    assert np.isnan(facts.last_runs[2]).all()
    # At 40, jobs 0 and 2 have ended (both at 30; the later row last): job 1 still runs.
    np.testing.assert_array_equal(facts.last_runs[3][:2], [10.0, 30.0])
    assert facts.since_submit[3] == 20.0 and facts.last_submit[3] == 20.0
    np.testing.assert_array_equal(facts.script_runs[3], [10.0, 30.0])
    np.testing.assert_array_equal(facts.last_runs[4], [500.0, 5.0, 10.0])
    np.testing.assert_array_equal(facts.script_runs[4][:1], [500.0])
    # A job that ends the instant it is submitted does not see itself.
    assert facts.last_runs[5][0] == 500.0
    flags = detectors(facts, w.submit, w.procs.astype(np.float64))
    assert flags["last"].tolist() == [False, False, False, True, False, False]
    assert flags["last2"].tolist() == [False, False, False, True, False, False]
    assert flags["last+same"].tolist() == [False, False, False, True, False, False]
    assert flags["req<=300"].tolist() == [True, False, True, True, False, True]


def test_detector_flags_are_nested_and_at_their_rates() -> None:
    run = np.concatenate([np.full(2000, 0.5), np.full(2000, 600.0)])
    request = np.full(4000, 3600.0)
    ids = list(range(100, 4100))

    def flags(recall: float, rate: float) -> dict[int, tuple[float, bool]]:
        return detector_flags(run, request, ids, below_s=60.0, recall=recall, false_positive_rate=rate, seed=3)

    low, high = flags(0.5, 0.01), flags(0.8, 0.05)
    assert set(low) <= set(high)
    found = [v for v in high.values() if v[1]]
    wrong = [v for v in high.values() if not v[1]]
    assert abs(len(found) / 2000 - 0.8) < 0.04 and abs(len(wrong) / 2000 - 0.05) < 0.02
    assert all(v == (1.0, True) for v in found)  # the runtime, never below 1 s
    assert all(v == (30.0, False) for v in wrong)
    assert flags(1.0, 0.0) == {i: (1.0, True) for i in ids[:2000]}


def test_detected_short_replaces_only_the_flagged_and_learns_as_the_predictor_alone() -> None:
    alone, inner = UserLastTwo(), UserLastTwo()
    wrapped = DetectedShort(inner, {2: (12.0, True), 3: (30.0, False)})
    for job, run in ((0, 500.0), (1, 700.0)):
        for p in (alone, wrapped):
            p.predict(job, 7, 0, 1, 3600.0, 0.0)
            p.finished(job, run)
    assert wrapped.predict(2, 7, 0, 1, 3600.0, 0.0) == 12.0
    assert wrapped.predict(3, 7, 0, 1, 3600.0, 0.0) == 30.0  # min(600, 30)
    assert wrapped.predict(4, 7, 0, 1, 3600.0, 0.0) == alone.predict(4, 7, 0, 1, 3600.0, 0.0) == 600.0
    assert wrapped.made == {0: 3600.0, 1: 3600.0, 2: 12.0, 3: 30.0, 4: 600.0}
    wrapped.finished(2, 20.0)
    alone.predict(2, 7, 0, 1, 3600.0, 0.0)
    alone.finished(2, 20.0)
    # The inner predictor learned the runtime, not the detector's prediction: (20 + 700) / 2.
    assert wrapped.predict(5, 7, 0, 1, 3600.0, 0.0) == alone.predict(5, 7, 0, 1, 3600.0, 0.0) == 360.0


def test_causal_short_flags_from_what_has_ended_and_learns_the_window_past() -> None:
    w = make_workload(
        submit=[0, 100, 200, 300], run=[20, 40, 5000, 30], req_time=[3600] * 4, procs=[1] * 4, max_procs=4
    )
    w = replace(w, user=np.zeros(4, dtype=np.int64), recorded_wait=np.zeros(4))
    window = w.window(2, 4)  # its past: jobs 0 and 1, both short, ended before its first submit
    inner = UserLastTwo()
    detected = causal_short(inner, window, "last2", flag_s=30.0)
    assert detected.predict(3, 0, 0, 1, 3600.0, 200.0) == 30.0  # the last two (40 s, 20 s) were short
    assert detected.predict(3, 0, 0, 1, 3600.0, 200.0) == 30.0 and detected.flagged == {3}  # made once
    assert detected.finished(3, 5000.0) is True  # the inner predictor predicted it too, and learns it
    assert detected.predict(4, 0, 0, 1, 3600.0, 300.0) == 3600.0  # 5000 s then 40 s: no flag; EASY++ ≥ request
    assert detected.flagged == {3}
    with pytest.raises(ValueError, match="unknown detector"):
        causal_short(inner, window, "nonsense", flag_s=30.0)


def test_executable_detectors_read_the_users_jobs_of_that_executable_only() -> None:
    w = make_workload(
        submit=[0, 10, 20, 100, 110, 120, 130],
        run=[5, 8, 70, 10, 10, 10, 10],
        req_time=[3600] * 7,
        procs=[1] * 7,
        max_procs=4,
    )
    user = np.array([0, 0, 0, 0, 1, 0, 0], dtype=np.int64)
    # Executable 5 ran short twice, then 6 long (ending at 90); user 1's executable 5 is another user's script.
    executable = np.array([5, 5, 6, 5, 5, 6, -1], dtype=np.int64)
    w = replace(w, user=user, executable=executable, recorded_wait=np.zeros(7))
    facts = causal_facts(w)
    np.testing.assert_array_equal(facts.exe_runs[3], [8.0, 5.0])
    assert np.isnan(facts.exe_runs[4]).all()  # user 1 has run nothing of it
    assert facts.exe_runs[5][0] == 70.0 and np.isnan(facts.exe_runs[5][1])
    assert np.isnan(facts.exe_runs[6]).all()  # unknown executable: nothing to read
    flags = detectors(facts, w.submit, w.procs.astype(np.float64))
    assert flags["exe"].tolist() == [False, True, False, True, False, False, False]
    assert flags["exe2"].tolist() == [False, False, False, True, False, False, False]
    # The user's last finished job was executable 6's long one: "last" does not flag what "exe" does.
    assert not flags["last"][3]


def test_causal_short_knows_the_executables_of_the_window_and_its_past_by_the_replays_ids() -> None:
    w = make_workload(
        submit=[0, 100, 200, 300], run=[20, 40, 5000, 30], req_time=[3600] * 4, procs=[1] * 4, max_procs=4
    )
    w = replace(w, user=np.zeros(4, dtype=np.int64), executable=np.array([5, 5, 5, 6]), recorded_wait=np.zeros(4))
    window = w.window(2, 4)  # its past: jobs 0 and 1 (executable 5, both short)
    # The replay knows the window's jobs by the trace's job ids (boost mode), here 3 and 4.
    detected = causal_short(UserLastTwo(), window, "exe2", flag_s=30.0, ids=[3, 4], past_executable=w.executable[:2])
    assert detected.predict(3, 0, 0, 1, 3600.0, 200.0) == 30.0  # executable 5: its last two were short
    assert detected.predict(4, 0, 0, 1, 3600.0, 300.0) == 3600.0  # executable 6: never run
    # Without the past's executables the past teaches nothing of executable 5.
    blind = causal_short(UserLastTwo(), window, "exe2", flag_s=30.0, ids=[3, 4])
    assert blind.predict(3, 0, 0, 1, 3600.0, 200.0) == 3600.0
