"""The field's rules in the simulator (rlsched.sim.rules): the replay's order is the live agent's order."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from rlsched.core.agents import Mode
from rlsched.core.policies import BuildContext, build_agent, parse_policy
from rlsched.core.policies.registry import RuleSetup, rule_setup
from rlsched.core.prediction import OnlineRegression, UserLastTwo
from rlsched.core.runtime import PredictedRuntime
from rlsched.core.view import ClusterView, FinishedJobs, FloatArray, IntArray, PendingJobs, RunningJobs
from rlsched.sim.engine import Overrun, Simulator
from rlsched.sim.policies import simulate_policy
from rlsched.sim.rules import RulePriority, warmed_predictor
from rlsched.sim.workload import Workload, make_workload


def _busy_workload(seed: int, n: int = 160) -> Workload:
    """A queue that builds up on 16 cores, six users with their own runtime/request ratios."""
    rng = np.random.default_rng(seed)
    req = rng.choice([300.0, 1200.0, 3600.0, 7200.0], n)
    user = rng.integers(0, 6, n)
    ratio = np.array([0.05, 0.2, 0.5, 0.9, 1.0, 0.1])[user]
    run = np.maximum(np.minimum(req, req * ratio * rng.lognormal(0, 0.2, n)), 1.0)
    w = make_workload(
        submit=np.sort(rng.uniform(0, 40_000, n)).round(),
        run=run.round(),
        req_time=req,
        procs=rng.choice([1, 2, 4, 8, 16], n),
        max_procs=16,
    )
    return replace(w, user=user.astype(np.int64))


class Recording(RulePriority):
    """A rule priority that writes down what the engine told it and what it answered."""

    def __init__(self, workload: Workload, setup: RuleSetup, overrun: Overrun) -> None:
        super().__init__(workload, setup, overrun)
        self.log: list[tuple[str, Any, float, Any]] = []

    def submit_priority(self, row: int, now: float) -> float:
        p = super().submit_priority(row, now)
        self.log.append(("submit", row, now, p))
        return p

    def priorities(self, rows: IntArray, now: float) -> FloatArray:
        p = super().priorities(rows, now)
        self.log.append(("pass", rows.copy(), now, p.copy()))
        return p

    def started(self, row: int, now: float) -> None:
        super().started(row, now)
        self.log.append(("start", row, now, None))

    def ended(self, row: int, now: float) -> None:
        super().ended(row, now)
        self.log.append(("end", row, now, None))


def _view(
    w: Workload, now: float, pending: list[int], running: dict[int, float], finished: list[tuple[int, float, float]]
) -> ClusterView:
    rows = np.array(pending, dtype=np.int64)
    pend = PendingJobs(
        job_id=w.job_id[rows],
        vo=w.vo[rows],
        job_class=w.job_class[rows],
        cores=w.procs[rows],
        req_time_s=w.req_time[rows],
        submit_s=w.submit[rows],
        oracle_run_s=np.full(len(rows), np.nan),
        held=np.zeros(len(rows), dtype=bool),
        user=w.user[rows],
    )
    rrows = np.array(list(running), dtype=np.int64)
    run = RunningJobs(
        job_id=w.job_id[rrows],
        vo=w.vo[rrows],
        job_class=w.job_class[rrows],
        cores=w.procs[rrows],
        req_time_s=w.req_time[rrows],
        submit_s=w.submit[rrows],
        start_s=np.array(list(running.values()), dtype=np.float64),
        user=w.user[rrows],
    )
    frows = np.array([f[0] for f in finished], dtype=np.int64)
    done = FinishedJobs(
        job_id=w.job_id[frows],
        vo=w.vo[frows],
        job_class=w.job_class[frows],
        cores=w.procs[frows],
        submit_s=w.submit[frows],
        start_s=np.array([f[1] for f in finished], dtype=np.float64),
        end_s=np.array([f[2] for f in finished], dtype=np.float64),
    )
    return ClusterView(time_s=now, total_cores=w.max_procs, idle_cores=0, pending=pend, running=run, finished=done)


@pytest.mark.parametrize("mode", ["gate", "boost"])
def test_an_agent_that_has_learned_goes_on_with_its_own_predictor(mode: Mode) -> None:
    # A trained or restored agent is not warmed from the window's past: what it learned is what is judged.  This
    # one was restored from an untaught predictor, so on the window of the scene above it orders as cold.
    window = _short_history_scene().window(3, 6)
    spec = "sjf:runtime_model=user-last2"
    agent = build_agent(parse_policy(spec), BuildContext(mode=mode))
    runtime = agent.runtime  # type: ignore[attr-defined]
    assert isinstance(runtime, PredictedRuntime) and runtime.fresh
    runtime.restore(UserLastTwo().state())
    restored = runtime.predictor
    run = simulate_policy(window, spec, mode=mode, agent=agent).schedule
    assert runtime.predictor is restored
    assert run.start[2] < run.start[1]  # user 8 first: user 7's short past was not learned


@pytest.mark.parametrize(
    "spec",
    [
        "wfp3:pass_s=600",
        "unicep:pass_s=600",
        "sjf:runtime_model=user-last2",
        "saf:runtime_model=learned",
        "f2:runtime_model=learned,backfill=true",
        "wfp3:runtime_model=user-last2,pass_s=900",
    ],
)
def test_the_replays_queue_order_is_the_live_agents_order(spec: str) -> None:
    # Replay the engine's run event by event into the live agent, one view per event (a daemon polling at every
    # change), and compare the engine's queue order (its keys: −priority·(N+1) + row) with the agent's ranking
    # of the same queue at every re-prioritisation (WFP3, UNICEP) or every submit (the others).
    w = _busy_workload(7)
    bound = parse_policy(spec)
    setup = rule_setup(bound)
    assert setup is not None
    rec = Recording(w, setup, "kill")
    Simulator(w, dynamic=rec, backfill=bool(bound.params["backfill"])).run()
    agent = build_agent(bound, BuildContext(mode="boost", live=True))
    n = len(w)
    priority = np.zeros(n)
    pending: list[int] = []
    running: dict[int, float] = {}
    finished: list[tuple[int, float, float]] = []
    compared = 0
    for kind, what, now, answer in rec.log:
        if kind == "end":
            row = int(what)
            finished.append((row, running.pop(row), now))
            continue
        if kind == "start":
            row = int(what)
            pending.remove(row)
            running[row] = now
            continue
        if kind == "submit":
            pending.append(int(what))
            priority[int(what)] = float(answer)
        else:
            priority[what] = answer
        decisions = agent.decide(_view(w, now, pending, running, finished))
        finished = []
        if rec.reads_wait and kind == "submit":
            continue  # between passes the engine keeps the last pass's priorities; live re-ranks now
        rows = np.array(pending, dtype=np.int64)
        engine_order = rows[np.argsort(-priority[rows] * (n + 1) + rows, kind="stable")]
        assert decisions.boost == tuple(w.job_id[engine_order].tolist()), f"{spec} at t={now}"
        compared += len(rows) > 1
    assert compared > 50  # the queue did build up


def test_wfp3_reprioritises_and_differs_from_its_order_at_submit() -> None:
    w = _busy_workload(3)
    setup = rule_setup(parse_policy("wfp3"))
    assert setup is not None
    rules = RulePriority(w, setup, "kill")
    Simulator(w, dynamic=rules).run()
    assert rules.passes > 10


def _short_history_scene() -> Workload:
    """One core.  User 7 runs two 10-s jobs (asking 1000 s) while a 500-s blocker of user 9 holds the queue; then
    user 7 asks 1000 s again and user 8 asks 600 s, both behind another blocker (rows 3–5)."""
    w = make_workload(
        submit=[0, 1, 2, 30, 31, 32],
        run=[10, 10, 5, 500, 10, 600],
        req_time=[1000, 1000, 10, 1000, 1000, 600],
        procs=[1, 1, 1, 1, 1, 1],
        max_procs=1,
    )
    return replace(w, user=np.array([7, 7, 9, 9, 7, 8], dtype=np.int64))


def test_predicted_sjf_starts_the_user_with_short_history_first() -> None:
    # On the request user 8 starts first; on user-last2 user 7's job (predicted 10 s) does.  The oracle agrees.
    w = _short_history_scene()
    by_request = simulate_policy(w, "sjf").schedule
    predicted = simulate_policy(w, "sjf:runtime_model=user-last2").schedule
    oracle = simulate_policy(w, "sjf:runtime_model=oracle").schedule
    assert by_request.start[5] < by_request.start[4]
    assert predicted.start[4] < predicted.start[5]
    assert oracle.start[4] < oracle.start[5]


@pytest.mark.parametrize("mode", ["gate", "boost"])
def test_a_window_starts_from_what_its_past_taught_the_predictor(mode: Mode) -> None:
    # The scene above cut after user 7's two short jobs: the window (a blocker, then users 7 and 8) is replayed
    # with a predictor that learned its past, as a daemon running since then would have; a selection of the
    # same rows has no past, so the predictor starts cold and user 7's job is the request, 1,000 s.
    w = _short_history_scene()
    window, cold = w.window(3, 6), w.select(np.arange(3, 6))
    assert window.past is not None and len(window.past) == 3 and cold.past is None
    spec = "sjf:runtime_model=user-last2"
    warm_run = simulate_policy(window, spec, mode=mode).schedule
    cold_run = simulate_policy(cold, spec, mode=mode).schedule
    assert warm_run.start[1] < warm_run.start[2]
    assert cold_run.start[2] < cold_run.start[1]
    taught = warmed_predictor("learned", window)
    assert isinstance(taught, OnlineRegression) and taught.updates == 3
    assert isinstance(untaught := warmed_predictor("learned", cold), OnlineRegression) and untaught.updates == 0
    jittered = window.jittered(1, 0.5)
    assert jittered.past is window.past  # the same past: the window moved by chance, not its history
    moved = simulate_policy(jittered, "sjf:runtime_model=user-last2", mode=mode).schedule
    assert moved.start[1] < moved.start[2]


@pytest.mark.parametrize(
    "spec",
    [
        "saf:backfill=true",
        "f4:backfill=true",
        "smallest",
        "ljf",
        "unicep:backfill=true",
        "f1:runtime_model=user-last2",
        "easy-sjf:runtime_model=learned",
    ],
)
def test_every_rule_runs_every_job(spec: str) -> None:
    w = _busy_workload(11)
    s = simulate_policy(w, spec).schedule
    assert np.all(np.isfinite(s.start)) and np.all(s.start >= w.submit)


@pytest.mark.parametrize("model", ["user-last2", "learned"])
def test_a_learned_policy_takes_a_predicted_runtime(model: str) -> None:
    # The ESN agent's per-job runtime input comes from the same predictor, fed by the replay's views.
    w = _busy_workload(5, n=60)
    run = simulate_policy(w, f"sarsa-esn:runtime_model={model},pretrain_decisions=10")
    assert np.all(np.isfinite(run.schedule.start))
    runtime = run.agent.runtime  # type: ignore[union-attr]
    assert isinstance(runtime, PredictedRuntime) and runtime.name == model
    assert runtime.predictor.unseen_finished == 0  # every finished job had been predicted


def test_wait_rule_passes_always_move_forward() -> None:
    """From a pass instant the next pass is later, also where (now − origin)/period rounds below its integer
    (here origin 24,123.7 s: the pass at 32,823.7 s gave itself back, and a jittered replay never ended)."""
    workload = make_workload([24_123.7, 24_200.0], [60.0, 60.0], [1, 1], max_procs=1)
    setup = rule_setup(parse_policy("wfp3"))
    assert setup is not None
    passes = RulePriority(workload, setup, "kill")
    now = float(workload.submit[0])
    for _ in range(100):
        following = passes.next_pass(now)
        assert following > now
        now = following
