"""A learned policy pretraining on a rule replays that rule's schedule for as long as it pretrains."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from rlsched.core.policies import BuildContext, build_agent
from rlsched.sim.boost import BoostSettings
from rlsched.sim.policies import bind, simulate_policy
from rlsched.sim.workload import Workload, make_workload


def _workload(n: int = 160) -> Workload:
    rng = np.random.default_rng(11)
    run = rng.exponential(600, n)
    w = make_workload(
        submit=np.cumsum(rng.exponential(120, n)),
        run=run,
        req_time=run * rng.uniform(1, 4, n),
        procs=rng.integers(1, 5, n),
        vo=rng.integers(0, 2, n),
        vo_names=("a", "b"),
        max_procs=8,
    )
    # Six users, so that user-last2 predicts from each one's history.
    return dataclasses.replace(w, user=rng.integers(0, 6, n).astype(np.int64))


@pytest.mark.parametrize("mode", ["gate", "boost"])
@pytest.mark.parametrize("rule", ["saf", "wfp3", "sjf:runtime_model=user-last2", "multifactor"])
def test_a_pretraining_agent_schedules_as_its_rule(mode: str, rule: str) -> None:
    """Pretraining longer than the trace: every choice is the rule's (its runtime model fed at every view too),
    so the schedule is the one the rule's own agent makes on the agent path (gate mode's list scheduler; the
    rules' native paths backfill with reservations), and differs from EDF pretraining's."""
    w = _workload()
    boost = BoostSettings(poll_interval_s=30.0, max_boosted=4)
    never_done = len(w) + 1
    learned = simulate_policy(
        w,
        f"sarsa-esn:pretrain_decisions={never_done},pretrain_rule={rule.replace(',', ';')}",
        mode=mode,  # type: ignore[arg-type]
        boost=boost,
    )
    rule_agent = build_agent(bind(rule, w), BuildContext(mode=mode, total_cores=w.max_procs))  # type: ignore[arg-type]
    ruled = simulate_policy(w, rule, mode=mode, boost=boost, agent=rule_agent)  # type: ignore[arg-type]
    np.testing.assert_array_equal(learned.schedule.start, ruled.schedule.start)
    assert learned.agent.pretraining  # type: ignore[union-attr]
    assert learned.agent.learner.memory.size == learned.agent.decisions > 0  # type: ignore[union-attr]
    edf = simulate_policy(w, f"sarsa-esn:pretrain_decisions={never_done}", mode=mode, boost=boost)  # type: ignore[arg-type]
    assert not np.array_equal(edf.schedule.start, ruled.schedule.start)
