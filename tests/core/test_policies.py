"""The policy registry: specs, parameters, agents on a live-style view, static keys, saved models."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rlsched.core.agents import SchedulingAgent
from rlsched.core.features import FeatureConfig
from rlsched.core.policies import (
    POLICIES,
    BuildContext,
    JobColumns,
    PolicyError,
    PolicySpec,
    build_agent,
    entry,
    load_policy,
    order_by_key,
    parse_policy,
    resolve,
    save_policy,
    static_key,
)
from rlsched.core.view import ClusterView, FinishedJobs, PendingJobs, RunningJobs

VOS = ("a", "b")
LIVE = [name for name, e in POLICIES.items() if e.live]
LEARNED = [name for name, e in POLICIES.items() if e.family == "learned"]
RULES = [name for name, e in POLICIES.items() if e.family == "rule"]


def live_view(seed: int = 0, n: int = 12, idle: int = 6, time_s: float = 5000.0) -> ClusterView:
    """A live-style view: held pending jobs of both classes and VOs, ties in submit time and requests."""
    rng = np.random.default_rng(seed)
    pend = PendingJobs(
        job_id=rng.permutation(np.arange(100, 100 + n)).astype(np.int64),
        vo=rng.integers(0, 2, n),
        job_class=rng.integers(0, 2, n),
        cores=rng.integers(1, 3, n),
        req_time_s=rng.choice([60.0, 600.0, 3600.0], n),
        submit_s=rng.choice([10.0, 20.0, 30.0], n),
        oracle_run_s=np.full(n, np.nan),
        held=np.ones(n, dtype=bool),
    )
    return ClusterView(
        time_s=time_s,
        total_cores=8,
        idle_cores=idle,
        pending=pend,
        running=RunningJobs(),
        finished=FinishedJobs(),
        vos=VOS,
    )


def bound(name: str, **params: object) -> PolicySpec:
    return resolve(name, **params).bound(VOS, FeatureConfig(n_vos=2).to_dict())


def test_parse_and_format_round_trip() -> None:
    spec = parse_policy("sarsa-esn:lam=1,keep_idle_cores=2")
    assert spec.params["lam"] == 1.0 and spec.params["keep_idle_cores"] == 2 and spec.params["seed"] == 0
    assert parse_policy(spec.label()) == spec
    assert PolicySpec.from_dict(spec.to_dict()) == spec
    assert parse_policy("recorded").name == "native"
    assert parse_policy("edf:runtime_model=requested,backfill=true").params["backfill"] is True


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("magic", "unknown policy 'magic'"),
        ("sarsa-esn:lam=2", "'lam': must lie in [0, 1]"),
        ("sarsa-esn:lam=high", "'lam': expected float"),
        ("sarsa-esn:gamma=1", "unknown parameter 'gamma'"),
        ("fcfs:keep_idle_cores=1", "unknown parameter"),
        ("edf:runtime_model=psychic", "expected one of"),
        ("sarsa-esn:lam", "not key=value"),
    ],
)
def test_bad_specs_are_one_line_errors(text: str, fragment: str) -> None:
    with pytest.raises(PolicyError) as info:
        parse_policy(text)
    assert fragment in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("name", LIVE)
@pytest.mark.parametrize("mode", ["gate", "boost"])
def test_every_live_policy_decides_on_a_live_view(name: str, mode: str) -> None:
    if name == "interactive-first-keepidle" and mode == "boost":
        with pytest.raises(PolicyError, match="gate mode"):
            build_agent(bound(name), BuildContext(mode="boost", live=True))
        return
    agent = build_agent(
        bound(name, **({"pretrain_decisions": 2} if name in LEARNED else {})),
        BuildContext(mode=mode, shares=(0.5, 0.5), live=True),  # type: ignore[arg-type]
    )
    for t in range(4):  # past the EDF pretraining of the learned ones
        view = live_view(seed=t)
        decisions = agent.decide(view)
    ids = set(view.pending.job_id.tolist())
    if mode == "boost":
        assert decisions.boost is not None and sorted(decisions.boost) == sorted(ids)
    else:
        released = decisions.release
        assert released and set(released) <= ids and len(set(released)) == len(released)
        cores = dict(zip(view.pending.job_id.tolist(), view.pending.cores.tolist(), strict=True))
        assert sum(cores[j] for j in released) <= view.idle_cores


@pytest.mark.parametrize(
    "name", [n for n in RULES if static_key(resolve(n)) is not None] + ["edf:runtime_model=requested"]
)
def test_static_key_equals_the_agents_ranking(name: str) -> None:
    spec = parse_policy(name)
    key = static_key(spec)
    assert key is not None
    agent = build_agent(spec, BuildContext(mode="boost"))
    for seed in range(5):
        view = live_view(seed)
        order = order_by_key(key, JobColumns.of(view.pending))
        assert agent.decide(view).boost == tuple(view.pending.job_id[order].tolist())


def test_rules_without_a_static_key_need_an_agent() -> None:
    assert static_key(resolve("edf")) is None  # estimated runtimes change as jobs finish
    assert static_key(resolve("interactive-first-keepidle")) is None
    assert static_key(resolve("native")) is None
    with pytest.raises(PolicyError, match="cannot decide on a live system"):
        build_agent(resolve("native"), BuildContext(live=True))
    with pytest.raises(PolicyError, match="oracle"):
        build_agent(bound("sarsa-esn", runtime_model="oracle"), BuildContext(live=True))
    assert not entry("native").live


def _trained(name: str, tmp_path: Path) -> tuple[SchedulingAgent, PolicySpec]:
    spec = bound(name, pretrain_decisions=3, seed=4)
    agent = build_agent(spec, BuildContext(shares=(0.5, 0.5)))
    assert isinstance(agent, SchedulingAgent)
    for t in range(8):
        agent.decide(live_view(seed=t, time_s=5000.0 + 10 * t))
    return agent, spec


@pytest.mark.parametrize("name", LEARNED)
def test_save_then_load_gives_identical_decisions(name: str, tmp_path: Path) -> None:
    agent, spec = _trained(name, tmp_path)
    path = tmp_path / "m.npz"
    save_policy(agent, spec, path)
    loaded, loaded_spec = load_policy(path, expect_vos=VOS, expect_features=FeatureConfig(n_vos=2), mode="boost")
    assert type(loaded) is type(agent) and loaded_spec.name == spec.name and loaded_spec.params == spec.params
    assert loaded.decisions == agent.decisions and len(loaded.learner.memory) == len(agent.learner.memory)
    again, _ = load_policy(path, mode="boost")
    for t in range(3):
        view = live_view(seed=20 + t)
        assert loaded.decide(view).boost == again.decide(view).boost


def test_the_replay_memory_keeps_its_bound_while_learning_and_after_a_reload(tmp_path: Path) -> None:
    spec = bound("sarsa-esn", pretrain_decisions=3, seed=4, memory=5)
    agent = build_agent(spec, BuildContext(shares=(0.5, 0.5)))
    assert isinstance(agent, SchedulingAgent)
    for t in range(12):
        agent.decide(live_view(seed=t, time_s=5000.0 + 10 * t))
    memory = agent.learner.memory
    assert len(memory) <= 5 and memory.offset > 0  # the oldest decisions went
    path = tmp_path / "m.npz"
    save_policy(agent, spec, path)
    loaded, _ = load_policy(path)
    assert loaded.learner.memory.max_transitions == 5
    for t in range(12):
        loaded.decide(live_view(seed=40 + t, time_s=6000.0 + 10 * t))
    assert len(loaded.learner.memory) <= 5
    # A model saved before the parameter existed carries no bound: it gets the default one.
    unbounded = bound("sarsa-esn", pretrain_decisions=3, seed=4)
    old_spec = PolicySpec(
        unbounded.name, {k: v for k, v in unbounded.params.items() if k != "memory"}, unbounded.vos, unbounded.features
    )
    save_policy(agent, old_spec, tmp_path / "old.npz")
    reloaded, reloaded_spec = load_policy(tmp_path / "old.npz")
    assert (
        reloaded.learner.memory.max_transitions
        == reloaded_spec.params["memory"]
        == entry("sarsa-esn").param("memory").default
    )
    with pytest.raises(PolicyError, match="memory"):
        resolve("sarsa-esn:memory=1")


def test_mismatching_models_are_refused_in_one_line(tmp_path: Path) -> None:
    agent, spec = _trained("sarsa-esn", tmp_path)
    path = tmp_path / "m.npz"
    save_policy(agent, spec, path)
    with pytest.raises(PolicyError) as info:
        load_policy(path, expect_vos=("a", "b", "c"))
    assert str(info.value) == f"model {path} was built for VOs (a, b); the config has (a, b, c)"
    with pytest.raises(PolicyError, match="was built for features") as info:
        load_policy(path, expect_features=FeatureConfig(n_vos=2, include_wait=True))
    assert "include_wait=False" in str(info.value) and "\n" not in str(info.value)
    # Today's checkpoint without a spec (SchedulingAgent.save): refused, one line.
    old = tmp_path / "old.npz"
    agent.policy = None
    agent.save(old)
    with pytest.raises(PolicyError, match="old checkpoint without a policy spec") as info:
        load_policy(old)
    assert "\n" not in str(info.value)
    for bad, fragment in ((tmp_path / "none.npz", "no such file"), (tmp_path / "junk.npz", "not a readable")):
        if fragment != "no such file":
            bad.write_bytes(b"not a model")
        with pytest.raises(PolicyError, match=fragment) as info:
            load_policy(bad)
        assert "\n" not in str(info.value)


def test_a_narrower_saved_state_is_refused_in_one_line(tmp_path: Path) -> None:
    """A model saved before the class-queue columns existed has a narrower state: a features mismatch."""
    narrow = FeatureConfig(n_vos=2, include_class_queue=False)
    spec = resolve("sarsa-esn", pretrain_decisions=0).bound(VOS, narrow.to_dict())
    agent = build_agent(spec)
    assert isinstance(agent, SchedulingAgent)
    path = tmp_path / "narrow.npz"
    save_policy(agent, spec, path)
    with pytest.raises(PolicyError, match="include_class_queue=False") as info:
        load_policy(path, expect_vos=VOS, expect_features=FeatureConfig(n_vos=2))
    assert "\n" not in str(info.value)
