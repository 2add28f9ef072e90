"""A model trained with ``rlsched sim run --save-model`` runs in the daemon (in-memory Slurm, runs anywhere)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from rlsched.cli import main
from rlsched.core.agents import SchedulingAgent
from rlsched.core.classify import ClassRule
from rlsched.core.policies import file_sha256, read_policy_spec
from rlsched.daemon import AgentStartError, ConfigError, config_from_dict
from rlsched.sim.workloads.lal import LAL_VO_NAMES
from tests.fakes.slurm import SyntheticSlurm, make_daemon, synthetic_squeue_json
from tests.workflow.conftest import write_swf

#: The VOs of the LAL-like workload, which the saved model is built for.


@pytest.mark.parametrize("mode", ["gate", "boost", "shadow"])
def test_the_daemon_loads_a_simulator_trained_model_and_uses_it(lal_model: Path, tmp_path: Path, mode: str) -> None:
    runner = SyntheticSlurm(synthetic_squeue_json(12, n_running=0, held_fraction=1.0))
    daemon = make_daemon(
        runner,
        str(tmp_path),
        mode=mode,
        model=str(lal_model),
        vos=LAL_VO_NAMES,
        partitions=frozenset({"debug", "short"}),
    )
    agent = daemon.agent.agent
    assert isinstance(agent, SchedulingAgent) and not agent.pretraining and agent.decisions > 20
    assert daemon.agent.spec is not None and daemon.agent.spec.source == {
        "path": str(lal_model),
        "sha256": file_sha256(lal_model),
    }
    report = daemon.cycle()
    assert report.decisions is not None
    if mode == "gate":
        assert report.decisions.release
    else:
        assert report.decisions.boost
    # Scores are the model's Q-values.
    order, scores = daemon.agent.ranking(report.view)  # type: ignore[arg-type]
    assert order.size and all(s == s for s in scores.tolist())


def test_the_daemon_checkpoint_records_its_source_and_resumes_from_it(lal_model: Path, tmp_path: Path) -> None:
    runner = SyntheticSlurm(synthetic_squeue_json(12, n_running=0, held_fraction=1.0))
    daemon = make_daemon(
        runner,
        str(tmp_path),
        mode="gate",
        model=str(lal_model),
        vos=LAL_VO_NAMES,
        partitions=frozenset({"debug", "short"}),
    )
    daemon.cycle()
    daemon._checkpoint(force=True)
    checkpoint = tmp_path / "agent.npz"
    spec, _ = read_policy_spec(checkpoint)
    assert spec.source == {"path": str(lal_model), "sha256": file_sha256(lal_model)} and spec.vos == LAL_VO_NAMES
    decisions = daemon.agent.agent.decisions  # type: ignore[attr-defined]
    again = make_daemon(
        runner, str(tmp_path), mode="gate", model=str(lal_model), vos=LAL_VO_NAMES, partitions=frozenset({"debug"})
    )
    assert again.agent.agent.decisions == decisions > 0  # type: ignore[attr-defined]
    # A config asking for a fresh learner refuses the checkpoint of the model, in one line.
    with pytest.raises(AgentStartError, match="holds the model of") as info:
        make_daemon(
            runner, str(tmp_path), mode="gate", agent="sarsa-esn", vos=LAL_VO_NAMES, partitions=frozenset({"debug"})
        )
    assert "\n" not in str(info.value)


def test_a_model_for_other_vos_is_refused_in_one_line(lal_model: Path, tmp_path: Path) -> None:
    runner = SyntheticSlurm(synthetic_squeue_json(3))
    with pytest.raises(AgentStartError) as info:
        make_daemon(runner, str(tmp_path), mode="boost", model=str(lal_model))
    assert str(info.value) == (
        f"model {lal_model} was built for VOs ({', '.join(LAL_VO_NAMES)}); the config has "
        "(atlas, cms, lhcb, alice, biomed)"
    )


@pytest.mark.parametrize(
    ("agent", "key", "fragment"),
    [
        ({"kind": "fixed"}, "agent.kind", 'write kind = "interactive-first-sjf"'),
        ({"kind": "sarsa"}, "agent.kind", 'kind = "sarsa-esn"'),
        ({"kind": "fqi-esn", "model": "esn"}, "agent.model", "sarsa-esn"),
        ({"kind": "native"}, "agent.kind", "cannot run live"),
        ({"kind": "sarsa-esn", "lam": 3}, "agent.lam", "must lie in [0, 1]"),
        ({"kind": "sarsa-esn", "gamma": 0.5}, "agent.gamma", "unknown parameter"),
        ({"kind": "sarsa-esn", "runtime_model": "oracle"}, "agent.runtime_model", "only a simulator"),
        ({"model": "m.npz", "lam": 1.0}, "agent.lam", "carries its own parameters"),
    ],
)
def test_agent_config_errors_name_the_key(agent: dict[str, object], key: str, fragment: str) -> None:
    data = {"backend": {"vos": ["a", "b"], "default_vo": "a"}, "agent": agent}
    with pytest.raises(ConfigError) as info:
        config_from_dict(data, "t.toml")
    assert f"key {key!r}" in str(info.value) and fragment in str(info.value) and "\n" not in str(info.value)


def test_every_live_registry_name_is_a_daemon_kind() -> None:
    from rlsched.core.policies import POLICIES

    for name, e in POLICIES.items():
        if e.live:
            config = config_from_dict(
                {
                    "backend": {"mode": "gate", "partitions": ["g"], "vos": ["a", "b"], "default_vo": "a"},
                    "agent": {"kind": name},
                }
            )
            assert config.agent.kind == name


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A model from `rlsched train --config` for the VOs and class rule of a slurm config."""
    folder = tmp_path_factory.mktemp("trained")
    config = folder / "rlsched.toml"
    config.write_text(
        '[backend]\nkind = "slurm"\nvos = ["' + '", "'.join(LAL_VO_NAMES) + '"]\ndefault_vo = "vo7"\n'
        'interactive_max_time_s = 900\n[agent]\nkind = "sarsa-esn"\n'
    )
    path = folder / "m.npz"
    swf = write_swf(folder / "t.swf", n=200)
    result = CliRunner().invoke(
        main,
        [
            "train",
            "--workload",
            str(swf),
            "--policy",
            "sarsa-esn:pretrain_decisions=20",
            "--config",
            str(config),
            "--out",
            str(path),
            "--quiet",
            "--mode",
            "gate",
            "--epochs",
            "1",
        ],
    )
    assert result.exit_code == 0, result.output
    return path


def test_the_daemon_loads_a_model_trained_for_its_class_rule(trained: Path, tmp_path: Path) -> None:
    runner = SyntheticSlurm(synthetic_squeue_json(12, n_running=0, held_fraction=1.0))
    # Whatever its verdict on so small a trace (a loss is refused: tests/daemon/test_verdict.py).
    daemon = make_daemon(
        runner,
        str(tmp_path),
        mode="boost",
        model=str(trained),
        vos=LAL_VO_NAMES,
        class_rule=ClassRule(interactive_max_time_s=900),
        allow_losing_model=True,
    )
    assert daemon.agent.spec is not None and daemon.agent.spec.class_rule == ClassRule().to_dict()


def test_a_model_for_another_class_rule_is_refused_in_one_line(trained: Path, tmp_path: Path) -> None:
    runner = SyntheticSlurm(synthetic_squeue_json(3))
    with pytest.raises(AgentStartError) as info:
        make_daemon(
            runner,
            str(tmp_path),
            mode="boost",
            model=str(trained),
            vos=LAL_VO_NAMES,
            class_rule=ClassRule(interactive_qos=frozenset({"debug"})),
        )
    assert str(info.value) == (
        f"model {trained} was built for the class rule (interactive_max_time_s=900.0, interactive_partitions=[], "
        "interactive_qos=[]); the config has (interactive_max_time_s=900.0, interactive_partitions=[], "
        "interactive_qos=['debug'])"
    )


@pytest.mark.parametrize("mode", ["boost", "shadow"])
def test_the_daemon_runs_a_saved_scored_model_as_a_ranking_agent(tmp_path: Path, mode: str) -> None:
    """A model of the direct policy search (rlsched.sim.search) loads by itself and ranks by its score."""
    from rlsched.core.policies import parse_policy, save_scored_model
    from rlsched.core.scoring import ScoredRankAgent

    spec = parse_policy("scored:weights=1/0.5/0.25/0.01")
    path = tmp_path / "scored.npz"
    save_scored_model(spec, path, search={"validation_bsld": 1.0})
    runner = SyntheticSlurm(synthetic_squeue_json(12, n_running=0, held_fraction=0.0))
    daemon = make_daemon(
        runner, str(tmp_path), mode=mode, model=str(path), vos=LAL_VO_NAMES, partitions=frozenset({"debug", "short"})
    )
    agent = daemon.agent.agent
    assert isinstance(agent, ScoredRankAgent) and not daemon.agent.learning
    assert daemon.agent.spec is not None and daemon.agent.spec.params == spec.params
    assert daemon.agent.spec.source == {"path": str(path), "sha256": file_sha256(path)}
    report = daemon.cycle()
    assert report.view is not None
    order, scores = daemon.agent.ranking(report.view)
    assert order.tolist() == agent.rank(report.view).tolist()
    assert scores.tolist() == (-agent.scores(report.view)).tolist()
    if mode == "boost":
        assert report.decisions is not None and report.decisions.boost
    assert not daemon.agent.save(tmp_path / "checkpoint.npz")  # nothing learned, nothing to checkpoint
