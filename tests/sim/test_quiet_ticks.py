"""Boost mode's jumps over quiet ticks (``engine.JUMP_QUIET_TICKS``) give the schedule of stepping tick by tick.

After a poll skipped or deferred because nothing happened, the engine jumps to the first tick at or after the
next submit, finish or priority pass (:meth:`rlsched.sim.engine.Simulator._quiet_ticks`).  Each case replays a
workload both ways and asks for the same starts and ends, the same polls at the same instants (the deferred
poll is the last quiet tick's, with the view of that instant), and fewer scheduling passes (the jumps happen).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np
import pytest

from rlsched.core.agents import FixedRankAgent
from rlsched.core.view import ClusterView, IntArray
from rlsched.sim import engine
from rlsched.sim.boost import BoostSettings
from rlsched.sim.engine import Overrun, Simulator
from rlsched.sim.policies import PolicyRun, simulate_policy
from rlsched.sim.workload import Workload, make_workload


class ClockAgent(FixedRankAgent):
    """Boost mode: a ranking that changes with the poll's instant (a shuffle keyed on the tick number), so a
    deferred poll made with any other instant than its own ranks differently; records the polls' instants."""

    def __init__(self, poll_s: float) -> None:
        super().__init__("boost")
        self.poll_s = poll_s
        self.calls: list[float] = []

    def rank(self, view: ClusterView) -> IntArray:
        self.calls.append(view.time_s)
        tick = int(view.time_s // self.poll_s)
        keys = (view.pending.job_id * 7919 + tick * 104_729) % 1009
        return np.argsort(keys, kind="stable").astype(np.int64)


def workload(seed: int, n: int = 400) -> Workload:
    """Jobs of 1–8 cores on 16; requests are often shorter than the runtime (kills, or overruns with
    ``overrun="run"``), so running jobs can be past their expected end."""
    rng = np.random.default_rng(seed)
    w = make_workload(
        submit=np.cumsum(rng.exponential(120.0, n)).round(),
        run=rng.exponential(900.0, n).round() + 1,
        procs=rng.integers(1, 9, n),
        req_time=rng.exponential(900.0, n).round() + 60,
        max_procs=16,
    )
    return replace(w, user=rng.integers(0, 6, n))


def both_ways(
    monkeypatch: pytest.MonkeyPatch, replay: Callable[[], tuple[PolicyRun, list[float]]]
) -> list[tuple[PolicyRun, list[float], int]]:
    """The replay with jumps and stepping tick by tick: (run, poll instants, scheduling passes)."""
    out = []
    passes = 0
    schedule = Simulator._schedule

    def counted(sim: Simulator, now: float) -> None:
        nonlocal passes
        passes += 1
        schedule(sim, now)

    for jump in (True, False):
        monkeypatch.setattr(engine, "JUMP_QUIET_TICKS", jump)
        passes = 0
        with monkeypatch.context() as m:
            m.setattr(Simulator, "_schedule", counted)
            run, calls = replay()
        out.append((run, calls, passes))
    return out


def assert_same(runs: list[tuple[PolicyRun, list[float], int]]) -> None:
    (jumped, jumped_calls, jumped_passes), (stepped, stepped_calls, stepped_passes) = runs
    np.testing.assert_array_equal(jumped.schedule.start, stepped.schedule.start)
    np.testing.assert_array_equal(jumped.schedule.end, stepped.schedule.end)
    assert jumped_calls == stepped_calls
    assert jumped_passes < stepped_passes  # ticks were jumped over


@pytest.mark.parametrize("base", ["fifo", "multifactor:calc_period_s=95"])
@pytest.mark.parametrize("overrun", ["kill", "run"])
def test_jumping_quiet_ticks_keeps_deferred_polls_and_schedule(
    monkeypatch: pytest.MonkeyPatch, base: str, overrun: Overrun
) -> None:
    # The agent ranks by the instant: its quiet polls are deferred, and the one made before an event must be
    # the last tick's, as when stepping.  Multifactor passes (every 95 s, off the 10 s grid) stop the jumps too.
    w = workload(3)

    def replay() -> tuple[PolicyRun, list[float]]:
        agent = ClockAgent(10.0)
        settings = BoostSettings(poll_interval_s=10.0, max_boosted=4, base=base)
        run = simulate_policy(w, "fcfs", mode="boost", agent=agent, boost=settings, overrun=overrun)
        return run, agent.calls

    runs = both_ways(monkeypatch, replay)
    assert_same(runs)
    assert not np.array_equal(runs[0][0].schedule.start, simulate_policy(w, "easy", overrun=overrun).schedule.start)


@pytest.mark.parametrize("policy", ["wfp3", "unicep", "easy-sjf", "saf:runtime_model=learned", "sarsa-esn"])
@pytest.mark.parametrize("base", ["fifo", "multifactor"])
def test_jumping_quiet_ticks_changes_no_policys_schedule(
    monkeypatch: pytest.MonkeyPatch, policy: str, base: str
) -> None:
    # Rules that read the wait (deferred polls), rank by the queue alone (skipped polls), and a learner: the
    # jumps make the same polls, so even its exploration and learning see the same.
    w = workload(7, 300)
    spec = f"{policy}:pretrain_decisions=50" if policy == "sarsa-esn" else policy

    def replay() -> tuple[PolicyRun, list[float]]:
        run = simulate_policy(w, spec, mode="boost", boost=BoostSettings(poll_interval_s=10.0, base=base))
        return run, []

    assert_same(both_ways(monkeypatch, replay))


def test_a_tick_at_a_pass_instant_is_not_jumped_over(monkeypatch: pytest.MonkeyPatch) -> None:
    # Ticks every 7 s from 0 and multifactor passes every 35 s: every fifth tick is a pass instant, where
    # the jump must stop (the pass re-sorts the queue before that tick's scheduling pass).
    w = workload(5, 200)
    w = replace(w, submit=w.submit - w.submit[0])

    def replay() -> tuple[PolicyRun, list[float]]:
        agent = ClockAgent(7.0)
        settings = BoostSettings(poll_interval_s=7.0, max_boosted=3, base="multifactor:calc_period_s=35")
        return simulate_policy(w, "fcfs", mode="boost", agent=agent, boost=settings), agent.calls

    assert_same(both_ways(monkeypatch, replay))


def test_a_job_past_its_expected_end_stops_the_jumps(monkeypatch: pytest.MonkeyPatch) -> None:
    # 4 cores, overrunning jobs run on.  J1 and J2 (1 core, expected to end at 100 and 200) run until 1000.  The
    # head J3 (3 cores) needs J1's core: its shadow time is max(100, now), and J2's core counts as extra only
    # from 200 on, when J4 (1 core, a long request) can be backfilled on it.  SJF ranks by the queue alone,
    # so its quiet polls are skipped; a jump from 20 to the next finish (1000) would start J4 there.
    w = make_workload(
        submit=[0, 0, 1, 2],
        run=[1000, 1000, 100, 5000],
        req_time=[100, 200, 100, 5000],
        procs=[1, 1, 3, 1],
        max_procs=4,
    )

    def replay() -> tuple[PolicyRun, list[float]]:
        return simulate_policy(w, "easy-sjf", mode="boost", overrun="run", boost=BoostSettings(10.0)), []

    runs = both_ways(monkeypatch, replay)
    assert runs[1][0].schedule.start.tolist() == [0.0, 0.0, 1000.0, 200.0]
    assert_same(runs)


def test_views_between_events_share_read_only_jobs() -> None:
    # The polls a boost replay makes between events see the same rows: the simulator hands out the previous
    # view's pending and running jobs, whose arrays no agent may write.
    w = make_workload(submit=[0, 0, 0], run=[100] * 3, procs=[2, 2, 1], max_procs=3)
    sim = Simulator(w, agent=ClockAgent(10.0), tick_s=10.0, every_event=False)
    sim._admit(0, 0.0)
    sim._next_submit = 3
    first, second = sim.view(), sim.view()
    assert second.pending is first.pending and second.running is first.running
    assert first.pending.job_id.tolist() == [1, 2, 3]
    with pytest.raises(ValueError, match="read-only"):
        first.pending.submit_s[0] = 5.0
    sim._schedule(0.0)  # J1 starts, J2 waits, J3 is backfilled: new rows, new jobs
    third = sim.view()
    assert third.pending is not first.pending and third.pending.job_id.tolist() == [2]
    assert third.running.job_id.tolist() == [1, 3]
