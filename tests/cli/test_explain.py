"""`rlsched explain JOBID` and `rlsched status --explain`, offline over the synthetic Slurm."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from rlsched.backends.slurm import SlurmBackend
from rlsched.cli import main
from rlsched.cli.daemon import status_report
from rlsched.cli.explain import ExplainError, live_explanation, log_explanation
from rlsched.daemon.config import DaemonConfig, load_config
from tests.fakes.slurm import NOW_S, SyntheticSlurm, make_daemon, synthetic_squeue_json


def _config(tmp_path: Path, kind: str = "interactive-first-sjf") -> Path:
    path = tmp_path / "rlsched.toml"
    path.write_text(f"""
[backend]
kind = "slurm"
mode = "shadow"
completion_source = "squeue"
vos = ["atlas", "cms", "lhcb", "alice", "biomed"]
default_vo = "biomed"
[agent]
kind = "{kind}"
[metrics]
listen = "off"
[state]
dir = "{tmp_path / "state"}"
""")
    return path


@pytest.fixture
def synthetic_cluster(monkeypatch: pytest.MonkeyPatch) -> SyntheticSlurm:
    """The CLI's backend answers from the synthetic Slurm (40 pending, 16 running: job ids 1000-1015)."""
    runner = SyntheticSlurm(synthetic_squeue_json(40, seed=2))

    def backend(config: Any, state_dir: Any) -> SlurmBackend:
        return SlurmBackend(config, runner=runner, sleep=lambda s: None, clock=lambda: float(NOW_S))

    monkeypatch.setattr("rlsched.cli.explain.build_backend", backend)
    monkeypatch.setattr("rlsched.cli.daemon.build_backend", backend)
    return runner


def test_explain_a_pending_job(tmp_path: Path, synthetic_cluster: SyntheticSlurm) -> None:
    config = _config(tmp_path)
    status = CliRunner().invoke(main, ["status", "--config", str(config), "--json", "--explain"])
    assert status.exit_code == 0, status.output
    rows = json.loads(status.output)["order"]
    assert rows[0]["why"] == "first" and all(r["why"] for r in rows)
    third = rows[2]["job_id"]
    result = CliRunner().invoke(main, ["explain", str(third), "--config", str(config)])
    assert result.exit_code == 0, result.output
    assert f"job {third} (live queue" in result.output and "rank 3 of 40 pending" in result.output
    assert "sort key: class" in result.output
    assert f"behind job {rows[1]['job_id']} (rank 2)" in result.output
    assert f"behind job {rows[0]['job_id']} (rank 1)" in result.output
    assert "what would change it" in result.output
    as_json = json.loads(CliRunner().invoke(main, ["explain", str(third), "--config", str(config), "--json"]).output)
    assert as_json["rank"] == 3 and as_json["ahead"][0]["reason"] == rows[2]["why"].replace(":", "", 1)
    # Nothing changed in Slurm.
    assert synthetic_cluster.actions() == []


@pytest.mark.parametrize("job_id,message", [(1003, "is not pending"), (999_999, "is not in the queue")])
def test_a_job_that_is_not_pending_is_a_one_line_error(
    job_id: int, message: str, tmp_path: Path, synthetic_cluster: SyntheticSlurm
) -> None:
    result = CliRunner().invoke(main, ["explain", str(job_id), "--config", str(_config(tmp_path))])
    assert result.exit_code == 1
    assert message in result.output and len(result.output.strip().splitlines()) == 1
    assert "Traceback" not in result.output


def test_explain_from_the_decision_log_matches_the_live_ranking(tmp_path: Path) -> None:
    runner = SyntheticSlurm(synthetic_squeue_json(30, seed=4))
    daemon = make_daemon(runner, str(tmp_path), "shadow", "sarsa-esn")
    assert daemon.cycle().logged
    report = status_report(daemon, limit=30)
    job = report["order"][5]["job_id"]
    config: DaemonConfig = daemon.config
    logged = log_explanation(config.decision_log_file, config.shadow.keep, job, 3)
    live = live_explanation(daemon, job, 3)
    assert logged["rank"] == live["rank"] == 6
    assert [a["job_id"] for a in logged["ahead"]] == [a["job_id"] for a in live["ahead"]]
    assert logged["ahead"][0]["score_gap"] == pytest.approx(live["ahead"][0]["score_gap"], abs=1e-6)
    with pytest.raises(ExplainError, match="in no cycle of the decision log"):
        log_explanation(config.decision_log_file, config.shadow.keep, 424242, 3)


def test_explain_from_a_missing_log_is_a_one_line_error(tmp_path: Path) -> None:
    config = _config(tmp_path)
    assert load_config(str(config)).decision_log_file.parent == tmp_path / "state"
    result = CliRunner().invoke(main, ["explain", "1020", "--config", str(config), "--from-log"])
    assert result.exit_code == 1 and "no decision log at" in result.output
