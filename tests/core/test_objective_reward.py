"""The learner trained for the site's objective (issue 23, "the learner is trained for it").

A learned spec's ``reward`` (``W``: P-grid's λ-reward; ``bsld``, ``wait``: the objective's growth credited as
incurred) and ``reward_weights`` reach the agent, and the rewards of a run add up to the objective: minus the
sum over the jobs of their bounded slowdown above 1 (or of their wait, in hours), class-weighted.
"""

from __future__ import annotations

import numpy as np
import pytest

from rlsched.core.agents import PGRID_REWARD, WAIT_REWARD_SCALE_S, SchedulingAgent
from rlsched.core.approximators import EchoStateQ
from rlsched.core.features import FeatureConfig, FeatureEncoder
from rlsched.core.learners import SarsaLearner
from rlsched.core.measures import bounded_slowdown
from rlsched.core.objective import Objective
from rlsched.core.policies import BuildContext, PolicyError, build_agent, resolve
from rlsched.core.runtime import EstimatedRuntime, OracleRuntime, RuntimeModel
from tests.core.test_agents import INT, toy_workload


def rewarded_agent(reward: Objective, runtime: RuntimeModel | None = None, seed: int = 0) -> SchedulingAgent:
    enc = FeatureEncoder(FeatureConfig(n_vos=3))
    learner = SarsaLearner(EchoStateQ(enc.state_dim, enc.action_dim, seed=seed), seed=seed)
    return SchedulingAgent(
        learner,
        enc,
        runtime or OracleRuntime(),
        shares=(0.5, 0.3, 0.2),
        lam=0.5,
        pretrain_decisions=40,
        reward=reward,
    )


@pytest.mark.parametrize("belief", ["oracle", "estimated"])
@pytest.mark.parametrize("weights", [{}, {"interactive": 3.0}])
@pytest.mark.parametrize("name", ["bsld", "wait"])
def test_rewards_sum_to_minus_the_objective(name: str, weights: dict[str, float], belief: str) -> None:
    """Gate mode: Σ_t reward_t = −Σ_j w_j (bsld_j − 1), or −Σ_j w_j wait_j / 1 h; no F part.  Whatever the agent
    believes of the runtimes (its inputs): the views of a replay carry the actual ones, and the reward counts
    on them."""
    cluster = toy_workload(seed=4, n=300)
    agent = rewarded_agent(Objective(name, weights), OracleRuntime() if belief == "oracle" else EstimatedRuntime())
    cluster.replay(agent)
    rewards = agent.learner.memory.rewards
    wait = cluster.start - cluster.submit
    assert np.any(wait > 60) and not np.any(~np.isfinite(rewards))  # jobs queued; every interval closed
    w = np.where(cluster.job_class == INT, weights.get("interactive", 1.0), 1.0)
    if name == "bsld":
        expected = -np.sum(w * (bounded_slowdown(cluster.run, wait) - 1.0))
    else:
        expected = -np.sum(w * wait) / WAIT_REWARD_SCALE_S
    assert rewards.sum() == pytest.approx(float(expected), rel=1e-9)


def test_the_objective_reward_needs_the_incurred_credit() -> None:
    enc = FeatureEncoder(FeatureConfig(n_vos=3))
    learner = SarsaLearner(EchoStateQ(enc.state_dim, enc.action_dim, seed=0), seed=0)
    with pytest.raises(ValueError, match="bsld reward needs the 'incurred' credit"):
        SchedulingAgent(learner, enc, OracleRuntime(), credit="election", reward=Objective("bsld"))


def test_the_spec_names_the_reward_and_the_agent_gets_it() -> None:
    spec = resolve("sarsa-esn:reward=bsld,reward_weights=interactive=3;batch=0.5").bound(("a", "b"), None)
    agent = build_agent(spec, BuildContext(mode="boost"))
    assert isinstance(agent, SchedulingAgent)
    assert agent.reward == Objective("bsld", {"interactive": 3.0, "batch": 0.5})
    default = build_agent(resolve("sarsa-esn").bound(("a", "b"), None), BuildContext(mode="boost"))
    assert isinstance(default, SchedulingAgent) and default.reward == PGRID_REWARD


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("sarsa-esn:reward=slowdown", r"parameter 'reward': expected one of bsld, wait, W"),
        ("sarsa-esn:reward_weights=gpu=2", r"parameter 'reward_weights': class weight 'gpu'"),
        ("sarsa-esn:reward_weights=interactive=-1", r"parameter 'reward_weights': class weight interactive=-1"),
    ],
)
def test_a_bad_reward_is_one_line(text: str, problem: str) -> None:
    with pytest.raises(PolicyError, match=problem):
        resolve(text)


def test_the_elastic_agent_keeps_pgrid_reward() -> None:
    spec = resolve("sarsa-esn:elastic=true,reward=bsld").bound(("a",), None)
    with pytest.raises(PolicyError, match=r"elastic=true is rewarded by P-grid's"):
        build_agent(spec, BuildContext(mode="gate", total_cores=8))
