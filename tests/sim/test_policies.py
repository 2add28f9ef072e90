"""Every registry policy runs in the simulator; static rules take the native path with the registry's key."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from rlsched.core.agents import ElasticSchedulingAgent, SchedulingAgent
from rlsched.core.policies import POLICIES, PolicyError, load_policy, resolve, save_policy
from rlsched.core.view import JobClass
from rlsched.sim.engine import Simulator
from rlsched.sim.policies import simulate_policy, workload_vos
from rlsched.sim.schedulers import legacy_scheduler
from rlsched.sim.workload import Workload
from rlsched.sim.workloads.lal import generate_lal

CORES = 81


@pytest.fixture(scope="module")
def small() -> Workload:
    return generate_lal(3, scale=0.05)


def _quick(name: str) -> str:
    return f"{name}:pretrain_decisions=20" if POLICIES[name].family == "learned" else name


@pytest.mark.parametrize("name", [n for n, e in POLICIES.items() if e.family != "replay"])
def test_every_policy_runs_in_the_simulator(small: Workload, name: str) -> None:
    ran = simulate_policy(small, _quick(name), CORES)
    s = ran.schedule
    assert np.all(np.isfinite(s.start)) and np.all(s.start >= small.submit)
    assert ran.spec.name == name and ran.spec.vos == small.vo_names
    if POLICIES[name].family == "learned":
        assert isinstance(ran.agent, SchedulingAgent) and ran.agent.decisions > 20


def test_native_replays_the_recorded_schedule(small: Workload) -> None:
    recorded = replace(small, recorded_wait=np.arange(len(small), dtype=np.float64))
    ran = simulate_policy(recorded, "recorded")
    assert ran.agent is None and np.array_equal(ran.schedule.start, recorded.submit + recorded.recorded_wait)
    with pytest.raises(ValueError, match="no recorded wait"):
        simulate_policy(small, "native")


def test_static_rules_take_the_native_path_with_the_same_order_as_before(small: Workload) -> None:
    """The registry keys give the schedules of the former priority keys (ties by submit order)."""
    old_keys = {
        "easy-sjf": (small.req_time.astype(np.float64), True),
        "interactive-first": ((small.job_class != JobClass.INTERACTIVE) * 1e12 + small.submit, True),
        "interactive-first-sjf": (
            np.lexsort((np.arange(len(small)), small.req_time, small.job_class != JobClass.INTERACTIVE))
            .argsort()
            .astype(float),
            True,
        ),
    }
    for name, (key, backfill) in old_keys.items():
        ran = simulate_policy(small, name, CORES)
        assert ran.agent is None
        before = Simulator(small, CORES, priority=key, backfill=backfill).run()
        assert np.array_equal(ran.schedule.start, before.start), name
    fcfs = simulate_policy(small, "fcfs", CORES).schedule
    assert np.array_equal(fcfs.start, Simulator(small, CORES, backfill=False).run().start)


def test_edf_is_one_definition(small: Workload) -> None:
    """EDF under the requested model runs natively, with the deadline the agents pretrain with."""
    native = simulate_policy(small, "edf:runtime_model=requested", CORES)
    assert native.agent is None
    deadline = small.submit + small.req_time * (1.0 / 0.9 - 1.0)
    assert np.array_equal(native.schedule.start, Simulator(small, CORES, priority=deadline, backfill=False).run().start)
    former, _ = legacy_scheduler("edf")  # the former --scheduler name
    assert np.array_equal(simulate_policy(small, former, CORES).schedule.start, native.schedule.start)
    estimated = simulate_policy(small, "edf", CORES)
    assert estimated.agent is not None  # estimated runtimes: an agent


def test_legacy_scheduler_names_keep_their_labels(small: Workload) -> None:
    spec, label = legacy_scheduler("sjf", backfill=True)
    assert label == "sjf+easy" and spec == resolve("easy-sjf")
    assert simulate_policy(small, spec, CORES, name=label).schedule.scheduler == "sjf+easy"
    with pytest.raises(ValueError, match="unknown scheduler"):
        legacy_scheduler("magic")


def test_elastic_is_a_registry_parameter(small: Workload) -> None:
    ran = simulate_policy(small, "sarsa-esn:elastic=true,pretrain_decisions=20,pool_max_cores=120", CORES)
    assert isinstance(ran.agent, ElasticSchedulingAgent) and ran.pool_history is not None
    assert ran.agent.max_cores <= 120 and ran.pool_history.cores.max() <= 120


def test_a_saved_model_loads_and_replays_identically(small: Workload, tmp_path: Path) -> None:
    ran = simulate_policy(small, "fqi-esn:pretrain_decisions=20,seed=2", CORES)
    assert isinstance(ran.agent, SchedulingAgent)
    path = tmp_path / "fqi.npz"
    save_policy(ran.agent, ran.spec, path)
    other = generate_lal(4, scale=0.05)
    starts = []
    for _ in range(2):
        agent, spec = load_policy(path, expect_vos=workload_vos(other))
        assert spec == resolve(ran.spec).bound(ran.spec.vos, spec.features)
        agent.learn = False
        starts.append(simulate_policy(other, spec, CORES, agent=agent).schedule.start)
    assert np.array_equal(starts[0], starts[1])
    with pytest.raises(PolicyError, match="replays the recorded schedule"):
        simulate_policy(small, "native", agent=agent)
