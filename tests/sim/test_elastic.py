"""The elastic pool: P-grid §4.1 constraints enforced by the simulator, pool history, utilization U."""

from __future__ import annotations

import numpy as np
import pytest

from rlsched.core.agents import ElasticSchedulingAgent, FCFSAgent
from rlsched.core.approximators import EchoStateQ
from rlsched.core.features import FeatureConfig, FeatureEncoder
from rlsched.core.learners import SarsaLearner
from rlsched.core.runtime import OracleRuntime
from rlsched.core.view import ClusterView, Decisions
from rlsched.sim.elastic import ElasticSimulator, PoolHistory, pool_utilization
from rlsched.sim.engine import Schedule
from rlsched.sim.workload import Workload, make_workload
from rlsched.sim.workloads.lal import generate_lal


class ScriptedPool:
    """FCFS gate-mode releases, and at the first view at or after each scripted time, a pool request."""

    def __init__(self, requests: list[tuple[float, int]]) -> None:
        self.requests = list(requests)
        self.fcfs = FCFSAgent(mode="boost")

    def decide(self, view: ClusterView) -> Decisions:
        cap = None
        if self.requests and view.time_s >= self.requests[0][0]:
            cap = self.requests.pop(0)[1]
        order = self.fcfs.decide(view).boost
        return Decisions(boost=order, lease_cap=cap)


def serial_jobs(n: int, run_s: float, gap_s: float = 0.0) -> Workload:
    return make_workload(submit=np.arange(n) * gap_s, run=np.full(n, run_s), procs=np.ones(n, dtype=int), max_procs=200)


def check_pool_never_exceeded(schedule: Schedule, history: PoolHistory) -> None:
    """At every start and every pool change, the running cores fit in the pool at that instant."""
    start, end, procs = schedule.start, schedule.end, schedule.workload.procs
    for t in np.concatenate([start, history.time_s]):
        running = int(procs[(start <= t) & (end > t)].sum())
        assert running <= int(history.cores_at(t)), f"{running} cores run in a pool of {history.cores_at(t)} at {t}"


def test_growing_the_pool_starts_queued_jobs_and_hold_refuses_early_changes() -> None:
    w = serial_jobs(100, 3600.0)
    agent = ScriptedPool([(0.0, 60), (900.0, 80), (1000.0, 30)])
    sim = ElasticSimulator(w, 40, max_cores=100, agent=agent, tick_s=100.0)
    s = sim.run()
    hist = sim.pool_history
    # t=0: refused (the initial size is held 15 minutes); t=900: grows to 80; t=1000: refused (held).
    assert sim.refused_requests == 2
    assert hist.time_s.tolist() == [0.0, 900.0] and hist.cores.tolist() == [40, 80]
    assert int((s.start == 0.0).sum()) == 40 and int((s.start == 900.0).sum()) == 40
    assert s.cores == 80
    check_pool_never_exceeded(s, hist)


def test_shrinking_is_floored_by_running_jobs_and_min_cores_and_capped_by_max() -> None:
    w = make_workload(submit=[0.0] * 50 + [7000.0], run=[5000.0] * 51, procs=[1] * 51, max_procs=200)
    # t=900: ask 10 with 50 running -> 50 (running floor); t=5000 all have ended -> ask 10 -> 30 (min floor);
    # t=6000: ask 500 -> 100 (max).
    agent = ScriptedPool([(900.0, 10), (5000.0, 10), (6000.0, 500)])
    sim = ElasticSimulator(w, 60, max_cores=100, agent=agent, tick_s=100.0)
    s = sim.run()
    assert sim.pool_history.cores.tolist() == [60, 50, 30, 100]
    assert sim.clamped_requests == 3 and sim.refused_requests == 0
    np.testing.assert_array_equal(s.start[:50], 0.0)  # no preemption: nothing restarted
    check_pool_never_exceeded(s, sim.pool_history)


def test_pool_history_core_seconds_and_utilization_by_hand() -> None:
    hist = PoolHistory(np.array([0.0, 100.0, 300.0]), np.array([10, 40, 20]))
    assert hist.core_seconds(0.0, 400.0) == pytest.approx(10 * 100 + 40 * 200 + 20 * 100)
    assert hist.core_seconds(50.0, 150.0) == pytest.approx(10 * 50 + 40 * 50)
    assert hist.cores_at(np.array([-5.0, 0.0, 99.9, 100.0, 1e9])).tolist() == [10, 10, 10, 40, 20]
    assert hist.mean_cores(0.0, 400.0) == pytest.approx(11_000 / 400)
    # 30 serial jobs of 1000 s from t=0 on a fixed pool of 30 cores: U = 1.
    w = serial_jobs(30, 1000.0)
    sim = ElasticSimulator(w, 30, max_cores=60, agent=ScriptedPool([]), tick_s=100.0)
    s = sim.run()
    assert pool_utilization(s, sim.pool_history) == pytest.approx(1.0)


def test_invalid_configuration_is_refused() -> None:
    w = serial_jobs(5, 10.0)
    with pytest.raises(ValueError, match="initial_cores"):
        ElasticSimulator(w, 20, max_cores=100, agent=ScriptedPool([]))
    with pytest.raises(ValueError, match="max_cores"):
        ElasticSimulator(w, 30, max_cores=20, agent=ScriptedPool([]))


def test_elastic_agent_on_a_small_lal_respects_every_constraint() -> None:
    w = generate_lal(3, scale=0.03)
    enc = FeatureEncoder(FeatureConfig(n_vos=len(w.vo_names)))
    q = EchoStateQ(enc.state_dim, enc.action_dim + 1, seed=0)
    start = float(w.submit[0])
    agent = ElasticSchedulingAgent(
        SarsaLearner(q, seed=0),
        enc,
        OracleRuntime(),
        pool_options=range(30, 121, 10),
        initial_cores=81,
        start_s=start,
        min_cores=30,
        hold_s=900.0,
        lam=0.5,
        pretrain_decisions=50,
    )
    sim = ElasticSimulator(w, 81, max_cores=120, agent=agent, hold_on_submit=True, tick_s=900.0)
    s = sim.run()
    assert np.isfinite(s.start).all()
    hist = sim.pool_history
    assert sim.refused_requests == 0  # the agent's hold clock and the simulator's agree
    assert hist.cores.min() >= 30 and hist.cores.max() <= 120
    assert np.all(np.diff(hist.time_s) >= 900.0)
    assert hist.time_s.size > 1  # the learned policy did resize the pool
    check_pool_never_exceeded(s, hist)
    assert 0.0 < pool_utilization(s, hist) <= 1.0
