"""Every shared trace loads and replays under every scheduler; EASY's reservation holds on real logs."""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest

from rlsched.sim.engine import Simulator
from rlsched.sim.policies import simulate_policy
from rlsched.sim.schedulers import with_recorded_waits
from rlsched.sim.summary import summarize
from rlsched.sim.traces.swf import read_swf
from rlsched.sim.workload import Workload
from tests.conftest import TRACE_FILES, shared_trace
from tests.sim.test_engine import check_invariants


@cache
def load(short: str) -> Workload:
    return read_swf(shared_trace(short))


#: The former ``--scheduler`` names as registry policies (rlsched.sim.schedulers.legacy_scheduler).
LEGACY_POLICIES = ("fcfs", "easy", "sjf", "edf:runtime_model=requested", "native")


@pytest.mark.parametrize("short", sorted(TRACE_FILES))
@pytest.mark.parametrize("policy", LEGACY_POLICIES)
def test_trace_replays(short: str, policy: str) -> None:
    w = load(short)
    if policy == "native":
        w = with_recorded_waits(w)
    s = simulate_policy(w, policy).schedule
    m = summarize(s, trim=500)
    assert m["jobs"] == len(w) - 1000
    assert 0.0 < m["utilization"] <= 1.0 + 1e-9
    assert 0.0 < m["mean_responsiveness"] <= 1.0
    if policy != "native":
        check_invariants(s)  # the recorded schedule of a real machine need not fit our rigid pool model


@pytest.mark.parametrize("short", ["kth", "ctc", "sdsc"])
def test_easy_reservation_never_delayed_on_trace(short: str) -> None:
    sim = Simulator(load(short), backfill=True)
    sim.reservation_log = []
    s = sim.run()
    rows = np.array([r for r, _ in sim.reservation_log])
    shadows = np.array([t for _, t in sim.reservation_log])
    assert len(rows) > 1000
    late = s.start[rows] > shadows + 1e-6
    assert not late.any(), f"{int(late.sum())} head jobs started after their reservation"


def test_overrun_policy_changes_sdsc_results_several_fold() -> None:
    # DESIGN/issue: 10,658 SDSC-DS jobs ran past their request; letting them run breaks EASY's estimates.
    w = load("sdsc")
    assert int((w.run > w.req_time).sum()) == 10658
    kill = summarize(simulate_policy(w, "easy", overrun="kill").schedule)
    run = summarize(simulate_policy(w, "easy", overrun="run").schedule)
    assert run["mean_wait_s"] > 3 * kill["mean_wait_s"]


def test_ctc_overruns_counted() -> None:
    w = load("ctc")
    s = simulate_policy(w, "easy").schedule
    # the 7,174 overruns of the issue; the 6 jobs without a request got req = run and cannot overrun
    assert s.killed_at_limit == int((w.run > w.req_time).sum()) == 7174
