"""The decision log (rlsched.daemon.decision_log): crash-safe appends, rotation, reading, and the daemon
writing it in shadow mode without ever letting it stop the loop; the heartbeat's policy fields and status."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from prometheus_client import generate_latest

from rlsched.cli.daemon import _daemon_line, running_daemon, status_report
from rlsched.core.view import ClusterView, Decisions, FinishedJobs, PendingJobs, RunningJobs
from rlsched.daemon import ConfigError, config_from_dict
from rlsched.daemon.decision_log import (
    DecisionLog,
    DecisionLogConfig,
    decision_record,
    log_files,
    read_decision_log,
)
from tests.fakes.slurm import SyntheticSlurm, make_daemon, synthetic_squeue_json


def record(t: float, ids: list[int] | None = None) -> dict[str, Any]:
    ranked = [[j, float(-k), 1, 0, 0] for k, j in enumerate(ids or [1, 2])]
    return {
        "v": 1,
        "time": t,
        "mode": "shadow",
        "vos": ["a"],
        "pending": len(ranked),
        "ranked": ranked,
        "state": {},
        "would": {"top": ranked[0][0], "release": [], "hold": []},
    }


# ---------------------------------------------------------------------------------------------- the file
def test_appends_read_back_in_order_and_respect_the_time_window(tmp_path: Path) -> None:
    log = DecisionLog(tmp_path / "d.jsonl")
    for t in (30.0, 10.0, 20.0):
        log.append(record(t))
    read = read_decision_log(log.path)
    assert [r["time"] for r in read.records] == [10.0, 20.0, 30.0] and read.skipped == 0
    assert [r["time"] for r in read_decision_log(log.path, since_s=15, until_s=30).records] == [20.0]


def test_a_torn_last_line_is_skipped_counted_and_isolated_from_the_next_append(tmp_path: Path) -> None:
    log = DecisionLog(tmp_path / "d.jsonl")
    log.append(record(1.0))
    whole = json.dumps(record(2.0)).encode()
    with open(log.path, "ab") as fh:  # a kill -9 in the middle of a write
        fh.write(whole[: len(whole) // 2])
    read = read_decision_log(log.path)
    assert [r["time"] for r in read.records] == [1.0] and read.skipped == 1
    assert read.first_skipped == f"{log.path}:2"
    log.append(record(3.0))  # the restarted daemon goes on
    read = read_decision_log(log.path)
    assert [r["time"] for r in read.records] == [1.0, 3.0] and read.skipped == 1
    assert log.path.read_bytes().endswith(b"\n") and log.path.read_bytes().count(b"\n") == 3


def test_rotation_keeps_at_most_keep_files_of_at_most_max_bytes_and_the_newest_records(tmp_path: Path) -> None:
    line = len(json.dumps(record(0.0), separators=(",", ":"))) + 1
    log = DecisionLog(tmp_path / "d.jsonl", max_bytes=3 * line + 5, keep=2)
    for t in range(20):
        log.append(record(float(t)))
    files = log_files(log.path, 2)
    assert [p.name for p in files] == ["d.jsonl.2", "d.jsonl.1", "d.jsonl"]
    assert all(p.stat().st_size <= log.max_bytes for p in files)
    assert not (tmp_path / "d.jsonl.3").exists()
    times = [r["time"] for r in read_decision_log(log.path, keep=2).records]
    assert times == [float(t) for t in range(20 - len(times), 20)] and len(times) == 8  # 3 + 3 + 2
    assert log.rotations == 6


def test_keep_zero_starts_afresh(tmp_path: Path) -> None:
    line = len(json.dumps(record(0.0), separators=(",", ":"))) + 1
    log = DecisionLog(tmp_path / "d.jsonl", max_bytes=2 * line, keep=0)
    for t in range(5):
        log.append(record(float(t)))
    assert [r["time"] for r in read_decision_log(log.path, keep=0).records] == [4.0]
    assert list(tmp_path.iterdir()) == [log.path]


def test_a_full_disk_raises_oserror_to_the_caller() -> None:
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    with pytest.raises(OSError):
        DecisionLog(Path("/dev/full")).append(record(1.0))


# ---------------------------------------------------------------------------------------------- config
def test_shadow_config_defaults_and_keys(tmp_path: Path) -> None:
    config = config_from_dict({"state": {"dir": str(tmp_path)}})
    assert config.shadow == DecisionLogConfig() and config.decision_log_file == tmp_path / "decisions.jsonl"
    config = config_from_dict(
        {
            "shadow": {
                "decision_log": "/var/log/rlsched/d.jsonl",
                "max_bytes": 4096,
                "keep": 0,
                "max_jobs": 10,
                "modes": ["shadow", "boost"],
            }
        }
    )
    assert config.decision_log_file == Path("/var/log/rlsched/d.jsonl")
    assert (config.shadow.max_bytes, config.shadow.keep, config.shadow.max_jobs) == (4096, 0, 10)
    assert config.shadow.modes == ("shadow", "boost")
    assert not config_from_dict({"shadow": {"decision_log": "off"}}).shadow.enabled


@pytest.mark.parametrize(
    ("table", "key"),
    [
        ({"max_bytes": 10}, "shadow.max_bytes"),
        ({"keep": -1}, "shadow.keep"),
        ({"max_jobs": 0}, "shadow.max_jobs"),
        ({"modes": ["fast"]}, "shadow.modes"),
        ({"modes": []}, "shadow.modes"),
        ({"decision_log": ""}, "shadow.decision_log"),
        ({"rotate": 1}, "shadow.rotate"),
        ({"keep": "3"}, "shadow.keep"),
    ],
)
def test_bad_shadow_keys_are_one_line_errors(table: dict[str, Any], key: str) -> None:
    with pytest.raises(ConfigError) as info:
        config_from_dict({"shadow": table}, "site.toml")
    assert str(info.value).startswith("site.toml") and key in str(info.value) and "\n" not in str(info.value)


# ---------------------------------------------------------------------------------------------- the daemon
def test_shadow_mode_logs_each_cycles_ranking_and_changes_nothing(tmp_path: Path) -> None:
    runner = SyntheticSlurm(synthetic_squeue_json(30, held_fraction=0.3))
    daemon = make_daemon(runner, str(tmp_path), mode="shadow")
    reports = [daemon.cycle() for _ in range(3)]
    assert runner.actions() == [] and all(r.logged for r in reports)
    read = read_decision_log(tmp_path / "decisions.jsonl")
    assert len(read.records) == 3 and read.skipped == 0
    rec = read.records[-1]
    decisions = reports[-1].decisions
    assert decisions is not None and decisions.boost is not None
    assert [row[0] for row in rec["ranked"]] == list(decisions.boost)  # the agent's own order
    scores = [row[1] for row in rec["ranked"]]
    assert scores == sorted(scores, reverse=True) and rec["would"]["top"] == decisions.boost[0]
    assert rec["mode"] == "shadow" and rec["policy"] == "interactive-first-sjf" and rec["pending"] == 30
    assert set(rec["state"]) == set(daemon.agent.state_names)
    assert daemon.counters.decision_log["written"] == 3


def test_other_modes_log_only_when_configured(tmp_path: Path) -> None:
    from dataclasses import replace

    from rlsched.daemon import Daemon

    runner = SyntheticSlurm(synthetic_squeue_json(10))
    daemon = make_daemon(runner, str(tmp_path / "a"), mode="boost")
    assert daemon.decision_log is None and not daemon.cycle().logged
    config = replace(daemon.config, shadow=DecisionLogConfig(modes=("shadow", "boost")))
    daemon = Daemon(config, backend=daemon.backend)
    assert daemon.cycle().logged
    assert read_decision_log(tmp_path / "a" / "decisions.jsonl").records[0]["mode"] == "boost"


def test_an_unwritable_log_is_logged_counted_and_never_stops_the_loop(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    runner = SyntheticSlurm(synthetic_squeue_json(10))
    daemon = make_daemon(runner, str(tmp_path), mode="shadow")
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    daemon.decision_log = DecisionLog(blocker / "decisions.jsonl")  # its folder is a file: ENOTDIR
    reports = [daemon.cycle() for _ in range(3)]
    assert all(not r.failed and r.decisions is not None and not r.logged for r in reports)
    assert daemon.counters.cycles == 3 and daemon.counters.decision_log["failed"] == 3
    assert sum("cannot append" in m for m in caplog.messages) == 1  # logged once, not every cycle
    metrics = generate_latest(daemon.exporter.registry).decode()
    assert 'rlsched_decision_log_lines_total{outcome="failed"} 3.0' in metrics
    daemon.decision_log = DecisionLog(tmp_path / "decisions.jsonl")  # the disk is back
    assert daemon.cycle().logged and any("work again" in m for m in caplog.messages)


def test_a_full_disk_never_stops_the_loop(tmp_path: Path) -> None:
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    daemon = make_daemon(SyntheticSlurm(synthetic_squeue_json(10)), str(tmp_path), mode="shadow")
    daemon.decision_log = DecisionLog(Path("/dev/full"))
    report = daemon.cycle()
    assert not report.failed and not report.logged and daemon.counters.decision_log["failed"] == 1


# ---------------------------------------------------------------------------------------------- heartbeat, status
def test_the_heartbeat_says_which_policy_runs_and_status_shows_it(tmp_path: Path) -> None:
    runner = SyntheticSlurm(synthetic_squeue_json(10))
    daemon = make_daemon(runner, str(tmp_path), mode="shadow")
    daemon.write_heartbeat()
    beat = json.loads((tmp_path / "heartbeat.json").read_text())
    assert beat["policy"] == "interactive-first-sjf" and beat["model"] is None
    assert beat["decision_log"] == str(tmp_path / "decisions.jsonl")
    info = running_daemon(beat, beat["time"] + 1.0)
    assert info is not None and info["alive"] and info["age_s"] == pytest.approx(1.0)
    assert "policy interactive-first-sjf" in _daemon_line(info) and "running" in _daemon_line(info)
    assert "stale" in _daemon_line(running_daemon(beat, beat["time"] + 1e6))
    assert "no heartbeat" in _daemon_line(None)
    report = status_report(daemon, limit=5)
    assert report["daemon"]["policy"] == "interactive-first-sjf"


def test_status_prints_the_running_daemons_line_even_when_slurm_is_unreachable(tmp_path: Path) -> None:
    from rlsched.cli import main

    state = tmp_path / "state"
    config = tmp_path / "rlsched.toml"
    # No Slurm commands where bin_dir points: the cluster cannot be read (a real failure, nothing mocked).
    config.write_text(
        f'[backend]\nbin_dir = "{tmp_path / "no-bin"}"\nretry_attempts = 1\n'
        f'[state]\ndir = "{state}"\n[metrics]\nlisten = "off"\n'
    )
    state.mkdir()
    beat = {
        "pid": 1,
        "host": "h",
        "time": 0,
        "mode": "shadow",
        "policy": "sarsa-esn",
        "model": "/m.npz",
        "model_sha256": "ab" * 32,
        "model_trained": "2026-11-23T10:00:00Z",
        "model_trained_from": "model",
        "stale_after_s": 1,
    }
    (state / "heartbeat.json").write_text(json.dumps(beat))
    result = CliRunner().invoke(main, ["status", "--config", str(config)])
    lines = result.output.splitlines()
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert lines[0].startswith("daemon: silent (stale heartbeat)") and "policy sarsa-esn" in lines[0]
    assert lines[1] == "  model /m.npz (sha256 abababababab, trained 2026-11-23T10:00:00Z)"
    assert lines[-1].startswith("rlsched: cannot read the cluster") and len(lines) == 3


def test_a_model_in_shadow_mode_logs_its_q_values_and_the_heartbeat_names_the_model(tmp_path: Path) -> None:
    from rlsched.cli import main
    from rlsched.core.policies import file_sha256

    model = tmp_path / "m.npz"
    result = CliRunner().invoke(
        main,
        [
            "sim",
            "run",
            "--workload",
            "lal",
            "--scale",
            "0.05",
            "--policy",
            "sarsa-esn:pretrain_decisions=20",
            "--save-model",
            str(model),
        ],
    )
    assert result.exit_code == 0, result.output
    runner = SyntheticSlurm(synthetic_squeue_json(12, n_running=0))
    daemon = make_daemon(
        runner, str(tmp_path / "state"), mode="shadow", model=str(model), vos=tuple(f"vo{k}" for k in range(1, 8))
    )
    report = daemon.cycle()
    assert report.logged and runner.actions() == []
    rec = read_decision_log(tmp_path / "state" / "decisions.jsonl").records[0]
    assert rec["policy"] == "sarsa-esn" and rec["model_sha256"] == file_sha256(model)
    assert report.view is not None and rec["polled"] == report.view.polled_s and rec["polled"] <= rec["time"]
    assert report.view is not None and report.decisions is not None
    q = daemon.agent.q_values(report.view, daemon.agent.ranking(report.view)[0])
    assert [row[1] for row in rec["ranked"]] == pytest.approx(q.tolist(), abs=1e-5)  # scores are Q(s, a)
    assert [row[0] for row in rec["ranked"]] == list(report.decisions.boost or ())
    daemon.write_heartbeat()
    beat = json.loads((tmp_path / "state" / "heartbeat.json").read_text())
    assert beat["model"] == str(model) and beat["model_sha256"] == file_sha256(model)
    assert beat["model_trained_from"] == "file mtime" and beat["model_trained"].endswith("Z")


def test_the_logged_top_is_the_boost_order_the_agent_chose_not_its_best_score() -> None:
    """A learning agent in boost mode explores its top pick now and then: the log names what Slurm was told."""
    pend = PendingJobs(
        job_id=np.array([11, 12, 13]),
        vo=np.zeros(3, dtype=np.int64),
        job_class=np.zeros(3, dtype=np.int64),
        cores=np.ones(3, dtype=np.int64),
        req_time_s=np.full(3, 60.0),
        submit_s=np.arange(3.0),
        oracle_run_s=np.full(3, np.nan),
        held=np.zeros(3, dtype=bool),
    )
    view = ClusterView(
        time_s=10.0,
        total_cores=4,
        idle_cores=0,
        pending=pend,
        running=RunningJobs(),
        finished=FinishedJobs(),
        vos=("a",),
    )
    order, scores = np.array([0, 1, 2]), np.array([3.0, 2.0, 1.0])  # job 11 scores best
    explored = decision_record(view, order, scores, [], [], Decisions(boost=(13, 11, 12)), "boost", {}, 10)
    assert explored["would"]["top"] == 13 and explored["ranked"][0][0] == 11
    shadow_gate = decision_record(view, order, scores, [], [], Decisions(release=(12,)), "gate", {}, 10)
    assert shadow_gate["would"]["top"] == 11 and shadow_gate["would"]["release"] == [12]
    # The time the backend began reading the queue is logged where the view has it (a live backend's).
    assert "polled" not in explored
    polled = decision_record(replace(view, polled_s=8.5), order, scores, [], [], None, "shadow", {}, 10)
    assert polled["polled"] == 8.5 and polled["time"] == 10.0
