"""Regression tests for the reasons the Perez scheduler did not learn (issue 3, part A).

1. Credit: with the reward of P-grid §3.2 read literally (``election``: a decision earns W
   of the job it elects), the learned Q-function preferred batch jobs, whose W does not
   depend on their wait, over interactive jobs that had waited.  ``incurred`` credit
   re-times the same total (Σ over decisions = Σ over jobs of W) so that a decision pays
   for the W the queue loses after it.  Tests: the identity, by hand and on a cluster.
2. State: the queue by class (``queued_batch``/``queued_interactive``) is needed so that
   the regression does not confound the chosen job's class with the queue it came from.
3. Read-out regularisation: with ``ridge_alpha = 1e-2`` noise in reservoir units and VO
   one-hots decided the greedy choice.
Together: on a LAL-like workload the greedy choice between an interactive and a batch job
must be the interactive one (the P-grid behaviour), and was not before.
"""

from __future__ import annotations

import numpy as np
import pytest

from rlsched.core.agents import SchedulingAgent
from rlsched.core.approximators import EchoStateQ
from rlsched.core.features import FeatureConfig, FeatureEncoder
from rlsched.core.learners import SarsaLearner
from rlsched.core.learners.base import BatchLearner
from rlsched.core.rewards import responsiveness
from rlsched.core.runtime import EstimatedRuntime, OracleRuntime
from rlsched.core.view import ClusterView, FinishedJobs, FloatArray, JobClass, PendingJobs, RunningJobs
from tests.core.test_agents import ToyCluster, toy_workload

BAT, INT = int(JobClass.BATCH), int(JobClass.INTERACTIVE)


def oracle_agent(credit: str, lam: float = 1.0, seed: int = 0) -> SchedulingAgent:
    enc = FeatureEncoder(FeatureConfig(n_vos=3))
    learner = SarsaLearner(EchoStateQ(enc.state_dim, enc.action_dim, seed=seed), seed=seed)
    return SchedulingAgent(
        learner,
        enc,
        OracleRuntime(),
        shares=(0.5, 0.3, 0.2),
        lam=lam,
        pretrain_decisions=40,
        credit=credit,  # type: ignore[arg-type]
    )


def toy_w(cluster: ToyCluster) -> FloatArray:
    return np.asarray(responsiveness(cluster.run, cluster.start - cluster.submit))


@pytest.mark.parametrize("credit", ["incurred", "election"])
def test_rewards_sum_to_the_total_responsiveness(credit: str) -> None:
    """λ = 1, oracle runtimes: Σ_t reward_t = Σ_j W_j for both credits (same objective)."""
    cluster = toy_workload(seed=4, n=300)
    agent = oracle_agent(credit)
    cluster.replay(agent)
    rewards = agent.learner.memory.rewards
    assert np.any(cluster.start > cluster.submit + 60)  # some jobs did queue: the test means something
    undelivered = ~np.isfinite(rewards)
    if credit == "election":
        assert not undelivered.any()
        total = rewards.sum()
    else:
        # Every interval is closed, the last one by the view that found the queue empty.
        assert not undelivered.any()
        total = rewards.sum()
    assert total == pytest.approx(float(toy_w(cluster).sum()), rel=1e-9)


def view(
    t: float, pend: PendingJobs, idle: int, finished: FinishedJobs | None = None, running: RunningJobs | None = None
) -> ClusterView:
    return ClusterView(
        time_s=t,
        total_cores=2,
        idle_cores=idle,
        pending=pend,
        running=running if running is not None else RunningJobs(),
        finished=finished if finished is not None else FinishedJobs(),
        vos=("a", "b", "c"),
        vo_shares=(0.5, 0.3, 0.2),
    )


def jobs(ids: list[int], classes: list[int], submit: list[float], run: list[float]) -> PendingJobs:
    n = len(ids)
    return PendingJobs(
        job_id=np.array(ids),
        vo=np.zeros(n, dtype=np.int64),
        job_class=np.array(classes),
        cores=np.ones(n, dtype=np.int64),
        req_time_s=np.array(run) * 2,
        submit_s=np.array(submit, dtype=float),
        oracle_run_s=np.array(run, dtype=float),
        held=np.ones(n, dtype=bool),
    )


def test_incurred_credit_by_hand() -> None:
    """The decision that leaves an interactive job waiting is charged the W that job loses."""
    agent = oracle_agent("incurred")
    agent.pretrain_decisions = 10**6  # stay in EDF: the picks are known
    # t = 0: one idle core, a batch job (run 10,000 s) and an interactive one (run 100 s).
    first = agent.decide(view(0.0, jobs([1, 2], [BAT, INT], [0.0, 0.0], [10_000.0, 100.0]), idle=1))
    assert first.release == (2,)  # EDF elects the interactive job; the batch job waits
    # t = 100: job 2 ends, a core frees, job 1 is elected.  Job 1 waited 100 s: it lost
    # W 1 − 10,000/10,100, charged to decision 0, whose W part is 1 − that loss.
    fin = FinishedJobs(
        job_id=np.array([2]),
        vo=np.array([0]),
        job_class=np.array([INT]),
        cores=np.array([1]),
        submit_s=np.array([0.0]),
        start_s=np.array([0.0]),
        end_s=np.array([100.0]),
    )
    second = agent.decide(view(100.0, jobs([1], [BAT], [0.0], [10_000.0]), idle=1, finished=fin))
    assert second.release == (1,)
    rewards = agent.learner.memory.rewards
    assert rewards[0] == pytest.approx(1.0 - (1.0 - 10_000.0 / 10_100.0))
    assert np.isnan(rewards[1])  # its interval is still open and its job still runs


def greedy_interactive_share(learner: BatchLearner) -> list[int]:
    """Wrap ``select``: count greedy choices between both classes, and the interactive picks."""
    counts = [0, 0]
    original = learner.select

    def select(state: FloatArray, actions: FloatArray, explore: bool = True) -> int:
        inter = actions[:, 1] > 0.5  # the class_interactive column
        if inter.any() and (~inter).any():
            counts[0] += 1
            counts[1] += int(inter[int(np.argmax(learner.q.scores(state, actions)))])
        return original(state, actions, explore)

    learner.select = select  # type: ignore[method-assign]
    return counts


def lal_run(credit: str, ridge_alpha: float, class_queue: bool) -> tuple[float, float, float]:
    """(interactive pick share, interactive W, FCFS interactive W) on a small LAL-like tuning seed."""
    from rlsched.sim.engine import Simulator
    from rlsched.sim.policies import simulate_policy
    from rlsched.sim.workloads.lal import generate_lal

    w = generate_lal(1004, scale=0.25)
    enc = FeatureEncoder(FeatureConfig(n_vos=len(w.vo_names), include_class_queue=class_queue))
    learner = SarsaLearner(EchoStateQ(enc.state_dim, enc.action_dim, ridge_alpha=ridge_alpha, seed=1004), seed=1004)
    agent = SchedulingAgent(learner, enc, EstimatedRuntime(), shares=w.vo_shares, lam=1.0, credit=credit)  # type: ignore[arg-type]
    counts = greedy_interactive_share(learner)
    schedule = Simulator(w, 81, agent=agent, hold_on_submit=True).run()
    fcfs = simulate_policy(w, "fcfs", 81).schedule
    inter = w.job_class == INT
    w_agent = responsiveness(schedule.run, schedule.wait)[inter].mean()
    w_fcfs = responsiveness(fcfs.run, fcfs.wait)[inter].mean()
    assert counts[0] > 50, "too few contended choices for the test to mean anything"
    return counts[1] / counts[0], float(w_agent), float(w_fcfs)


def test_learned_policy_prefers_interactive_jobs_on_lal() -> None:
    share, w_int, w_fcfs = lal_run("incurred", 30.0, class_queue=True)
    assert share >= 0.95
    assert w_int > w_fcfs + 0.02


@pytest.mark.slow
def test_before_the_fix_the_learned_policy_preferred_batch_jobs() -> None:
    share, w_int, w_fcfs = lal_run("election", 1e-2, class_queue=False)
    assert share < 0.5
    assert w_int < w_fcfs + 0.01
