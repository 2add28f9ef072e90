"""Agents on hand-built views and on a tiny gate-mode cluster loop (no simulator import)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from rlsched.core.agents import (
    EDFAgent,
    ElasticSchedulingAgent,
    FCFSAgent,
    SchedulingAgent,
    edf_deadline,
    release_budget,
)
from rlsched.core.approximators import EchoStateQ, FeedForwardQ
from rlsched.core.features import FeatureConfig, FeatureEncoder
from rlsched.core.learners import FittedQLearner, SarsaLearner
from rlsched.core.runtime import EstimatedRuntime, OracleRuntime, RequestedRuntime
from rlsched.core.view import Agent, ClusterView, Decisions, FinishedJobs, JobClass, PendingJobs, RunningJobs

BAT, INT = int(JobClass.BATCH), int(JobClass.INTERACTIVE)


def pending(
    ids: list[int],
    classes: list[int],
    submit: list[float],
    run: list[float],
    held: list[bool] | None = None,
    cores: list[int] | None = None,
) -> PendingJobs:
    n = len(ids)
    return PendingJobs(
        job_id=np.array(ids),
        vo=np.array([i % 2 for i in ids]),
        job_class=np.array(classes),
        cores=np.array(cores if cores is not None else [1] * n),
        req_time_s=np.array(run, dtype=float) * 2,
        submit_s=np.array(submit, dtype=float),
        oracle_run_s=np.array(run, dtype=float),
        held=np.array(held if held is not None else [True] * n),
    )


def simple_view(pend: PendingJobs, idle: int, total: int = 4) -> ClusterView:
    busy = total - idle
    running = RunningJobs(
        job_id=np.arange(1000, 1000 + busy),
        vo=np.zeros(busy, dtype=np.int64),
        job_class=np.zeros(busy, dtype=np.int64),
        cores=np.ones(busy, dtype=np.int64),
        req_time_s=np.full(busy, 1e4),
        submit_s=np.zeros(busy),
        start_s=np.zeros(busy),
    )
    return ClusterView(
        time_s=100.0,
        total_cores=total,
        idle_cores=idle,
        pending=pend,
        running=running,
        finished=FinishedJobs(),
        vos=("a", "b"),
        vo_shares=(0.5, 0.5),
    )


def test_fcfs_and_fixed_priority() -> None:
    pend = pending([1, 2, 3, 4], [BAT, INT, BAT, INT], [10, 20, 5, 30], [5000, 100, 7000, 50])
    assert FCFSAgent().decide(simple_view(pend, idle=2)).release == (3, 1)
    assert FCFSAgent(class_first=JobClass.INTERACTIVE).decide(simple_view(pend, idle=3)).release == (2, 4, 3)
    assert FCFSAgent(mode="boost").decide(simple_view(pend, idle=0)).boost == (3, 1, 2, 4)
    assert FCFSAgent().decide(simple_view(pend, idle=0)).empty


def test_edf_deadline_and_order() -> None:
    pend = pending([1, 2, 3], [BAT, INT, INT], [0, 50, 60], [9000, 90, 900])
    # Deadline = submit + run (1/0.9 - 1) = submit + run / 9: 1000, 60, 160.
    np.testing.assert_allclose(edf_deadline(pend, pend.oracle_run_s), [1000.0, 60.0, 160.0])
    assert EDFAgent(OracleRuntime(), mode="boost").decide(simple_view(pend, 0)).boost == (2, 3, 1)


def test_release_budget_counts_released_but_not_started_jobs() -> None:
    pend = pending([1, 2, 3], [BAT, BAT, BAT], [0, 1, 2], [10, 10, 10], held=[False, True, True])
    view = simple_view(pend, idle=2)
    assert release_budget(view) == 1  # job 1 is released already and will take one of the two cores
    assert FCFSAgent().decide(view).release == (2,)


def test_multicore_jobs_fill_greedily() -> None:
    pend = pending([1, 2, 3], [BAT, BAT, BAT], [0, 1, 2], [10, 10, 10], cores=[3, 2, 1])
    assert FCFSAgent().decide(simple_view(pend, idle=3)).release == (1,)
    assert FCFSAgent().decide(simple_view(pend, idle=2)).release == (2,)  # job 1 does not fit; never idle


# -- a tiny gate-mode cluster -------------------------------------------------------------


@dataclass
class ToyCluster:
    """Serial jobs, every job held on submit, released jobs start at once (like the simulator)."""

    cores: int
    submit: np.ndarray
    run: np.ndarray
    job_class: np.ndarray
    vo: np.ndarray
    start: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        self.start = np.full(self.submit.size, np.nan)

    def replay(self, agent: Agent, max_views: int = 100_000) -> None:
        n = self.submit.size
        end = np.full(n, np.inf)
        reported = np.zeros(n, dtype=bool)
        t = float(self.submit.min())
        for _ in range(max_views):
            done = np.nonzero(~reported & (end <= t))[0]
            reported[done] = True
            running = np.nonzero(np.isfinite(self.start) & (end > t))[0]
            waiting = np.nonzero((self.submit <= t) & np.isnan(self.start))[0]
            view = ClusterView(
                time_s=t,
                total_cores=self.cores,
                idle_cores=self.cores - running.size,
                pending=PendingJobs(
                    job_id=waiting,
                    vo=self.vo[waiting],
                    job_class=self.job_class[waiting],
                    cores=np.ones(waiting.size, dtype=np.int64),
                    req_time_s=self.run[waiting] * 3,
                    submit_s=self.submit[waiting],
                    oracle_run_s=self.run[waiting],
                    held=np.ones(waiting.size, dtype=bool),
                ),
                running=RunningJobs(
                    job_id=running,
                    vo=self.vo[running],
                    job_class=self.job_class[running],
                    cores=np.ones(running.size, dtype=np.int64),
                    req_time_s=self.run[running] * 3,
                    submit_s=self.submit[running],
                    start_s=self.start[running],
                ),
                finished=FinishedJobs(
                    job_id=done,
                    vo=self.vo[done],
                    job_class=self.job_class[done],
                    cores=np.ones(done.size, dtype=np.int64),
                    submit_s=self.submit[done],
                    start_s=self.start[done],
                    end_s=end[done],
                ),
                vos=("a", "b", "c"),
                vo_shares=(0.5, 0.3, 0.2),
            )
            decisions = agent.decide(view)
            check_valid(view, decisions)
            for jid in decisions.release:
                self.start[jid] = t
                end[jid] = t + self.run[jid]
            if reported.all():
                return
            future = np.concatenate([self.submit[self.submit > t], end[np.isfinite(end) & (end > t)]])
            t = float(future.min()) if future.size else t
        raise AssertionError("toy cluster did not drain")


def check_valid(view: ClusterView, decisions: Decisions) -> None:
    pend = view.pending
    held_ids = set(pend.job_id[pend.held].tolist())
    assert len(set(decisions.release)) == len(decisions.release), "a job released twice"
    assert set(decisions.release) <= held_ids, "released a job that is not pending and held"
    cores = dict(zip(pend.job_id.tolist(), pend.cores.tolist(), strict=True))
    assert sum(cores[j] for j in decisions.release) <= view.idle_cores, "releases exceed idle cores"
    if decisions.boost is not None:
        assert sorted(decisions.boost) == sorted(pend.job_id.tolist())


def toy_workload(seed: int, n: int = 250) -> ToyCluster:
    rng = np.random.default_rng(seed)
    interactive = rng.random(n) < 0.5
    run = np.where(interactive, rng.uniform(30, 800, n), rng.lognormal(9.0, 1.0, n))
    submit = np.sort(rng.exponential(900.0, n).cumsum() * np.where(rng.random(n) < 0.3, 0.05, 1.0))
    return ToyCluster(
        cores=6,
        submit=np.sort(submit),
        run=run,
        job_class=np.where(interactive, INT, BAT).astype(np.int64),
        vo=rng.integers(0, 3, n).astype(np.int64),
    )


def make_agent(seed: int, learner_kind: str = "sarsa", model: str = "esn") -> SchedulingAgent:
    enc = FeatureEncoder(FeatureConfig(n_vos=3))
    if model == "esn":
        q: EchoStateQ | FeedForwardQ = EchoStateQ(enc.state_dim, enc.action_dim, seed=seed)
    else:
        q = FeedForwardQ(enc.state_dim, enc.action_dim, epochs=3, seed=seed)
    learner = SarsaLearner(q, seed=seed) if learner_kind == "sarsa" else FittedQLearner(q, refit_every=40, seed=seed)
    return SchedulingAgent(learner, enc, EstimatedRuntime(), shares=(0.5, 0.3, 0.2), lam=0.5, pretrain_decisions=60)


@pytest.mark.parametrize(("learner_kind", "model"), [("sarsa", "esn"), ("fqi", "esn"), ("fqi", "ffnn")])
def test_learning_agent_runs_a_cluster_validly(learner_kind: str, model: str) -> None:
    cluster = toy_workload(seed=1)
    agent = make_agent(3, learner_kind, model)
    cluster.replay(agent)
    assert np.all(np.isfinite(cluster.start))
    assert np.all(cluster.start >= cluster.submit)
    assert not agent.pretraining and agent.learner.refits > 1
    assert agent.decisions == cluster.submit.size
    memory = agent.learner.memory
    # Every decision got its reward: the last interval closes at the view that finds the queue empty.
    assert np.isfinite(memory.rewards).all()
    # Incurred credit: at most 1 (no loss), negative when the queue lost more W than that.
    assert np.all(memory.rewards <= 1.0)


def test_same_seed_same_schedule() -> None:
    starts = []
    for seed in (5, 5, 6):
        cluster = toy_workload(seed=2)
        cluster.replay(make_agent(seed))
        starts.append(cluster.start)
    np.testing.assert_array_equal(starts[0], starts[1])
    assert not np.array_equal(starts[0], starts[2])


def test_boost_mode_ranks_every_pending_job() -> None:
    agent = make_agent(1)
    agent.mode = "boost"
    pend = pending([1, 2, 3, 4], [BAT, INT, BAT, INT], [10, 20, 5, 30], [5000, 100, 7000, 50])
    decisions = agent.decide(simple_view(pend, idle=1))
    check_valid(simple_view(pend, idle=1), decisions)
    assert decisions.release == () and decisions.boost is not None


def _running(ids: list[int], start: list[float]) -> RunningJobs:
    n = len(ids)
    return RunningJobs(
        job_id=np.array(ids),
        vo=np.array([i % 2 for i in ids]),
        job_class=np.full(n, BAT),
        cores=np.ones(n, dtype=np.int64),
        req_time_s=np.full(n, 1e4),
        submit_s=np.zeros(n),
        start_s=np.array(start, dtype=float),
    )


@pytest.mark.parametrize("learn", [True, False])
def test_boost_mode_learns_from_the_starts_that_follow_its_ranking(learn: bool) -> None:
    agent = make_agent(1)
    agent.mode = "boost"
    agent.learn = learn
    pend = pending([1, 2, 3, 4], [BAT, INT, BAT, INT], [10, 20, 5, 30], [5000, 100, 7000, 50], held=[False] * 4)
    first = ClusterView(
        time_s=100.0,
        total_cores=4,
        idle_cores=0,
        pending=pend,
        running=_running([1000, 1001, 1002, 1003], [0.0] * 4),
        finished=FinishedJobs(),
        vos=("a", "b"),
        vo_shares=(0.5, 0.5),
    )
    assert agent.decide(first).boost is not None and agent.decisions == 0
    # By the next view jobs 3 and 2 have started (3 first), and job 5, which no ranking saw, too.
    finished = FinishedJobs(
        job_id=np.array([1000, 1001, 1002]),
        vo=np.zeros(3, dtype=np.int64),
        job_class=np.full(3, BAT),
        cores=np.ones(3, dtype=np.int64),
        submit_s=np.zeros(3),
        start_s=np.zeros(3),
        end_s=np.full(3, 102.0),
    )
    second = ClusterView(
        time_s=110.0,
        total_cores=4,
        idle_cores=0,
        pending=pending([1, 4], [BAT, INT], [10, 30], [5000, 50], held=[False] * 2),
        running=_running([1003, 2, 3, 5], [0.0, 105.0, 103.0, 106.0]),
        finished=finished,
        vos=("a", "b"),
        vo_shares=(0.5, 0.5),
    )
    agent.decide(second)
    assert agent.decisions == 2  # the two ranked jobs that started; job 5 was not ranked
    if learn:
        assert agent.learner.memory.size == 2
        assert [agent._open[3].decision_id, agent._open[2].decision_id] == [0, 1]  # in start order
    else:
        assert agent.learner.memory.size == 0 and not agent._open
    # A third view with nothing new started records nothing more.
    agent.decide(second)
    assert agent.decisions == 2


def test_agent_checkpoint_round_trip(tmp_path: Path) -> None:
    cluster = toy_workload(seed=3, n=200)
    agent = make_agent(2)
    cluster.replay(agent)
    path = tmp_path / "agent.npz"
    agent.save(path)
    fresh = make_agent(99)
    fresh.load_state(path)
    assert fresh.decisions == agent.decisions and not fresh.pretraining
    state = np.linspace(0, 1, fresh.encoder.state_dim)
    actions = np.random.default_rng(0).uniform(0, 1, (30, fresh.encoder.action_dim))
    np.testing.assert_array_equal(fresh.learner.q.scores(state, actions), agent.learner.q.scores(state, actions))
    assert isinstance(fresh.runtime, EstimatedRuntime) and isinstance(agent.runtime, EstimatedRuntime)
    np.testing.assert_allclose(fresh.runtime.class_medians(), agent.runtime.class_medians())
    other_features = SchedulingAgent(
        SarsaLearner(EchoStateQ(9, 7, seed=0)),
        FeatureEncoder(FeatureConfig(n_vos=3, include_wait=True)),
        RequestedRuntime(),
        pretrain_decisions=0,
    )
    with pytest.raises(ValueError, match="feature config"):
        other_features.load_state(path)


def test_elastic_agent_respects_pool_constraints() -> None:
    enc = FeatureEncoder(FeatureConfig(n_vos=2))
    q = EchoStateQ(enc.state_dim, enc.action_dim + 1, seed=0)
    agent = ElasticSchedulingAgent(
        SarsaLearner(q, seed=0),
        enc,
        OracleRuntime(),
        pool_options=range(10, 101, 10),
        initial_cores=40,
        min_cores=30,
        hold_s=900.0,
        pretrain_decisions=0,
    )
    q.readout[-2] = 1.0  # a Q-function that prefers the largest pool
    pend = pending(list(range(80)), [INT] * 80, [0.0] * 80, [100.0] * 80)

    def view_at(t: float, total: int, idle: int) -> ClusterView:
        v = simple_view(pend, idle=idle, total=total)
        return ClusterView(
            time_s=t,
            total_cores=v.total_cores,
            idle_cores=v.idle_cores,
            pending=v.pending,
            running=v.running,
            finished=v.finished,
            vos=v.vos,
        )

    first = agent.decide(view_at(100.0, 40, 0))
    assert first.lease_cap is None and first.release == ()  # 15-minute hold since start
    grown = agent.decide(view_at(900.0, 40, 0))
    assert grown.lease_cap == 100
    assert len(grown.release) == 60  # the new 60 cores are filled at once
    held_back = agent.decide(view_at(1000.0, 100, 0))
    assert held_back.lease_cap is None  # held for 15 minutes
    q.readout[-2] = -1.0  # now it prefers the smallest pool, but 35 cores are busy
    shrunk = agent.decide(view_at(1800.0, 100, 65))
    assert shrunk.lease_cap == 40  # smallest option ≥ max(30, 35 busy)
    assert len(shrunk.release) == 5


def test_pending_scores_order_the_jobs_as_boost_mode_does_and_change_nothing() -> None:
    from rlsched.core.view import ScoringAgent

    pend = pending([1, 2, 3, 4, 5], [BAT, INT, BAT, INT, BAT], [10, 20, 5, 30, 1], [5000, 100, 7000, 50, 60])
    view = simple_view(pend, idle=0)
    rule = FCFSAgent(mode="boost", class_first=JobClass.INTERACTIVE)
    assert isinstance(rule, ScoringAgent)
    scores = rule.pending_scores(view)
    assert tuple(pend.job_id[np.argsort(-scores, kind="stable")].tolist()) == rule.decide(view).boost
    assert sorted(scores.tolist()) == [1.0, 2.0, 3.0, 4.0, 5.0]
    agent = make_agent(0)
    agent.pretraining = False
    agent.mode = "boost"
    agent.learner.epsilon = 0.0  # a learning agent's boost explores its top job; not here
    q_fn = agent.learner.q
    assert isinstance(q_fn, EchoStateQ)
    q_fn.readout[:] = np.random.default_rng(1).normal(size=q_fn.readout.shape)  # a model with opinions
    decisions_before = agent.decisions
    q = agent.pending_scores(view)
    assert q.shape == (5,) and np.isfinite(q).all()
    fcfs = np.lexsort((pend.job_id, pend.submit_s))  # ties (an untrained model) go FCFS
    assert tuple(pend.job_id[fcfs[np.argsort(-q[fcfs], kind="stable")]].tolist()) == agent.decide(view).boost
    assert agent.decisions == decisions_before
    np.testing.assert_array_equal(agent.pending_scores(view), q)  # no learning in between: the same
    assert agent.pending_scores(simple_view(pending([], [], [], []), idle=4)).shape == (0,)
