"""The daemon's agents: building one from ``[agent]``, and what the daemon reads from any agent.

The daemon drives any :class:`rlsched.core.view.Agent` (``decide(view) -> Decisions``).  Around it,
:class:`AgentHandle` adds what the daemon needs beyond the protocol: the state vector of P-grid §3.2
(for metrics and ``rlsched status``), the pending jobs in the agent's order with their scores, the
Q-value of chosen jobs, rewards received, and checkpoints (model and experience).

Scores: for the learning agents (``sarsa``, ``fqi``) a job's score is its Q-value Q(s, a) under the
current model; for the ranking agents (``fixed``, ``fcfs``, ``edf``) it is the rank turned around
(the first of n jobs scores n, the last 1): they have no value function.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, Protocol, runtime_checkable

import numpy as np

from rlsched.core.agents import EDFAgent, FCFSAgent, FixedRankAgent, SchedulingAgent
from rlsched.core.approximators import EchoStateQ, FeedForwardQ
from rlsched.core.features import FeatureConfig, FeatureEncoder
from rlsched.core.learners import FittedQLearner, SarsaLearner
from rlsched.core.learners.base import BatchLearner
from rlsched.core.runtime import EstimatedRuntime, RequestedRuntime, RuntimeModel
from rlsched.core.view import Agent, ClusterView, Decisions, FloatArray, IntArray, JobClass, PendingJobs
from rlsched.daemon.config import AgentConfig, Mode


@runtime_checkable
class RankingAgent(Protocol):
    """An agent with a fixed ranking rule (``rank``: indices of ``view.pending``, best first)."""

    def rank(self, view: ClusterView) -> IntArray:
        ...


class FixedPriorityAgent(FixedRankAgent):
    """Interactive jobs first, then shortest requested time first, then first come first served.

    A fixed-priority policy that needs no training: the daemon's default, and a sensible floor for the
    learned policies (P-grid's interactive jobs gain most from going first; shortest-job-first minimises
    mean wait for the rest).  In gate mode it releases held jobs in this order while they fit in the idle
    cores (the greedy allocation of P-grid §3.2, as the core's agents do); in boost mode it ranks them all.
    """

    def rank(self, view: ClusterView) -> IntArray:
        pend = view.pending
        batch_last = (pend.job_class != int(JobClass.INTERACTIVE)).astype(np.int64)
        return np.lexsort((pend.job_id, pend.submit_s, pend.req_time_s, batch_last)).astype(np.int64)


def agent_mode(mode: Mode) -> Literal["gate", "boost"]:
    """The core agents act by release (gate) or by ranking (boost); shadow mode ranks and acts never."""
    return "gate" if mode == "gate" else "boost"


def build_agent(config: AgentConfig, mode: Mode, n_vos: int, vo_shares: tuple[float, ...] | None) -> Agent:
    """The agent ``[agent]`` asks for, acting in the way ``mode`` needs."""
    how = agent_mode(mode)
    runtime: RuntimeModel = EstimatedRuntime() if config.runtime_model == "estimated" else RequestedRuntime()
    if config.kind == "fixed":
        return FixedPriorityAgent(how)
    if config.kind == "fcfs":
        return FCFSAgent(how)
    if config.kind == "edf":
        return EDFAgent(runtime, how)
    encoder = FeatureEncoder(FeatureConfig(n_vos=max(n_vos, 1)))
    if config.model == "esn":
        q: EchoStateQ | FeedForwardQ = EchoStateQ(encoder.state_dim, encoder.action_dim, seed=config.seed)
    else:
        q = FeedForwardQ(encoder.state_dim, encoder.action_dim, seed=config.seed)
    learner: BatchLearner = (SarsaLearner(q, seed=config.seed) if config.kind == "sarsa"
                             else FittedQLearner(q, seed=config.seed))
    return SchedulingAgent(learner, encoder, runtime, shares=vo_shares, lam=config.lam, mode=how,
                           pretrain_decisions=config.pretrain_decisions, keep_idle_cores=config.keep_idle_cores)


class AgentHandle:
    """What the daemon reads from an agent besides its decisions (see the module docstring)."""

    def __init__(self, agent: Agent, n_vos: int) -> None:
        self.agent = agent
        if isinstance(agent, SchedulingAgent):
            self.encoder = agent.encoder
            self.runtime: RuntimeModel = agent.runtime
        else:
            # The state vector is the MDP's (P-grid §3.2), whatever decides: ranking agents get one too.
            self.encoder = FeatureEncoder(FeatureConfig(n_vos=max(n_vos, 1)))
            self.runtime = getattr(agent, "runtime", None) or RequestedRuntime()
        self._rewarded_count, self._rewarded_sum = self._reward_totals()

    @property
    def learning(self) -> bool:
        return isinstance(self.agent, SchedulingAgent)

    @property
    def state_names(self) -> tuple[str, ...]:
        return self.encoder.state_names

    def decide(self, view: ClusterView) -> Decisions:
        return self.agent.decide(view)

    def state(self, view: ClusterView) -> FloatArray:
        return self.encoder.state(view, self.runtime)

    def ranking(self, view: ClusterView) -> tuple[IntArray, FloatArray]:
        """Indices of ``view.pending`` in the agent's order (best first) and each job's score."""
        pend = view.pending
        n = len(pend)
        if n == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        if isinstance(self.agent, SchedulingAgent):
            scores = self.q_values(view, np.arange(n))
            return np.argsort(-scores, kind="stable").astype(np.int64), scores
        # Agents without a ranking rule keep the batch system's order.
        order = self.agent.rank(view) if isinstance(self.agent, RankingAgent) else np.arange(n, dtype=np.int64)
        scores = np.empty(n)
        scores[order] = np.arange(n, 0, -1, dtype=np.float64)
        return order, scores

    def q_values(self, view: ClusterView, rows: IntArray) -> FloatArray:
        """Q(s, a) of the pending jobs ``rows`` (learning agents; NaN for the others)."""
        if not isinstance(self.agent, SchedulingAgent) or rows.size == 0:
            return np.full(rows.size, np.nan)
        agent = self.agent
        pend = view.pending
        run_s = agent.runtime.pending(pend)[rows]
        state = self.state(view)
        actions = agent.encoder.actions(_subset(pend, rows), run_s, view.time_s, view.total_cores)
        return np.asarray(agent.learner.q.scores(state, actions), dtype=np.float64)

    # -- rewards --------------------------------------------------------------------------
    def _reward_totals(self) -> tuple[int, float]:
        if not isinstance(self.agent, SchedulingAgent):
            return 0, 0.0
        rewards = self.agent.learner.memory.rewards
        done = np.isfinite(rewards)
        return int(done.sum()), float(rewards[done].sum())

    def new_rewards(self) -> tuple[int, float]:
        """How many rewards the learner received since the last call, and their sum.

        Read from the replay memory (a reward fills its transition's slot), so it works for any
        learner; when the memory drops its oldest transitions the count can only be undercounted.
        """
        count, total = self._reward_totals()
        new_count, new_sum = max(count - self._rewarded_count, 0), total - self._rewarded_sum
        self._rewarded_count, self._rewarded_sum = count, total
        return new_count, (new_sum if new_count else 0.0)

    # -- checkpoints ----------------------------------------------------------------------
    def save(self, path: Path) -> bool:
        """Write the model and experience (atomically: the learner's checkpoint is temp + fsync + rename);
        False for agents with nothing to save."""
        if isinstance(self.agent, SchedulingAgent):
            self.agent.save(path)
            return True
        return False

    def load(self, path: Path) -> bool:
        """Restore a :meth:`save`; False when there is nothing to load."""
        if not isinstance(self.agent, SchedulingAgent) or not path.exists():
            return False
        self.agent.load_state(path)
        # A restored model decides at once; pretraining (if it had not finished) continues by the counters.
        self._rewarded_count, self._rewarded_sum = self._reward_totals()
        return True


def _subset(pend: PendingJobs, rows: IntArray) -> PendingJobs:
    return PendingJobs(job_id=pend.job_id[rows], vo=pend.vo[rows], job_class=pend.job_class[rows],
                       cores=pend.cores[rows], req_time_s=pend.req_time_s[rows], submit_s=pend.submit_s[rows],
                       oracle_run_s=pend.oracle_run_s[rows], held=pend.held[rows])
