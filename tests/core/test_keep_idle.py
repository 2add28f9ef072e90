"""Keeping the last idle cores free for interactive arrivals: the fixed rule and the learned "no job" action.

A non-preemptive scheduler serves an interactive job at once only if a core is idle when
it arrives.  :class:`FCFSAgent` with ``keep_idle_cores`` is the fixed rule;
:class:`SchedulingAgent` with ``keep_idle_cores`` offers the choice to the learner.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from rlsched.core.agents import FCFSAgent, SchedulingAgent
from rlsched.core.approximators import EchoStateQ
from rlsched.core.features import FeatureConfig, FeatureEncoder
from rlsched.core.learners import SarsaLearner
from rlsched.core.rewards import responsiveness
from rlsched.core.runtime import EstimatedRuntime, OracleRuntime
from rlsched.core.view import FloatArray, JobClass
from tests.core.test_agents import pending, simple_view

BAT, INT = int(JobClass.BATCH), int(JobClass.INTERACTIVE)


def test_rule_keeps_the_last_cores_from_batch_jobs() -> None:
    rule = FCFSAgent(class_first=JobClass.INTERACTIVE, keep_idle_cores=2)
    pend = pending([1, 2, 3], [BAT, INT, BAT], [0, 10, 20], [5000, 100, 7000])
    # 3 idle cores of 4: the interactive job takes one, the last two stay free.
    assert rule.decide(simple_view(pend, idle=3)).release == (2,)
    # Interactive jobs may take the kept cores.
    two_inter = pending([1, 2, 3], [INT, INT, BAT], [0, 10, 20], [50, 100, 7000])
    assert rule.decide(simple_view(two_inter, idle=2)).release == (1, 2)
    # Only batch jobs queued: they fill all but two cores.
    only_batch = pending([1, 3, 5, 7], [BAT] * 4, [0, 1, 2, 3], [5000] * 4)
    assert rule.decide(simple_view(only_batch, idle=4)).release == (1, 3)
    assert rule.decide(simple_view(only_batch, idle=2)).release == ()
    # keep_idle_cores = 0 is plain interactive-first.
    plain = FCFSAgent(class_first=JobClass.INTERACTIVE)
    assert plain.decide(simple_view(pend, idle=3)).release == (2, 1, 3)


def test_rule_keeps_something_running_on_a_tiny_pool() -> None:
    """Keeping back as many cores as the pool has would deadlock: with nothing running, one job starts."""
    rule = FCFSAgent(class_first=JobClass.INTERACTIVE, keep_idle_cores=4)
    only_batch = pending([1, 3], [BAT, BAT], [0, 1], [5000, 5000])
    assert rule.decide(simple_view(only_batch, idle=4)).release == (1,)
    assert rule.decide(simple_view(only_batch, idle=3)).release == ()


@pytest.mark.parametrize(
    "kwargs",
    [
        {"keep_idle_cores": -1},
        {"keep_idle_cores": 1},
        {"keep_idle_cores": 1, "class_first": JobClass.INTERACTIVE, "mode": "boost"},
    ],
)
def test_rule_rejects_settings_it_cannot_honour(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="keep_idle_cores"):
        FCFSAgent(**kwargs)  # type: ignore[arg-type]


def learned_agent(keep: int, runtime: object = None) -> SchedulingAgent:
    enc = FeatureEncoder(FeatureConfig(n_vos=2))
    learner = SarsaLearner(EchoStateQ(enc.state_dim, enc.action_dim, seed=0), seed=0)
    return SchedulingAgent(
        learner,
        enc,
        runtime or OracleRuntime(),  # type: ignore[arg-type]
        shares=(0.5, 0.5),
        lam=1.0,
        pretrain_decisions=0,
        keep_idle_cores=keep,
    )


def offered_rows(agent: SchedulingAgent, choose_last: bool = False) -> list[FloatArray]:
    """Wrap ``select``: keep every candidate set; optionally always pick the last row."""
    seen: list[FloatArray] = []
    original = agent.learner.select

    def select(state: FloatArray, actions: FloatArray, explore: bool = True) -> int:
        seen.append(actions.copy())
        return actions.shape[0] - 1 if choose_last else original(state, actions, explore)

    agent.learner.select = select  # type: ignore[method-assign]
    return seen


def has_no_job_row(actions: FloatArray) -> bool:
    return bool(np.any((actions[:, 0] == 0) & (actions[:, 1] == 0)))


def test_no_job_action_is_offered_only_for_the_last_cores_and_never_before_an_interactive_job() -> None:
    agent = learned_agent(keep=1)
    seen = offered_rows(agent)
    batch = pending([1, 3], [BAT, BAT], [0, 1], [5000, 5000])
    agent.decide(simple_view(batch, idle=1))
    assert has_no_job_row(seen[-1])  # one core left, something runs, only batch jobs queued
    seen.clear()
    agent.decide(simple_view(pending([5, 6], [BAT, INT], [0, 1], [5000, 60]), idle=1))
    assert not has_no_job_row(seen[0])  # an interactive job waits: start it instead
    seen.clear()
    agent.decide(simple_view(pending([7, 9], [BAT, BAT], [0, 1], [5000, 5000]), idle=2))
    assert not has_no_job_row(seen[0]) and has_no_job_row(seen[1])  # two cores: only the last may stay idle


def test_no_job_action_is_never_offered_on_an_idle_machine_or_in_pretraining() -> None:
    agent = learned_agent(keep=4)
    seen = offered_rows(agent)
    agent.decide(simple_view(pending([1], [BAT], [0], [5000]), idle=4))
    assert seen and not has_no_job_row(seen[0])
    edf = learned_agent(keep=4)
    edf.pretrain_decisions, edf.pretraining = 10**6, True
    out = edf.decide(simple_view(pending([1], [BAT], [0], [5000]), idle=1))
    assert out.release == (1,) and edf.kept_idle == 0


def test_keeping_a_core_idle_is_a_decision_with_a_reward() -> None:
    agent = learned_agent(keep=1)
    offered_rows(agent, choose_last=True)
    out = agent.decide(simple_view(pending([1], [BAT], [0], [5000]), idle=1))
    assert out.release == () and agent.kept_idle == 1 and agent.decisions == 1
    # Next event: an interactive job arrives and takes the kept core; the batch job lost W
    # over [100, 160] and that loss is the idle decision's cost (incurred credit).
    later = replace(simple_view(pending([1, 2], [BAT, INT], [0, 150], [5000, 60]), idle=1), time_s=160.0)
    assert agent.decide(later).release == (2,)
    reward = agent.learner.memory.rewards[0]
    lost = (5000 / (5000 + 100) - 5000 / (5000 + 160)) + (60 / 60 - 60 / (60 + 10))
    assert reward == pytest.approx(1.0 - lost)


def test_no_job_action_needs_the_incurred_credit() -> None:
    enc = FeatureEncoder(FeatureConfig(n_vos=2))
    learner = SarsaLearner(EchoStateQ(enc.state_dim, enc.action_dim, seed=0), seed=0)
    with pytest.raises(ValueError, match="incurred"):
        SchedulingAgent(learner, enc, OracleRuntime(), credit="election", keep_idle_cores=1)
    assert SchedulingAgent(learner, enc, OracleRuntime(), credit="election").keep_idle_cores == 0


def test_kept_idle_count_survives_a_checkpoint(tmp_path: Path) -> None:
    agent = learned_agent(keep=1)
    offered_rows(agent, choose_last=True)
    agent.decide(simple_view(pending([1], [BAT], [0], [5000]), idle=1))
    agent.save(tmp_path / "m.npz")
    again = learned_agent(keep=1)
    again.load_state(tmp_path / "m.npz")
    assert again.kept_idle == 1


def test_learner_with_the_no_job_action_serves_interactive_jobs_better_on_lal() -> None:
    """LAL-like tuning seed 1004 at a quarter scale: interactive W rises, batch W stays within 0.01."""
    from rlsched.sim.engine import Simulator
    from rlsched.sim.workloads.lal import generate_lal

    w = generate_lal(1004, scale=0.25)
    inter = w.job_class == INT
    results = {}
    for keep in (0, 2):
        enc = FeatureEncoder(FeatureConfig(n_vos=len(w.vo_names)))
        learner = SarsaLearner(EchoStateQ(enc.state_dim, enc.action_dim, seed=1004), seed=1004)
        agent = SchedulingAgent(learner, enc, EstimatedRuntime(), shares=w.vo_shares, lam=1.0, keep_idle_cores=keep)
        schedule = Simulator(w, 81, agent=agent, hold_on_submit=True).run()
        wv = responsiveness(schedule.run, schedule.wait)
        results[keep] = (float(wv[inter].mean()), float(wv[~inter].mean()), agent.kept_idle)
    assert results[0][2] == 0 and results[2][2] > 100
    assert results[2][0] > results[0][0] + 0.015
    assert results[2][1] > results[0][1] - 0.01


def test_fixed_rule_beats_interactive_first_in_the_simulator() -> None:
    """The rule itself, on the same workload: interactive W well above plain interactive-first."""
    from rlsched.sim.engine import Simulator
    from rlsched.sim.workloads.lal import generate_lal, interactive_first_priority

    w = generate_lal(1004, scale=0.25)
    inter = w.job_class == INT
    plain = Simulator(w, 81, priority=interactive_first_priority(w), backfill=True).run()
    kept = Simulator(
        w, 81, agent=FCFSAgent(class_first=JobClass.INTERACTIVE, keep_idle_cores=2), hold_on_submit=True
    ).run()
    w_plain = responsiveness(plain.run, plain.wait)[inter].mean()
    w_kept = responsiveness(kept.run, kept.wait)[inter].mean()
    assert w_kept > w_plain + 0.02
