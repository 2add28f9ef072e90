"""The daemon's failsafes with an in-memory Slurm (tests.fakes.slurm): a heartbeat that stands for the last
working cycle, ``--once``'s exit status, an unwritable undo record, a gate-mode run's partitions carried
over a restart in another mode, and SIGHUP's reload (issue 16) — which refuses an empty, half-written or
binary file, and a fault of every cycle logged once (issue 24).  The same scenarios against the real Slurm
are in tests/daemon/test_faults_live.py."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from rlsched.backends.slurm import SlurmBackend
from rlsched.backends.slurm.config import SlurmBackendConfig
from rlsched.daemon.config import load_config
from rlsched.daemon.loop import Daemon
from tests.fakes.slurm import (
    ACCOUNTS,
    NOW_S,
    SyntheticSlurm,
    make_daemon,
    slurm_of,
    synthetic_sinfo_json,
    synthetic_squeue_json,
)
from tests.scripts import WATCHDOG, load_script


def watchdog() -> Any:
    return load_script(WATCHDOG, "rlsched_gate_watchdog_failsafes")


def heartbeat(daemon: Daemon) -> dict[str, Any]:
    return dict(json.loads(daemon.config.heartbeat_file.read_text()))


def wait_until(predicate: Any, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def running(daemon: Daemon) -> threading.Thread:
    daemon.config = dataclasses.replace(daemon.config, poll_interval_s=0.05)
    thread = threading.Thread(target=daemon.run, kwargs={"serve_metrics": False}, daemon=True)
    thread.start()
    return thread


def gate_daemon(tmp_path: Path, runner: SyntheticSlurm) -> Daemon:
    return make_daemon(runner, str(tmp_path), mode="gate", partitions=frozenset({"debug", "short"}))


def test_the_heartbeat_time_stands_still_while_views_fail_and_the_watchdog_then_releases(tmp_path: Path) -> None:
    runner = SyntheticSlurm(synthetic_squeue_json(20, held_fraction=1.0))
    daemon = gate_daemon(tmp_path, runner)
    thread = running(daemon)
    try:
        wait_until(lambda: daemon.counters.cycles >= 2)
        good, runner.squeue = runner.squeue, "\xff not json"
        wait_until(lambda: daemon.counters.cycle_failures["view"] >= 1)
        broken_at = time.time()
        last_working = heartbeat(daemon)["time"]
        wait_until(lambda: daemon.counters.cycle_failures["view"] >= 5)
        hb = heartbeat(daemon)
        # The loop is alive (the file is rewritten every cycle) but the time of the last working cycle stays.
        assert hb["written"] > broken_at and hb["time"] == last_working and hb["consecutive_failures"] >= 2
        assert hb["stopped"] is False
        assert "old" in watchdog().verdict(hb, 0.1, hb["time"] + 0.2)
        runner.squeue = good
        wait_until(lambda: heartbeat(daemon)["time"] > broken_at)
    finally:
        daemon.request_stop()
        thread.join(20)
    assert not thread.is_alive() and heartbeat(daemon)["stopped"] is True


def test_once_exits_1_after_a_failed_cycle_and_marks_the_heartbeat_stopped(tmp_path: Path) -> None:
    runner = SyntheticSlurm(synthetic_squeue_json(20))
    runner.squeue = '{"jobs": [{"job_id": "x"'
    daemon = make_daemon(runner, str(tmp_path), mode="boost")
    assert daemon.run(once=True, serve_metrics=False) == 1
    hb = heartbeat(daemon)
    assert hb["stopped"] is True and hb["consecutive_failures"] == 0
    runner.squeue = synthetic_squeue_json(20)
    again = make_daemon(runner, str(tmp_path), mode="boost")
    assert again.run(once=True, serve_metrics=False) == 0
    assert heartbeat(again)["stopped"] is True
    assert slurm_of(again).changes()["boosted"] > 0  # --once leaves its changes in place


def test_an_unwritable_undo_record_holds_nothing_but_views_and_releases_go_on(tmp_path: Path) -> None:
    runner = SyntheticSlurm(synthetic_squeue_json(30, n_running=0, held_fraction=1.0))
    daemon = gate_daemon(tmp_path, runner)
    backend = slurm_of(daemon)
    # The record's folder becomes a regular file: every write fails with ENOTDIR, even for root.
    record = tmp_path / "broken"
    record.write_text("")
    backend.config = dataclasses.replace(backend.config, state_file=str(record / "slurm-record.json"))
    report = daemon.cycle()
    assert "view" not in report.failed and "act" not in report.failed, report.failed
    assert report.decisions is not None and report.decisions.release
    assert [c for c in runner.actions() if c[1] == "release"]  # releases need no write: done
    assert backend.errors["state_write_failed"] >= 1
    runner.squeue = synthetic_squeue_json(30, n_running=0, held_fraction=0.0)
    pending = [j for j in backend.poll()[0] if j.pending and not j.held]
    runner.calls.clear()
    backend.hold(pending[0].job_id)
    assert not runner.actions() and backend.changes()["held"] == 0  # no record, no hold
    daemon.cycle()
    assert daemon.counters.backend_errors["state_write_failed"] >= 2  # counted for the metrics


def test_a_restart_in_shadow_mode_after_a_gate_crash_carries_the_gated_partitions(tmp_path: Path) -> None:
    runner = SyntheticSlurm(synthetic_squeue_json(20, held_fraction=1.0))
    gate = gate_daemon(tmp_path, runner)
    gate.cycle()
    gate.write_heartbeat()  # then kill -9: no stop, no release
    crashed = heartbeat(gate)
    assert crashed["gated_partitions"] == ["debug", "short"] and crashed["mode"] == "gate"
    shadow = make_daemon(runner, str(tmp_path), mode="shadow")
    shadow.write_heartbeat()
    hb = heartbeat(shadow)
    assert hb["mode"] == "shadow" and hb["gated_partitions"] == ["debug", "short"]
    w = watchdog()
    # Fresh, but not gating: the watchdog releases the gated partitions now, not after stale_after_s.
    assert "shadow mode" in w.verdict(hb, None, hb["time"])
    assert w.gated_partitions(hb) == ["debug", "short"]
    # A clean stop of a gate-mode run ends the carrying.
    gate = gate_daemon(tmp_path, runner)
    gate.shutdown(final=True)
    assert make_daemon(runner, str(tmp_path), mode="shadow").gated_partitions == []


def test_the_watchdog_releases_what_the_undo_record_holds_whatever_the_mode(tmp_path: Path) -> None:
    record = tmp_path / "slurm-record.json"
    record.write_text(json.dumps({"version": 1, "held_by_rlsched": [12, 13]}))
    w = watchdog()
    hb = {
        "mode": "boost",
        "time": 100.0,
        "stale_after_s": 30,
        "stopped": False,
        "partitions": ["debug"],
        "gated_partitions": [],
        "undo_record": str(record),
    }
    assert w.recorded_holds(hb) == {"12", "13"}
    assert w.gated_partitions(hb) == []  # boost's scope is not a gate: its user holds stay
    assert w.verdict(hb, None, 110.0) is not None
    assert w.verdict({**hb, "mode": "gate"}, None, 110.0) is None
    assert w.gated_partitions({**hb, "mode": "gate", "gated_partitions": None}) == ["debug"]  # old heartbeat


def test_the_watchdog_reads_the_pbs_undo_record_by_short_id(tmp_path: Path) -> None:
    record = tmp_path / "pbs-record.json"
    record.write_text(
        json.dumps(
            {
                "version": 1,
                "held_by_rlsched": [12, 2013, True],
                "pbs_ids": {"12": "12.pbshost", "2013": "13[].pbshost", "14": "14.pbshost"},
            }
        )
    )
    w = watchdog()
    hb = {
        "mode": "boost",
        "batch_system": "pbs",
        "queues": ["workq"],
        "gated_partitions": [],
        "undo_record": str(record),
    }
    assert w.recorded_pbs_holds(hb) == {"12", "13[]"}  # 14 is boosted, not held; True is no job id
    record.write_text("{not json")
    assert w.recorded_pbs_holds(hb) == set()
    assert w.recorded_pbs_holds({**hb, "undo_record": None}) == set()


def write_config(path: Path, daemon: Daemon, mode: str, extra: str = "") -> None:
    path.write_text(f"""
[backend]
mode = "{mode}"
partitions = ["debug", "short"]
poll_interval_s = 1
[state]
dir = "{daemon.config.state_dir}"
{extra}""")


def test_sighup_keeps_the_running_config_when_the_file_is_bad_and_stops_cleanly_for_a_new_mode(tmp_path: Path) -> None:
    runner = SyntheticSlurm(synthetic_squeue_json(30, n_running=0, held_fraction=1.0))
    daemon = gate_daemon(tmp_path, runner)
    config = tmp_path / "rlsched.toml"
    config.write_text("[backend\nmode = ")
    daemon.config = dataclasses.replace(daemon.config, source=str(config))
    thread = running(daemon)
    try:
        wait_until(lambda: daemon.counters.cycles >= 1)
        daemon.request_reload()
        cycles = daemon.counters.cycles
        wait_until(lambda: daemon.counters.cycles >= cycles + 2)  # bad file: the loop goes on
        assert thread.is_alive() and daemon.reload_config is None
        assert daemon.counters.cycle_failures["reload"] == 1
        write_config(config, daemon, "shadow")
        runner.calls.clear()
        daemon.request_reload()
        thread.join(20)
    finally:
        daemon.request_stop()
        thread.join(20)
    assert not thread.is_alive()
    assert daemon.reload_config is not None and daemon.reload_config.mode == "shadow"
    # Another mode: the gate's jobs were released and the heartbeat marked stopped before the new daemon.
    assert [c for c in runner.actions() if c[1] == "release"]
    assert heartbeat(daemon)["stopped"] is True


def test_a_reload_keeps_the_changes_only_for_the_same_mode_state_dir_and_backend(tmp_path: Path) -> None:
    daemon = gate_daemon(tmp_path, SyntheticSlurm(synthetic_squeue_json(5)))
    daemon.reload_config = dataclasses.replace(daemon.config, poll_interval_s=2.0)
    assert daemon._reload_keeps_changes()
    for change in (
        {"mode": "shadow"},
        {"state_dir": str(tmp_path / "elsewhere")},
        {"backend": dataclasses.replace(slurm_of(daemon).config, partitions=frozenset({"debug"}))},
    ):
        daemon.reload_config = dataclasses.replace(daemon.config, **change)
        assert not daemon._reload_keeps_changes(), change


def file_gate_daemon(tmp_path: Path, runner: SyntheticSlurm) -> tuple[Daemon, Path]:
    """A gate daemon built from a config file, as ``rlsched daemon`` builds it (the running config knows which
    tables and keys the file set), over ``runner``."""
    path = tmp_path / "rlsched.toml"
    path.write_text(f"""[backend]
mode = "gate"
partitions = ["debug", "short"]
completion_source = "squeue"
vos = {json.dumps(list(ACCOUNTS))}
default_vo = "{ACCOUNTS[-1]}"
state_file = "{tmp_path / "slurm-record.json"}"
poll_interval_s = 1
[state]
dir = "{tmp_path}"
checkpoint_every_s = 0
[metrics]
listen = "off"
[gate]
stale_after_s = 100
""")
    config = load_config(path, require_mode=True)
    assert isinstance(config.backend, SlurmBackendConfig)
    backend = SlurmBackend(config.backend, runner=runner, sleep=lambda s: None, clock=lambda: float(NOW_S))
    return Daemon(config, backend=backend), path


def test_sighup_with_an_empty_a_half_written_or_a_binary_config_leaves_the_gate_daemon_as_it_was(
    tmp_path: Path,
) -> None:
    # No idle core: a working gate daemon releases nothing, so any release would come from a stop.
    runner = SyntheticSlurm(synthetic_squeue_json(30, held_fraction=1.0), sinfo=synthetic_sinfo_json(idle_cpus=0))
    daemon, path = file_gate_daemon(tmp_path, runner)
    good = path.read_text()
    running_config = daemon.config
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGHUP, signal.SIGTERM, signal.SIGINT)}
    daemon.install_signal_handlers()  # the main thread's handlers, as in `rlsched daemon`
    thread = threading.Thread(target=daemon.run, kwargs={"serve_metrics": False}, daemon=True)
    thread.start()
    try:
        wait_until(lambda: daemon.counters.cycles >= 1)
        assert not runner.actions()
        faults = {
            "empty": b"",
            # cut right after [backend]'s table: valid TOML, everything else at its default
            "half-written": good.split("[state]")[0].encode(),
            "binary": b"\x89PNG\r\n\x1a\n\xff\xfe[backend]\n",
        }
        for n, (name, content) in enumerate(faults.items(), 1):
            path.write_bytes(content)
            os.kill(os.getpid(), signal.SIGHUP)
            wait_until(lambda n=n: daemon.counters.cycle_failures["reload"] == n)
            cycles = daemon.counters.cycles
            wait_until(lambda c=cycles: daemon.counters.cycles >= c + 2)
            assert thread.is_alive(), name
            assert daemon.reload_config is None and daemon.config is running_config, name
            assert daemon.config.mode == "gate" and daemon.config.poll_interval_s == 1.0, name
            hb = heartbeat(daemon)
            assert hb["mode"] == "gate" and hb["stopped"] is False, name
            assert hb["gated_partitions"] == ["debug", "short"] and hb["stale_after_s"] == 100, name
            assert not runner.actions(), (name, runner.actions())  # nothing released, nothing undone
        assert daemon.counters.cycle_failures["reload"] == 3
    finally:
        daemon.request_stop()
        thread.join(20)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    assert not thread.is_alive()
    assert daemon.reload_config is None


def test_a_reload_that_drops_a_key_of_the_running_config_is_refused(tmp_path: Path) -> None:
    runner = SyntheticSlurm(synthetic_squeue_json(5))
    daemon, path = file_gate_daemon(tmp_path, runner)
    good = path.read_text()
    # Cut inside [gate], the last table: stale_after_s would fall back to 120 s.
    path.write_text(good.replace("stale_after_s = 100\n", ""))
    daemon.reload_requested = True
    assert daemon._take_reload() is False and daemon.reload_config is None
    assert daemon.counters.cycle_failures["reload"] == 1
    # The same file whole again (a new poll interval): taken.
    path.write_text(good.replace("poll_interval_s = 1\n", "poll_interval_s = 2\n"))
    daemon.reload_requested = True
    assert daemon._take_reload() is True
    assert daemon.reload_config is not None and daemon.reload_config.poll_interval_s == 2.0


def test_a_checkpoint_failing_every_cycle_is_logged_once_and_its_recovery_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    runner = SyntheticSlurm(synthetic_squeue_json(20))
    daemon = make_daemon(runner, str(tmp_path), mode="boost")
    daemon.config.counters_file.mkdir()  # a directory where the counters go: every write fails, even root's
    with caplog.at_level(logging.INFO):
        reports = [daemon.cycle() for _ in range(20)]
        assert all(r.failed == ["checkpoint"] for r in reports)
        assert daemon.counters.cycle_failures["checkpoint"] == 20  # every failure counted
        failures = [r for r in caplog.records if r.getMessage().startswith("cycle: checkpoint failed")]
        assert len(failures) == 1 and failures[0].levelno == logging.ERROR and failures[0].exc_info is not None
        daemon.config.counters_file.rmdir()
        assert not daemon.cycle().failed
        daemon.cycle()
    recovered = [m for m in caplog.messages if m.startswith("cycle: checkpoint works again")]
    assert len(recovered) == 1


def test_the_watchdog_picks_the_release_routine_of_the_heartbeats_batch_system(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    w = watchdog()
    assert sorted(w.RELEASERS) == ["pbs", "slurm"]
    calls: list[tuple[str, list[str], set[str], str]] = []

    def fake(name: str) -> Any:
        def release(scope: list[str], job_ids: set[str], args: Any, heartbeat: dict, reason: str) -> int:
            calls.append((name, scope, job_ids, reason))
            return 0

        return release

    for name, releaser in list(w.RELEASERS.items()):
        w.RELEASERS[name] = w.Releaser(releaser.name, releaser.scope_key, releaser.recorded, fake(name))
    beat = tmp_path / "heartbeat.json"
    args = w.argparse.Namespace(heartbeat=str(beat), now=False, stale_after=None, batch_system=None, partitions=None)
    beat.write_text(json.dumps({"mode": "gate", "time": 0.0, "batch_system": "pbs", "queues": ["workq"]}))
    assert w.check_once(args) == 0
    beat.write_text(json.dumps({"mode": "gate", "time": 0.0, "gated_partitions": ["debug"]}))
    assert w.check_once(args) == 0
    assert [(name, scope) for name, scope, _, _ in calls] == [("pbs", ["workq"]), ("slurm", ["debug"])]
    assert all("old" in reason for *_, reason in calls)
    beat.write_text(json.dumps({"mode": "gate", "time": 0.0, "batch_system": "lsf", "gated_partitions": ["q"]}))
    capsys.readouterr()
    assert w.check_once(args) == 2
    said = capsys.readouterr().err.strip().splitlines()
    assert len(said) == 1 and "batch system 'lsf'" in said[0] and "known: pbs, slurm" in said[0]
