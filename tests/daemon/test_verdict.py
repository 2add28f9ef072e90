"""A model's verdict at the daemon's start: a loss refused unless allowed, no verdict a warning, the metric."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from prometheus_client import generate_latest

from rlsched.cli.config import check_config
from rlsched.core.policies import VERDICT_KEY, add_policy_metadata, read_verdict
from rlsched.daemon import AgentStartError
from rlsched.sim.workloads.lal import LAL_VO_NAMES
from tests.fakes.slurm import SyntheticSlurm, make_daemon, synthetic_squeue_json

LOSS = {
    "outcome": "loses",
    "rule": "easy-sjf",
    "gain": -0.04,
    "objective": {"name": "bsld", "class_weights": {}},
    "line": 'model loses to easy-sjf by 4 % on validation bsld: deploy easy-sjf (`[agent] kind = "easy-sjf"`)',
}
WIN = {**LOSS, "outcome": "beats", "gain": 0.12, "line": "model beats easy-sjf by 12 % on validation bsld"}


def judged(model: Path, tmp_path: Path, verdict: dict[str, object]) -> Path:
    path = tmp_path / f"{verdict['outcome']}.npz"
    add_policy_metadata(model, path, {VERDICT_KEY: verdict})
    return path


def metric_lines(daemon: object) -> list[str]:
    text = generate_latest(daemon.exporter.registry).decode()  # type: ignore[attr-defined]
    return [line for line in text.splitlines() if line.startswith("rlsched_model_verdict")]


def daemon_with(model: Path, tmp_path: Path, allow: bool = False) -> object:
    runner = SyntheticSlurm(synthetic_squeue_json(6, n_running=0))
    return make_daemon(
        runner, str(tmp_path / "state"), mode="boost", model=str(model), vos=LAL_VO_NAMES, allow_losing_model=allow
    )


def test_a_losing_model_is_refused_naming_the_rule_to_deploy(lal_model: Path, tmp_path: Path) -> None:
    losing = judged(lal_model, tmp_path, LOSS)
    assert read_verdict(losing) == LOSS
    with pytest.raises(AgentStartError) as info:
        daemon_with(losing, tmp_path)
    message = str(info.value)
    assert "\n" not in message and 'deploy easy-sjf (`[agent] kind = "easy-sjf"`)' in message
    assert "allow_losing_model = true" in message


def test_shadow_mode_watches_a_losing_model_with_a_warning(
    lal_model: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    runner = SyntheticSlurm(synthetic_squeue_json(6, n_running=0))
    make_daemon(
        runner, str(tmp_path / "state"), mode="shadow", model=str(judged(lal_model, tmp_path, LOSS)), vos=LAL_VO_NAMES
    )
    assert any("shadow mode only watches it" in r.message for r in caplog.records if r.levelname == "WARNING")


def test_allowed_it_starts_with_a_warning_and_exports_the_loss(
    lal_model: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    daemon = daemon_with(judged(lal_model, tmp_path, LOSS), tmp_path, allow=True)
    assert any("running it anyway" in r.message for r in caplog.records if r.levelname == "WARNING")
    lines = metric_lines(daemon)
    assert 'rlsched_model_verdict{objective="bsld",outcome="loses",rule="easy-sjf"} 1.0' in lines
    assert "rlsched_model_verdict_gain -0.04" in lines


def test_a_winning_model_starts_without_a_warning(
    lal_model: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    daemon = daemon_with(judged(lal_model, tmp_path, WIN), tmp_path)
    assert not [r for r in caplog.records if r.levelname == "WARNING" and "verdict" in r.message]
    assert 'rlsched_model_verdict{objective="bsld",outcome="beats",rule="easy-sjf"} 1.0' in metric_lines(daemon)


def test_a_model_without_a_verdict_loads_with_a_warning(
    lal_model: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    daemon = daemon_with(lal_model, tmp_path)
    assert any("records no verdict" in r.message for r in caplog.records if r.levelname == "WARNING")
    assert 'rlsched_model_verdict{objective="",outcome="none",rule=""} 1.0' in metric_lines(daemon)
    assert "rlsched_model_verdict_gain NaN" in metric_lines(daemon)


def config(tmp_path: Path, model: Path, extra: str = "") -> Path:
    (tmp_path / "no-bin").mkdir(exist_ok=True)
    path = tmp_path / "rlsched.toml"
    path.write_text(
        f'[backend]\nmode = "boost"\nbin_dir = "{tmp_path / "no-bin"}"\n'
        f'vos = {json.dumps(list(LAL_VO_NAMES))}\ndefault_vo = "vo1"\n[agent]\nmodel = "{model}"\n{extra}'
        f'[state]\ndir = "{tmp_path / "state"}"\n'
        '[metrics]\nlisten = "off"\n'
    )
    path.chmod(0o644)
    return path


def test_config_check_refuses_a_losing_model_unless_allowed(lal_model: Path, tmp_path: Path) -> None:
    losing = judged(lal_model, tmp_path, LOSS)
    refused = check_config(config(tmp_path, losing))
    assert not refused["ok"] and len(refused["problems"]) == 1
    assert "loses to easy-sjf" in refused["problems"][0] and "allow_losing_model" in refused["problems"][0]
    allowed = check_config(config(tmp_path, losing, "allow_losing_model = true\n"))
    assert allowed["ok"] and any("running it anyway" in w for w in allowed["warnings"])
    unjudged = check_config(config(tmp_path, lal_model))
    assert unjudged["ok"] and any("records no verdict" in w for w in unjudged["warnings"])


def test_allow_losing_model_must_be_a_boolean(lal_model: Path, tmp_path: Path) -> None:
    result = check_config(config(tmp_path, lal_model, 'allow_losing_model = "yes"\n'))
    assert not result["ok"] and "agent.allow_losing_model" in result["problems"][0]


@pytest.mark.parametrize(
    ("line", "key"),
    [
        ('objective = "slowdown"\n', "agent.objective"),
        ("class_weights = {gpu = 2}\n", "agent.class_weights"),
        ("class_weights = 3\n", "agent.class_weights"),
    ],
)
def test_a_bad_objective_names_its_key(lal_model: Path, tmp_path: Path, line: str, key: str) -> None:
    result = check_config(config(tmp_path, lal_model, line))
    assert not result["ok"] and len(result["problems"]) == 1 and f"key '{key}'" in result["problems"][0]


def test_a_model_that_is_still_its_pretraining_rule_starts_with_a_warning_that_names_the_rule(
    lal_model: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    selected = {"seed": 0, "epoch": 0, "decisions": 56, "pretraining": True}
    still = {**WIN, "pretrain_rule": "edf", "selected": selected}
    daemon_with(judged(lal_model, tmp_path, still), tmp_path)
    warned = [r.message for r in caplog.records if r.levelname == "WARNING" and "pretraining rule" in r.message]
    assert len(warned) == 1 and "(56 decisions" in warned[0] and '[agent] kind = "edf"' in warned[0]
    checked = check_config(config(tmp_path, judged(lal_model, tmp_path, still)))
    assert checked["ok"] and any("still following its pretraining rule edf" in w for w in checked["warnings"])
    # A model whose Q-function ranked by then starts as before.
    learned = {**still, "selected": {**selected, "decisions": 700, "pretraining": False}}
    assert not any(
        "pretraining" in w for w in check_config(config(tmp_path, judged(lal_model, tmp_path, learned)))["warnings"]
    )
