"""The simulator's native scheduler: FCFS and EASY on hand-worked workloads, invariants, the agent seam."""

from __future__ import annotations

import numpy as np
import pytest

from rlsched.core.view import ClusterView, Decisions
from rlsched.sim.engine import Schedule, SimulationError, Simulator, effective_runtimes
from rlsched.sim.policies import simulate_policy
from rlsched.sim.workload import Workload, make_workload


def starts(schedule: Schedule) -> dict[int, float]:
    return dict(zip(schedule.workload.job_id.tolist(), schedule.start.tolist(), strict=True))


@pytest.fixture
def five_jobs() -> Workload:
    # 10 cores.  J1 holds 6 until t=10; J2 (8 cores) must wait for it: shadow 10, extra 10-8 = 2.
    # J3 (2 cores, long) fits the 2 extra cores -> backfilled.  J4 (2 cores, long) would need cores the
    # head needs at t=10 -> refused.  J5 (2 cores, 6 s) ends exactly at the shadow time -> backfilled.
    return make_workload(submit=[0, 1, 2, 3, 4], run=[10, 5, 100, 100, 6], procs=[6, 8, 2, 2, 2], max_procs=10)


def test_easy_hand_worked(five_jobs: Workload) -> None:
    s = Simulator(five_jobs, backfill=True).run()
    assert starts(s) == {1: 0.0, 2: 10.0, 3: 2.0, 4: 15.0, 5: 4.0}


def test_fcfs_hand_worked(five_jobs: Workload) -> None:
    s = Simulator(five_jobs, backfill=False).run()
    assert starts(s) == {1: 0.0, 2: 10.0, 3: 10.0, 4: 15.0, 5: 15.0}


def test_easy_uses_requested_not_actual_time() -> None:
    # J3 would end (actual 3 s) before the shadow time, but it asked for 20 s: EASY must refuse it.
    w = make_workload(submit=[0, 1, 2], run=[10, 5, 3], req_time=[10, 5, 20], procs=[6, 8, 4], max_procs=10)
    assert starts(Simulator(w).run()) == {1: 0.0, 2: 10.0, 3: 15.0}


def test_easy_reservation_recomputed_when_job_ends_early() -> None:
    # J1 asked 100 s but ends at 10.  At t=2 the head J2's shadow is 100, so J3 (req 50) is backfilled.
    # At t=10 the shadow is recomputed from J3's expected end (52), and J2 starts then, not at 100.
    w = make_workload(submit=[0, 1, 2], run=[10, 5, 50], req_time=[100, 5, 50], procs=[6, 8, 4], max_procs=10)
    s = starts(Simulator(w).run())
    assert s == {1: 0.0, 2: 52.0, 3: 2.0}


def test_extra_counts_every_job_ending_at_shadow_time() -> None:
    # 10 cores; J1 and J2 (3 cores each) both end at t=10.  Head J3 needs 6: 4 idle + J1's 3 suffice, but J2
    # frees its 3 at the same instant, so extra = 4 + 3 + 3 - 6 = 4 and J4 (4 cores, long) is backfilled
    # at t=2.  A walk that stops as soon as the head fits would find extra = 1 and refuse J4.
    w = make_workload(submit=[0, 0, 1, 2], run=[10, 10, 5, 100], procs=[3, 3, 6, 4], max_procs=10)
    assert starts(Simulator(w).run()) == {1: 0.0, 2: 0.0, 3: 10.0, 4: 2.0}


def test_ties_keep_trace_order() -> None:
    w = make_workload(submit=[0, 0, 0], run=[5, 5, 5], procs=[4, 4, 2], max_procs=4)
    assert starts(Simulator(w, backfill=False).run()) == {1: 0.0, 2: 5.0, 3: 10.0}
    # with EASY, J3 (2 cores) cannot backfill: no idle core at t=0, and at t=5 J2 takes all 4.
    assert starts(Simulator(w, backfill=True).run()) == {1: 0.0, 2: 5.0, 3: 10.0}


def test_sjf_orders_by_requested_time() -> None:
    w = make_workload(submit=[0, 1, 1, 1], run=[10, 30, 20, 10], procs=[4, 4, 4, 4], max_procs=4)
    s = starts(simulate_policy(w, "sjf").schedule)
    assert s == {1: 0.0, 4: 10.0, 3: 20.0, 2: 40.0}


def test_edf_orders_by_the_deadline_of_the_registry() -> None:
    w = make_workload(submit=[0, 1, 2, 3], run=[10, 30, 5, 20], procs=[4, 4, 4, 4], max_procs=4)
    # W target ½: deadline submit + request (the former --scheduler edf): J2 1+30=31, J3 2+5=7, J4 3+20=23
    half = simulate_policy(w, "edf:runtime_model=requested,w_target=0.5").schedule
    assert starts(half) == {1: 0.0, 3: 10.0, 4: 15.0, 2: 35.0}
    # The default W target 0.9: deadline submit + request/9: J2 4.33, J3 2.56, J4 5.22
    assert starts(simulate_policy(w, "edf:runtime_model=requested").schedule) == {1: 0.0, 3: 10.0, 2: 15.0, 4: 45.0}


def test_kill_at_limit_default_and_run_option() -> None:
    w = make_workload(submit=[0], run=[100], req_time=[60], procs=[1], max_procs=1)
    run_kill, killed = effective_runtimes(w, "kill")
    assert run_kill.tolist() == [60.0] and killed == 1
    assert Simulator(w).run().end.tolist() == [60.0]
    assert Simulator(w, overrun="run").run().end.tolist() == [100.0]


def test_job_wider_than_pool_is_an_error() -> None:
    w = make_workload(submit=[0], run=[1], procs=[8], max_procs=8)
    with pytest.raises(ValueError, match="8 cores"):
        Simulator(w, cores=4)


def check_invariants(schedule: Schedule) -> None:
    w = schedule.workload
    assert np.all(schedule.start >= w.submit)
    # cores in use never exceed the pool: sweep start (+) and end (-) events, ends first at equal times
    times = np.concatenate([schedule.start, schedule.end])
    delta = np.concatenate([w.procs, -w.procs])
    order = np.lexsort((delta, times))
    assert np.cumsum(delta[order]).max() <= schedule.cores


def random_workload(seed: int, n: int = 400, cores: int = 32) -> Workload:
    rng = np.random.default_rng(seed)
    submit = np.cumsum(rng.exponential(30.0, n))
    run = rng.exponential(400.0, n).round()
    req = (run * rng.uniform(1.0, 3.0, n)).round() + 1
    procs = rng.integers(1, cores + 1, n) // rng.integers(1, 5, n) + 1
    return make_workload(submit=submit, run=run, req_time=req, procs=np.minimum(procs, cores), max_procs=cores)


@pytest.mark.parametrize("seed", range(5))
def test_easy_reservation_never_delayed_random(seed: int) -> None:
    w = random_workload(seed)
    sim = Simulator(w, backfill=True)
    sim.reservation_log = []
    s = sim.run()
    check_invariants(s)
    assert sim.reservation_log, "the workload should make EASY reserve"
    for row, shadow in sim.reservation_log:
        assert s.start[row] <= shadow + 1e-9, f"job row {row} started {s.start[row]} after reservation {shadow}"


@pytest.mark.parametrize("seed", range(3))
def test_easy_beats_fcfs_on_wait(seed: int) -> None:
    w = random_workload(seed)
    fcfs = simulate_policy(w, "fcfs").schedule
    easy = simulate_policy(w, "easy").schedule
    check_invariants(fcfs)
    assert easy.wait.mean() < fcfs.wait.mean()


class LifoGate:
    """Gate-mode agent: releases held jobs newest first while they fit."""

    def __init__(self) -> None:
        self.views = 0
        self.finished_seen: list[int] = []

    def decide(self, view: ClusterView) -> Decisions:
        self.views += 1
        self.finished_seen += view.finished.job_id.tolist()
        held = view.pending.held
        ids = view.pending.job_id[held][::-1]
        cores = view.pending.cores[held][::-1]
        free = view.idle_cores - int(view.pending.cores[~held].sum())
        chosen = []
        for job_id, c in zip(ids.tolist(), cores.tolist(), strict=True):
            if c <= free:
                chosen.append(job_id)
                free -= c
        return Decisions(release=tuple(chosen))


def test_gate_mode_agent_controls_order() -> None:
    w = make_workload(submit=[0, 1, 2, 3], run=[10, 10, 10, 10], procs=[1, 1, 1, 1], max_procs=1)
    agent = LifoGate()
    s = Simulator(w, agent=agent, hold_on_submit=True).run()
    # J1 runs 0-10; at t=10 the newest held job (J4) goes first, then J3, then J2.
    assert starts(s) == {1: 0.0, 4: 10.0, 3: 20.0, 2: 30.0}
    assert sorted(agent.finished_seen) == [1, 2, 3, 4]


class NeverRelease:
    def decide(self, view: ClusterView) -> Decisions:
        return Decisions()


def test_jobs_held_forever_are_an_error() -> None:
    w = make_workload(submit=[0], run=[1], procs=[1], max_procs=1)
    with pytest.raises(SimulationError, match="held"):
        Simulator(w, agent=NeverRelease(), hold_on_submit=True).run()


class BoostLast:
    """Boost mode: always put the newest pending job first."""

    def decide(self, view: ClusterView) -> Decisions:
        newest_first = np.argsort(-view.pending.submit_s, kind="stable")
        return Decisions(boost=tuple(view.pending.job_id[newest_first].tolist()))


def test_boost_reorders_native_queue() -> None:
    w = make_workload(submit=[0, 1, 2, 3], run=[10, 10, 10, 10], procs=[1, 1, 1, 1], max_procs=1)
    s = Simulator(w, agent=BoostLast(), backfill=False).run()
    assert starts(s) == {1: 0.0, 4: 10.0, 3: 20.0, 2: 30.0}


def test_view_reports_state() -> None:
    w = make_workload(submit=[0, 0, 0], run=[10, 10, 10], procs=[2, 2, 2], max_procs=4)
    seen: list[ClusterView] = []

    class Spy:
        def decide(self, view: ClusterView) -> Decisions:
            seen.append(view)
            return Decisions()

    Simulator(w, agent=Spy()).run()
    first = seen[0]  # called before the native pass at t=0
    assert first.time_s == 0.0 and first.idle_cores == 4 and len(first.pending) == 3 and len(first.running) == 0
    second = seen[1]  # t=10: J1 and J2 finished
    assert second.finished.job_id.tolist() == [1, 2]
    assert second.finished.wait_s.tolist() == [0.0, 0.0] and second.finished.run_s.tolist() == [10.0, 10.0]
    assert second.pending.job_id.tolist() == [3]


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("overrun", ["kill", "run"])
def test_engine_matches_textbook_easy(seed: int, overrun: str) -> None:
    from rlsched.sim.reference_easy import textbook_easy

    rng = np.random.default_rng(100 + seed)
    w = random_workload(seed, n=300)
    # Make some jobs overrun their request, and some requests tie, to exercise both rules.
    over = rng.random(len(w)) < 0.2
    w = make_workload(
        submit=w.submit,
        run=np.where(over, w.req_time * 1.5, w.run),
        req_time=np.round(w.req_time / 100) * 100 + 100,
        procs=w.procs,
        max_procs=w.max_procs,
    )
    runtimes, _ = effective_runtimes(w, overrun)  # type: ignore[arg-type]
    engine = Simulator(w, overrun=overrun).run()  # type: ignore[arg-type]
    assert engine.start.tolist() == textbook_easy(w, w.max_procs, runtimes).tolist()


def test_vectorised_scan_matches_plain_scan(monkeypatch: pytest.MonkeyPatch) -> None:
    import rlsched.sim.engine as engine

    # A queue far longer than the threshold: heavy load on few cores.
    rng = np.random.default_rng(7)
    n = 1500
    w = make_workload(
        submit=np.sort(rng.uniform(0, 2e4, n)),
        run=rng.exponential(300, n).round() + 1,
        procs=rng.integers(1, 9, n),
        max_procs=16,
    )
    for policy in ("easy", "easy-sjf"):
        fast = simulate_policy(w, policy).schedule
        monkeypatch.setattr(engine, "VECTOR_SCAN_MIN_QUEUE", 10**9)
        plain = simulate_policy(w, policy).schedule
        monkeypatch.undo()
        assert fast.start.tolist() == plain.start.tolist()


def test_simulator_views_pass_the_backend_checker() -> None:
    from rlsched.core.checker import check_backend, check_view

    w = random_workload(11, n=200, cores=16)
    views: list[list[str]] = []

    class Checking:
        def decide(self, view: ClusterView) -> Decisions:
            views.append(check_view(view))
            return Decisions()

    agent = Checking()
    sim = Simulator(w, agent=agent)
    check_backend(sim)
    sim.run()
    assert len(views) > 200 and all(p == [] for p in views)


def test_checker_finds_problems() -> None:
    from rlsched.core.checker import check_view
    from rlsched.core.view import FinishedJobs, PendingJobs, RunningJobs

    one = np.array([1]), np.array([0.0])
    view = ClusterView(
        time_s=5.0,
        total_cores=4,
        idle_cores=3,
        pending=PendingJobs(
            job_id=one[0],
            vo=np.array([0]),
            job_class=np.array([0]),
            cores=np.array([1]),
            req_time_s=np.array([10.0]),
            submit_s=np.array([9.0]),
            oracle_run_s=np.array([1.0]),
            held=np.array([False]),
        ),
        running=RunningJobs(
            job_id=one[0],
            vo=np.array([0]),
            job_class=np.array([0]),
            cores=np.array([2]),
            req_time_s=np.array([10.0]),
            submit_s=one[1],
            start_s=np.array([7.0]),
        ),
        finished=FinishedJobs(),
        vos=("a",),
    )
    problems = " | ".join(check_view(view))
    for expected in (
        "both pending and running",
        "hold 2 cores and 3 are idle",
        "start in the future",
        "submitted in the future",
    ):
        assert expected in problems
