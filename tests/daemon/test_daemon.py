"""Unit tests of the daemon with an in-memory Slurm (benchmarks.bench_daemon.SyntheticSlurm): config
errors, shadow/boost/gate behaviour, never-fatal failures, backoff, checkpoints (also under kill -9),
status, and the gate watchdog's decision rule."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from rlsched.backends.common.runner import CommandTimeout, RetryPolicy
from rlsched.cli import main
from rlsched.cli.daemon import status_report
from rlsched.core.policies import BuildContext, build_agent, resolve
from rlsched.core.view import ClusterView, Decisions, FinishedJobs, JobClass, PendingJobs, RunningJobs
from rlsched.daemon import ConfigError, config_from_dict, load_config
from rlsched.daemon.state import load_counters
from tests.fakes.slurm import NOW_S, SyntheticSlurm, make_daemon, slurm_of, synthetic_squeue_json
from tests.scripts import ROOT, WATCHDOG, load_script


# ------------------------------------------------------------------------------------------ config
def test_example_config_loads_with_shadow_mode_and_localhost_metrics() -> None:
    config = load_config(ROOT / "etc" / "rlsched.toml")
    assert config.mode == "shadow" and config.metrics_host == "127.0.0.1" and config.metrics_port == 9400
    assert config.backend.vos == ("atlas", "cms", "other")


def test_defaults() -> None:
    config = config_from_dict({})
    assert (config.mode, config.agent.kind, config.metrics_host) == ("shadow", "interactive-first-sjf", "127.0.0.1")
    assert config.agent.spec.params.get("keep_idle_cores", 0) == 0


def test_keep_idle_cores_reaches_the_learning_agent() -> None:
    from rlsched.core.agents import SchedulingAgent
    from rlsched.daemon.agents import build_agent as build_daemon_agent

    config = config_from_dict(
        {
            "backend": {"mode": "gate", "partitions": ["g"], "vos": ["a", "b"], "default_vo": "a"},
            "agent": {"kind": "sarsa-esn", "keep_idle_cores": 2},
        }
    )
    agent = build_daemon_agent(config.agent, config.mode, ("a", "b"), None)
    assert isinstance(agent, SchedulingAgent) and agent.keep_idle_cores == 2 and agent.mode == "gate"


@pytest.mark.parametrize(
    ("data", "key"),
    [
        ({"backend": {"mode": "fast"}}, "backend.mode"),
        ({"backend": {"kind": "lsf"}}, "backend.kind"),
        ({"backend": {"poll_interval_s": "10"}}, "backend.poll_interval_s"),
        ({"backend": {"poll_interval_s": 0}}, "backend.poll_interval_s"),
        ({"backend": {"max_boosted": "x"}}, "max_boosted"),
        ({"agent": {"kind": "magic"}}, "agent.kind"),
        ({"agent": {"lam": 2}}, "agent.lam"),
        ({"agent": {"keep_idle_cores": -1}}, "agent.keep_idle_cores"),
        ({"agent": {"kind": "sarsa-esn"}}, "backend.vos"),
        ({"agent": {"colour": 1}}, "agent.colour"),
        ({"metrics": {"listen": "localhost"}}, "metrics.listen"),
        ({"state": {"dir": 3}}, "state.dir"),
        ({"gate": {"stale_after_s": True}}, "gate.stale_after_s"),
        ({"backend": {"mode": "gate"}}, "backend.partitions"),
        ({"backend": {"mode": "gate", "partitions": ["g"], "poll_interval_s": 60}}, "gate.stale_after_s"),
        ({"extra": {}}, "extra"),
    ],
)
def test_bad_config_is_a_one_line_error_naming_the_key(data: dict[str, Any], key: str) -> None:
    with pytest.raises(ConfigError) as info:
        config_from_dict(data, "site.toml")
    message = str(info.value)
    assert message.startswith("site.toml") and key in message and "\n" not in message


def test_bad_toml_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text("[backend\nmode = 1\n")
    with pytest.raises(ConfigError, match=r"bad\.toml: not valid TOML"):
        load_config(path)
    result = CliRunner().invoke(main, ["daemon", "--config", str(path)])
    assert result.exit_code == 2 and "bad.toml" in result.output


# ------------------------------------------------------------------------------------------ agents
def _view(**pending: Any) -> ClusterView:
    n = len(pending["job_id"])
    pend = PendingJobs(
        job_id=np.array(pending["job_id"]),
        vo=np.zeros(n, np.int64),
        job_class=np.array(pending["job_class"]),
        cores=np.array(pending["cores"]),
        req_time_s=np.array(pending["req"], float),
        submit_s=np.arange(n, dtype=float),
        oracle_run_s=np.full(n, np.nan),
        held=np.array(pending["held"]),
    )
    return ClusterView(
        time_s=100.0,
        total_cores=4,
        idle_cores=pending.get("idle", 4),
        pending=pend,
        running=RunningJobs(),
        finished=FinishedJobs(),
        vos=("a",),
    )


def test_interactive_first_sjf_puts_interactive_first_then_shortest() -> None:
    view = _view(
        job_id=[1, 2, 3, 4], job_class=[0, 1, 0, 1], cores=[2, 2, 2, 2], req=[100, 800, 50, 300], held=[True] * 4
    )
    spec = resolve("interactive-first-sjf")
    assert build_agent(spec, BuildContext(mode="boost")).decide(view).boost == (4, 2, 3, 1)
    # Gate: releases in that order while they fit in the 4 idle cores.
    assert build_agent(spec, BuildContext(mode="gate")).decide(view).release == (4, 2)


# ------------------------------------------------------------------------------------------ cycles
def scontrol_changes(runner: SyntheticSlurm) -> list[tuple[str, ...]]:
    return runner.actions()


def test_shadow_mode_decides_and_exports_but_changes_nothing(tmp_path: Path) -> None:
    runner = SyntheticSlurm(synthetic_squeue_json(50, held_fraction=0.3))
    daemon = make_daemon(runner, str(tmp_path), mode="shadow")
    for _ in range(3):
        report = daemon.cycle()
        assert not report.failed and report.decisions is not None and report.decisions.boost
    daemon.shutdown(final=True)
    assert scontrol_changes(runner) == []
    assert daemon.counters.decisions["boost"] == 3 and daemon.counters.cycles == 3


def test_boost_mode_sets_nice_for_the_top_ranked_and_undoes_on_stop(tmp_path: Path) -> None:
    runner = SyntheticSlurm(synthetic_squeue_json(200))
    daemon = make_daemon(runner, str(tmp_path), mode="boost", max_boosted=4)
    report = daemon.cycle()
    assert report.acted and report.decisions is not None and report.decisions.boost is not None
    top = report.decisions.boost[:4]
    updates = [c for c in scontrol_changes(runner) if c[1] == "update"]
    assert [c[2] for c in updates] == [f"JobId={j}" for j in top]
    nice = [int(c[3].split("=")[1]) for c in updates]
    assert nice == sorted(nice) and nice[0] < 0  # the first-ranked job gets the largest offset
    assert daemon.counters.actions["nice_set"] == 4
    runner.calls.clear()
    daemon.shutdown(final=True)
    restored = [c for c in scontrol_changes(runner) if c[1] == "update"]
    assert sorted(c[2] for c in restored) == sorted(f"JobId={j}" for j in top)
    assert all(c[3] == "Nice=0" for c in restored)
    hb = json.loads((tmp_path / "heartbeat.json").read_text())
    assert hb["stopped"] and hb["mode"] == "boost"


def test_gate_mode_releases_only_what_fits_and_releases_everything_on_stop(tmp_path: Path) -> None:
    runner = SyntheticSlurm(synthetic_squeue_json(30, n_running=0, held_fraction=1.0))
    daemon = make_daemon(runner, str(tmp_path), mode="gate", partitions=frozenset({"debug", "short"}))
    report = daemon.cycle()
    assert report.decisions is not None
    released = [int(c[2]) for c in scontrol_changes(runner) if c[1] == "release"]
    assert released == list(report.decisions.release) and released
    assert (
        report.view is not None
        and sum(int(report.view.pending.cores[report.view.pending.job_id == j][0]) for j in released)
        <= report.view.idle_cores
    )
    runner.calls.clear()
    daemon.shutdown(final=True)
    # The in-memory squeue still shows all 30 held: the stop releases every one of them.
    assert len([c for c in scontrol_changes(runner) if c[1] == "release"]) == 30


def test_failures_are_counted_and_never_fatal(tmp_path: Path) -> None:
    runner = SyntheticSlurm(synthetic_squeue_json(20))
    daemon = make_daemon(runner, str(tmp_path), mode="boost", retry=RetryPolicy(attempts=2))
    good = runner.squeue
    runner.squeue = '{"jobs": [{"job_id": "x"'  # truncated JSON
    report = daemon.cycle()
    assert report.failed == ["view"] and daemon.counters.backend_errors["parse_error"] == 2
    assert daemon.exporter.registry.get_sample_value("rlsched_backend_up") == 0.0

    def timeout(argv: Any, timeout_s: float) -> Any:
        raise CommandTimeout("no answer")

    slurm_of(daemon).executor.runner = timeout
    assert daemon.cycle().failed == ["view"] and daemon.counters.backend_errors["timeout"] == 2
    slurm_of(daemon).executor.runner = runner
    runner.squeue = good

    def broken(view: ClusterView) -> Decisions:
        raise RuntimeError("agent bug")

    real = daemon.agent.decide
    daemon.agent.decide = broken  # type: ignore[method-assign]
    assert daemon.cycle().failed == ["decide"]
    daemon.agent.decide = real  # type: ignore[method-assign]
    report = daemon.cycle()
    assert not report.failed and report.acted
    assert daemon.counters.cycle_failures == {"view": 2, "decide": 1}
    assert daemon.counters.cycles == 4


def test_backoff_doubles_per_failed_cycle_up_to_the_limit(tmp_path: Path) -> None:
    daemon = make_daemon(SyntheticSlurm(synthetic_squeue_json(1)), str(tmp_path))
    delays = [daemon.next_delay_s(True) for _ in range(12)]
    assert delays[:4] == [1.0, 2.0, 4.0, 8.0] and delays[-1] == daemon.config.max_backoff_s
    assert daemon.next_delay_s(False) == 1.0


# ------------------------------------------------------------------------------------------ learning
def finish_jobs(runner: SyntheticSlurm, ids: list[int]) -> None:
    """Mark jobs of the in-memory squeue as started and completed (the squeue completion feed)."""
    doc = json.loads(runner.squeue)
    for job in doc["jobs"]:
        if job["job_id"] in ids:
            # The feed delivers jobs that ended after it started (at the backend's clock, NOW_S).
            job.update(job_state="COMPLETED", state_reason="None", start_time=NOW_S + 10, end_time=NOW_S + 70)
    runner.squeue = json.dumps(doc)


def test_learning_agent_gets_rewards_checkpoints_and_reloads(tmp_path: Path) -> None:
    runner = SyntheticSlurm(synthetic_squeue_json(12, n_running=0, held_fraction=1.0))
    daemon = make_daemon(
        runner, str(tmp_path), mode="gate", agent="sarsa-esn", partitions=frozenset({"debug", "short"})
    )
    report = daemon.cycle()
    assert report.decisions is not None and report.decisions.release
    model = tmp_path / "agent.npz"
    first = model.read_bytes()
    released = list(report.decisions.release)
    finish_jobs(runner, released)
    report = daemon.cycle()
    assert report.view is not None and len(report.view.finished) == len(released)
    assert report.new_rewards == len(released) == daemon.counters.rewards and np.isfinite(daemon.counters.reward_sum)
    assert model.read_bytes() != first  # the checkpoint changed
    counters, saved = load_counters(tmp_path / "daemon.json")
    assert counters.rewards == daemon.counters.rewards and saved is not None
    again = make_daemon(runner, str(tmp_path), mode="gate", agent="sarsa-esn", partitions=frozenset({"debug"}))
    assert again.counters.cycles == daemon.counters.cycles
    assert len(again.agent.agent.learner.memory) == len(daemon.agent.agent.learner.memory)  # type: ignore[attr-defined]


_CHECKPOINT_LOOP = """
import sys
from tests.fakes.slurm import NOW_S, SyntheticSlurm, make_daemon, synthetic_squeue_json
d = make_daemon(SyntheticSlurm(synthetic_squeue_json(40, n_running=0, held_fraction=1.0)), sys.argv[1],
                mode="gate", agent="sarsa-esn", partitions=frozenset({"debug", "short"}))
print("ready", flush=True)
while True:
    d.cycle(); d._checkpoint(force=True)
"""


@pytest.mark.slow
def test_kill_9_at_any_moment_leaves_a_loadable_checkpoint(tmp_path: Path) -> None:
    # Each child pays ~3 s of imports on the 2-core test VM: three kills at random moments.
    rng = np.random.default_rng(0)
    for attempt in range(3):
        child = subprocess.Popen(
            [sys.executable, "-c", _CHECKPOINT_LOOP, str(tmp_path)], cwd=ROOT, stdout=subprocess.PIPE, text=True
        )
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        time.sleep(0.2 + float(rng.uniform(0, 0.4)))
        os.kill(child.pid, signal.SIGKILL)
        child.wait(10)
        counters, _ = load_counters(tmp_path / "daemon.json")
        daemon = make_daemon(
            SyntheticSlurm(synthetic_squeue_json(1)),
            str(tmp_path),
            mode="gate",
            agent="sarsa-esn",
            partitions=frozenset({"debug"}),
        )
        assert daemon.counters.cycles == counters.cycles and counters.cycles > attempt
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    assert len(leftovers) <= 3  # a kill mid-write can leave a temp file, never a torn checkpoint


# ------------------------------------------------------------------------------------------ status
def test_status_lists_pending_jobs_in_the_agents_order(tmp_path: Path) -> None:
    runner = SyntheticSlurm(synthetic_squeue_json(25))
    daemon = make_daemon(runner, str(tmp_path), mode="shadow")
    report = status_report(daemon, limit=10)
    assert len(report["order"]) == 10 and set(report["state"]) == set(daemon.agent.state_names)
    rows = report["order"]
    assert [r["score"] for r in rows] == sorted((r["score"] for r in rows), reverse=True)
    interactive = [r["class"] == "interactive" for r in rows]
    assert interactive == sorted(interactive, reverse=True)  # fixed priority: interactive first
    assert report["would"]["boost"][:10] == [r["job_id"] for r in rows]
    assert scontrol_changes(runner) == []


# ------------------------------------------------------------------------------------------ watchdog
def _watchdog_module() -> Any:
    return load_script(WATCHDOG, "rlsched_gate_watchdog")


def test_watchdog_verdicts() -> None:
    w = _watchdog_module()
    alive = {"mode": "gate", "time": 1000.0, "stale_after_s": 30, "stopped": False}
    assert w.verdict(alive, None, 1020.0) is None
    assert "old" in w.verdict(alive, None, 1031.0)
    assert w.verdict(alive, 100.0, 1031.0) is None  # --stale-after overrides
    assert w.verdict({**alive, "stopped": True}, None, 1000.0) == "daemon stopped"
    assert w.verdict(None, None, 0.0) == "no heartbeat"
    assert "boost mode" in w.verdict({**alive, "mode": "boost"}, None, 1020.0)  # not gating: release its holds


def test_job_class_names_match_the_core() -> None:
    from rlsched.exporter import CLASS_NAMES

    assert CLASS_NAMES[JobClass.BATCH] == "batch" and CLASS_NAMES[JobClass.INTERACTIVE] == "interactive"


# ------------------------------------------------------------------------------------------ runtime predictor
def _users_squeue(n_pending: int, n_running: int) -> str:
    """The synthetic squeue with jobs of three users (the predictors learn per user)."""
    doc = json.loads(synthetic_squeue_json(n_pending, n_running=n_running))
    for job in doc["jobs"]:
        job["user_name"] = f"user{job['job_id'] % 3}"
    return json.dumps(doc)


def _canon(data: Any) -> str:
    """A state as the daemon writes it (sorted keys): equal strings, bit-identical floats."""
    return json.dumps(data, sort_keys=True)


def _predicting_daemon(runner: SyntheticSlurm, state_dir: Path, runtime_model: str) -> Any:
    return make_daemon(runner, str(state_dir), mode="shadow", agent="f3", agent_params={"runtime_model": runtime_model})


def _predictor_state(daemon: Any) -> dict[str, Any]:
    from rlsched.core.runtime import PredictedRuntime

    runtime = daemon.agent.runtime
    assert isinstance(runtime, PredictedRuntime)
    return runtime.state()


@pytest.mark.parametrize("runtime_model", ["user-last2", "learned"])
def test_the_runtime_predictor_survives_a_stop_and_a_restart(tmp_path: Path, runtime_model: str) -> None:
    runner = SyntheticSlurm(_users_squeue(40, n_running=6))
    daemon = _predicting_daemon(runner, tmp_path, runtime_model)
    assert not daemon.predictor_restored  # no file yet: cold
    daemon.cycle()
    finish_jobs(runner, list(range(1000, 1012)))  # the running six and six pending ones
    daemon.cycle()
    finish_jobs(runner, list(range(1012, 1020)))
    daemon.cycle()
    daemon.shutdown(final=True)  # the final checkpoint writes it
    path = tmp_path / "predictor.json"
    saved = json.loads(path.read_text())
    assert saved == json.loads(_canon(_predictor_state(daemon)))
    assert saved["predictor"] == runtime_model and path.stat().st_mode & 0o777 == 0o600
    assert len(saved["remembered"]) == 40 - 14  # the jobs that may still finish: pending at the last view
    if runtime_model == "learned":
        assert saved["updates"] == 20
    else:
        assert len(saved["last"]) == 3
    cold = _canon(_predictor_state(_predicting_daemon(runner, tmp_path / "elsewhere", runtime_model)))
    assert _canon(saved) != cold  # what it learned is not what a fresh one knows

    again = _predicting_daemon(runner, tmp_path, runtime_model)
    assert again.predictor_restored and _canon(_predictor_state(again)) == _canon(saved)
    restored = "rlsched_runtime_predictor_restored"
    assert again.exporter.registry.get_sample_value(restored) == 1.0
    assert daemon.exporter.registry.get_sample_value(restored) == 0.0  # it had started cold
    plain = make_daemon(runner, str(tmp_path / "rule"), mode="shadow")  # no runtime predictor: no file, no gauge
    assert plain.exporter.registry.get_sample_value(restored) is None
    plain.shutdown(final=True)
    assert not (tmp_path / "rule" / "predictor.json").exists()
    # Jobs pending before the restart that finish after it train the restored predictor exactly as the
    # original, and both rank the queue alike.
    finish_jobs(runner, list(range(1020, 1030)))
    first, second = daemon.cycle(), again.cycle()
    assert _canon(_predictor_state(again)) == _canon(_predictor_state(daemon))
    assert first.decisions is not None and second.decisions is not None
    assert list(first.decisions.boost or []) == list(second.decisions.boost or [])


def test_another_predictors_state_starts_it_cold_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    runner = SyntheticSlurm(_users_squeue(10, n_running=4))
    daemon = _predicting_daemon(runner, tmp_path, "user-last2")
    daemon.cycle()
    daemon.shutdown(final=True)
    with caplog.at_level("WARNING"):
        other = _predicting_daemon(runner, tmp_path, "learned")
    assert not other.predictor_restored
    assert any("predictor.json holds what the 'user-last2' predictor learned" in r.getMessage() for r in caplog.records)
    assert other.exporter.registry.get_sample_value("rlsched_runtime_predictor_restored") == 0.0
    other.cycle()  # its first checkpoint replaces the file with its own predictor
    assert json.loads((tmp_path / "predictor.json").read_text())["predictor"] == "learned"


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("{not json", "unreadable runtime predictor state"),
        ('{"version": 1}', "key 'predictor'"),
        ('{"predictor": "learned", "version": 1, "unseen_finished": 0}', "key 'under_weight': missing"),
    ],
)
def test_a_corrupt_predictor_state_is_one_line_naming_the_file(tmp_path: Path, content: str, problem: str) -> None:
    from rlsched.daemon.state import CheckpointError

    state = tmp_path / "state"
    state.mkdir()
    path = state / "predictor.json"
    path.write_text(content)
    with pytest.raises(CheckpointError, match=re.escape(f"{path}: ")) as info:
        _predicting_daemon(SyntheticSlurm(_users_squeue(5, 2)), state, "learned")
    assert problem in str(info.value) and "\n" not in str(info.value)
    # The command line: one line, exit 2, no traceback; `rlsched config check` reports the same.
    (tmp_path / "no-bin").mkdir()
    config = tmp_path / "rlsched.toml"
    config.write_text(
        f'[backend]\nmode = "shadow"\nbin_dir = "{tmp_path / "no-bin"}"\n'
        f'[agent]\nkind = "f3"\nruntime_model = "learned"\n'
        f'[state]\ndir = "{state}"\n[metrics]\nlisten = "off"\n'
    )
    result = CliRunner().invoke(main, ["daemon", "--config", str(config)])
    assert result.exit_code == 2 and str(path) in result.output and problem in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output
    checked = CliRunner().invoke(main, ["config", "check", str(config)])
    assert checked.exit_code == 1 and str(path) in checked.output and problem in checked.output


def test_a_subset_of_the_pending_jobs_keeps_their_users_and_executables() -> None:
    from dataclasses import replace

    from rlsched.daemon.agents import _subset

    n = 4
    pend = PendingJobs(
        job_id=np.arange(1, n + 1, dtype=np.int64),
        vo=np.zeros(n, dtype=np.int64),
        job_class=np.zeros(n, dtype=np.int64),
        cores=np.ones(n, dtype=np.int64),
        req_time_s=np.full(n, 60.0),
        submit_s=np.zeros(n),
        oracle_run_s=np.full(n, np.nan),
        held=np.zeros(n, dtype=np.bool_),
        user=np.array([11, 12, 13, 14], dtype=np.int64),
        executable=np.array([21, -1, 23, 24], dtype=np.int64),
    )
    rows = np.array([3, 1], dtype=np.int64)
    subset = _subset(pend, rows)
    assert subset.job_id.tolist() == [4, 2] and subset.user.tolist() == [14, 12]
    assert subset.executable.tolist() == [24, -1]
    # Unknown for every job (an empty column) stays unknown, not a column of the wrong length.
    unknown = _subset(replace(pend, user=np.zeros(0, np.int64), executable=np.zeros(0, np.int64)), rows)
    assert len(unknown.executable) == 0 and len(unknown.user) == 0 and len(unknown) == 2
