"""A learned agent pretrained on a named rule (``pretrain_rule``): it follows and records that rule's choices."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rlsched.core.agents import SchedulingAgent
from rlsched.core.policies import BuildContext, PolicyError, build_agent, load_policy, resolve, save_policy
from rlsched.core.policies.registry import pretrain_rule_spec, pretrain_rule_text
from rlsched.core.view import JobClass, PendingJobs
from tests.core.test_agents import simple_view

BAT = int(JobClass.BATCH)
VOS = ("a", "b")


def _queue() -> PendingJobs:
    """Five jobs whose orders differ by rule: FCFS 1..5; SAF (request × cores: 36000, 1200, 3000, 200, 800)
    4, 5, 2, 3, 1; EDF (submit + request/9: 1000, 76.7, 353, 52.2, 84.4) 4, 2, 5, 3, 1."""
    req = np.array([9000.0, 600.0, 3000.0, 200.0, 400.0])
    cores = np.array([4, 2, 1, 1, 2])
    return PendingJobs(
        job_id=np.arange(1, 6),
        vo=np.array([0, 1, 0, 1, 0]),
        job_class=np.full(5, BAT),
        cores=cores,
        req_time_s=req,
        submit_s=np.array([0.0, 10.0, 20.0, 30.0, 40.0]),
        oracle_run_s=req / 2,
        held=np.ones(5, dtype=bool),
    )


def _learned(rule: str, mode: str) -> SchedulingAgent:
    spec = resolve(f"sarsa-esn:runtime_model=requested,pretrain_rule={rule}").bound(VOS, None)
    agent = build_agent(spec, BuildContext(mode=mode))  # type: ignore[arg-type]
    assert isinstance(agent, SchedulingAgent) and agent.pretraining
    return agent


@pytest.mark.parametrize(
    "rule", ["saf", "f4", "wfp3", "sjf:runtime_model=requested", "saf:runtime_model=requested;backfill=false"]
)
def test_boost_pretraining_ranks_as_the_named_rule(rule: str) -> None:
    view = simple_view(_queue(), total=8, idle=0)
    expected = build_agent(pretrain_rule_spec(rule).bound(VOS, None), BuildContext(mode="boost")).decide(view)
    got = _learned(rule, "boost").decide(view)
    assert got.boost == expected.boost
    if rule == "saf":
        assert got.boost == (4, 5, 2, 3, 1)  # by hand (see _queue)
        assert _learned("edf", "boost").decide(view).boost == (4, 2, 5, 3, 1)


def test_gate_pretraining_releases_and_records_the_rules_choices() -> None:
    view = simple_view(_queue(), total=8, idle=3)
    agent = _learned("saf", "gate")
    # SAF's order 4, 5, 2, 3, 1 filled greedily into 3 cores: 4 (1 core), 5 (2 cores); then nothing fits.
    assert agent.decide(view).release == (4, 5)
    rule = build_agent(resolve("saf").bound(VOS, None), BuildContext(mode="gate"))
    assert rule.decide(view).release == (4, 5)
    memory = agent.learner.memory
    assert memory.size == 2 and agent.decisions == 2
    # EDF (on the request) takes 4 then 2: not SAF's choice.
    assert _learned("edf", "gate").decide(view).release == (4, 2)


def test_the_rule_leads_only_while_pretraining() -> None:
    agent = _learned("saf", "boost")
    agent.pretraining = False
    agent.learner.epsilon = 0.0
    scores = agent.pending_scores(simple_view(_queue(), total=8, idle=0))
    got = agent.decide(simple_view(_queue(), total=8, idle=0)).boost
    assert got == tuple((np.argsort(-scores, kind="stable") + 1).tolist())


def test_pretrain_rule_round_trips_through_a_saved_model(tmp_path: Path) -> None:
    spec = resolve("sarsa-esn:pretrain_rule=saf:runtime_model=user-last2,pretrain_decisions=3").bound(VOS, None)
    agent = build_agent(spec, BuildContext(mode="boost"))
    assert isinstance(agent, SchedulingAgent)
    path = tmp_path / "m.npz"
    save_policy(agent, spec, path)
    loaded, back = load_policy(path, mode="boost")
    assert back.params["pretrain_rule"] == "saf:runtime_model=user-last2"
    assert loaded.pretrain_rule is not None and loaded.pretrain_decisions == 3
    assert getattr(loaded.pretrain_rule, "rule", None) == "saf"


def test_the_default_is_edf_and_only_rules_may_lead() -> None:
    assert resolve("sarsa-esn").params["pretrain_rule"] == "edf"
    assert _learned("edf", "gate").pretrain_rule is None
    with pytest.raises(PolicyError, match="learned policy"):
        resolve("sarsa-esn:pretrain_rule=fqi-esn")
    with pytest.raises(PolicyError, match="unknown policy"):
        resolve("sarsa-esn:pretrain_rule=nosuchrule")
    assert pretrain_rule_text(resolve("saf:runtime_model=learned")) == "saf:runtime_model=learned"
    assert pretrain_rule_text(resolve("f4")) == "f4"
