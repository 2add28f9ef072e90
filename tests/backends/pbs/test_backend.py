"""Unit tests of the PBS backend with an injected command runner: faults a real server will not produce on
demand (timeouts, vanished jobs, truncated JSON), the priority ladder, the undo record across a restart, the
command prefix, the completion feeds.  The documents are real output (tests/data/pbs/); the behaviour against
a real OpenPBS is in tests/daemon/test_live_pbs.py and tests/backends/test_contract.py."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

import pytest

from rlsched.backends.common.runner import CommandExecutor, CommandResult, CommandTimeout, RetryPolicy
from rlsched.backends.pbs import PBSBackend, PBSBackendConfig, PBSError
from rlsched.backends.pbs.completions import CompletionFeed
from rlsched.backends.pbs.parsers import SUBJOB_ID_BASE, parse_qstat_json
from rlsched.core.live import LiveBackend, NodeControl
from rlsched.core.view import UNKNOWN_EXECUTABLE, JobClass, executable_id, user_id

DATA = Path(__file__).resolve().parents[2] / "data" / "pbs"
LIVE = (DATA / "qstat-live.json").read_text()
HISTORY = (DATA / "qstat-history.json").read_text()
NODES = (DATA / "pbsnodes-busy.json").read_text()
ACCOUNTING = (DATA / "accounting-20261123").read_text()
SERVER = (DATA / "qstat-B.json").read_text()
SORTED = 'job_sort_key: "job_priority HIGH"\tALL\n'
NOW = 1795462930.0  # just after the recorded jobs ended

Reply = CommandResult | Exception


class ScriptedRunner:
    """Answers by command name (after the prefix); a queue of replies per name (the last one repeats)."""

    def __init__(self, replies: dict[str, list[Reply]] | None = None, prefix: Sequence[str] = ()) -> None:
        self.replies = replies or {}
        self.prefix = tuple(prefix)
        self.calls: list[tuple[str, ...]] = []

    def __call__(self, argv: Sequence[str], timeout_s: float) -> CommandResult:
        self.calls.append(tuple(argv))
        assert tuple(argv[: len(self.prefix)]) == self.prefix
        name = Path(argv[len(self.prefix)]).name
        if name == "qstat" and "-B" in argv:
            name = "qstat -B"
        queue = self.replies.get(name)
        if queue is None:
            defaults = {"qstat": LIVE, "qstat -B": SERVER, "pbsnodes": NODES, "cat": SORTED}
            return CommandResult(tuple(argv), 0, defaults.get(name, ""), "")
        reply = queue.pop(0) if len(queue) > 1 else queue[0]
        if isinstance(reply, Exception):
            raise reply
        return reply


def fail(stderr: str, code: int = 1) -> CommandResult:
    return CommandResult(("x",), code, "", stderr)


def make(runner: ScriptedRunner, **config: object) -> PBSBackend:
    cfg = PBSBackendConfig(**{"vo_from": "account", "retry": RetryPolicy(attempts=2, base_delay_s=0), **config})  # type: ignore[arg-type]
    return PBSBackend(cfg, runner=runner, clock=lambda: NOW, sleep=lambda s: None)


def acted(runner: ScriptedRunner, name: str) -> list[tuple[str, ...]]:
    return [c for c in runner.calls if Path(c[len(runner.prefix)]).name == name]


def test_it_is_a_live_backend_without_node_control() -> None:
    backend = make(ScriptedRunner())
    assert isinstance(backend, LiveBackend) and not isinstance(backend, NodeControl)


def test_the_view_of_the_recorded_server() -> None:
    backend = make(ScriptedRunner(), queues=frozenset({"workq"}), vos=("atlas", "cms", "other"), default_vo="other")
    view = backend.view()
    # Pending: the array 2[] (one job), 3, 4 (held), 5, 6; running: 1 and the two running subjobs.
    assert sorted(view.pending.job_id.tolist()) == [2, 3, 4, 5, 6]
    assert sorted(view.running.job_id.tolist()) == [1, SUBJOB_ID_BASE + 2, 2 * SUBJOB_ID_BASE + 2]
    assert view.total_cores == 8 and view.idle_cores == 0 and view.cloud is None
    pending = dict(zip(view.pending.job_id.tolist(), view.pending.held.tolist(), strict=True))
    assert pending[4] and not pending[3]
    cores = dict(zip(view.pending.job_id.tolist(), view.pending.cores.tolist(), strict=True))
    assert cores[5] == 7  # select=2:ncpus=2+1:ncpus=3
    req = dict(zip(view.pending.job_id.tolist(), view.pending.req_time_s.tolist(), strict=True))
    assert req[3] == 5400 and req[6] == backend.config.unlimited_time_s
    vo = dict(zip(view.pending.job_id.tolist(), view.pending.vo.tolist(), strict=True))
    assert vo[3] == 0 and vo[6] == 2  # atlas; no Account_Name → the default VO
    classes = dict(zip(view.pending.job_id.tolist(), view.pending.job_class.tolist(), strict=True))
    assert classes[3] == JobClass.BATCH and classes[2] == JobClass.INTERACTIVE  # walltime 5 min
    counts = backend.queue_counts()
    assert counts[("workq", "lhcb", "batch", "held")] == 1 and counts[("workq", "cms", "interactive", "running")] == 1
    assert backend.job_labels()[3] == ("workq", "atlas")


def test_the_views_time_is_when_the_reads_ended_and_polled_when_they_began() -> None:
    now = [NOW]

    class SlowRunner(ScriptedRunner):
        def __call__(self, argv: Sequence[str], timeout_s: float) -> CommandResult:
            now[0] += 2.0  # each command takes two seconds
            return super().__call__(argv, timeout_s)

    cfg = PBSBackendConfig(vo_from="account", retry=RetryPolicy(attempts=2, base_delay_s=0))
    view = PBSBackend(cfg, runner=SlowRunner(), clock=lambda: now[0], sleep=lambda s: None).view()
    assert view.polled_s == NOW and view.time_s == NOW + 4.0  # qstat, then pbsnodes


def test_the_view_carries_each_jobs_user_for_the_runtime_predictors() -> None:
    backend = make(ScriptedRunner(), queues=frozenset({"workq"}))
    view = backend.view()
    names = {job.job_id: job.user for job in backend._polled}
    assert all(names[j] for j in view.pending.job_id.tolist())
    assert view.pending.user.tolist() == [user_id(names[j]) for j in view.pending.job_id.tolist()]
    assert view.running.user.tolist() == [user_id(names[j]) for j in view.running.job_id.tolist()]


def test_the_view_carries_each_jobs_executable_id_from_its_name() -> None:
    doc = json.loads(LIVE)
    del doc["Jobs"]["4.pbshost"]["Job_Name"]  # a job without a name
    backend = make(ScriptedRunner({"qstat": [CommandResult(("qstat",), 0, json.dumps(doc), "")]}))
    view = backend.view()
    pending = dict(zip(view.pending.job_id.tolist(), view.pending.executable.tolist(), strict=True))
    assert pending == {
        2: executable_id("arr"),
        3: executable_id("plain"),
        4: UNKNOWN_EXECUTABLE,
        5: executable_id("multichunk"),
        6: executable_id("nowall"),
    }
    running = dict(zip(view.running.job_id.tolist(), view.running.executable.tolist(), strict=True))
    arr = executable_id("arr")
    assert running == {1: executable_id("blocker"), SUBJOB_ID_BASE + 2: arr, 2 * SUBJOB_ID_BASE + 2: arr}


def test_out_of_scope_queues_are_left_out_and_no_job_table_is_an_empty_queue() -> None:
    view = make(ScriptedRunner(), queues=frozenset({"express"})).view()
    assert len(view.pending) == 0 and len(view.running) == 0
    empty = '{"timestamp": 1, "pbs_version": "23.06.06", "pbs_server": "pbshost"}'
    assert len(make(ScriptedRunner({"qstat": [CommandResult((), 0, empty, "")]})).view().pending) == 0


def test_every_command_runs_behind_the_prefix_as_an_argument_list() -> None:
    prefix = ("ip", "netns", "exec", "rlsched-pbs")
    runner = ScriptedRunner(prefix=prefix)
    backend = make(runner, command_prefix=prefix, bin_dir="/opt/pbs/bin")
    backend.view()
    backend.boost([3])
    backend.hold(6)
    assert (*prefix, "/opt/pbs/bin/qstat", "-x", "-f", "-t", "-F", "json") in runner.calls
    assert (*prefix, "/opt/pbs/bin/qalter", "-p", "1023", "3.pbshost") in runner.calls
    assert (*prefix, "/opt/pbs/bin/qhold", "-h", "u", "6.pbshost") in runner.calls
    assert (*prefix, "cat", "/var/spool/pbs/sched_priv/sched_config") in runner.calls
    assert (*prefix, "/opt/pbs/bin/qstat", "-B", "-f", "-F", "json") in runner.calls  # job history kept?
    assert all(call[: len(prefix)] == prefix for call in runner.calls)


def test_the_priority_ladder_and_its_undo_survive_a_restart(tmp_path: Path) -> None:
    record = tmp_path / "pbs-record.json"
    runner = ScriptedRunner()
    backend = make(runner, state_file=str(record), max_boosted=2)
    backend.view()
    backend.boost([6, 3, 5, 99])  # 99 does not exist; only the first two pending count
    assert acted(runner, "qalter") == [("qalter", "-p", "1023", "6.pbshost"), ("qalter", "-p", "1022", "3.pbshost")]
    assert backend.changes() == {"boosted": 2, "held": 0, "drained": 0}
    saved = json.loads(record.read_text())
    assert saved["original_priority"] == {"6": 0, "3": 0} and saved["pbs_ids"]["6"] == "6.pbshost"
    # A new ranking: 3 leaves it and gets its priority back (5 had its own priority 5, kept to restore).
    backend.boost([5, 6])
    assert acted(runner, "qalter")[2:] == [
        ("qalter", "-p", "0", "3.pbshost"),
        ("qalter", "-p", "1023", "5.pbshost"),
        ("qalter", "-p", "1022", "6.pbshost"),
    ]
    backend.hold(4)  # already held by its user: not ours, nothing run
    backend.hold(3)
    assert acted(runner, "qhold") == [("qhold", "-h", "u", "3.pbshost")]
    # A restarted daemon reads the record and undoes everything, by the recorded PBS ids.
    runner2 = ScriptedRunner()
    again = make(runner2, state_file=str(record))
    assert again.changes() == {"boosted": 2, "held": 1, "drained": 0}
    assert again.undo() == 3
    assert sorted(acted(runner2, "qalter")) == [("qalter", "-p", "0", "6.pbshost"), ("qalter", "-p", "5", "5.pbshost")]
    assert acted(runner2, "qrls") == [("qrls", "-h", "u", "3.pbshost")]
    assert again.changes() == {"boosted": 0, "held": 0, "drained": 0} and again.undo() == 0
    assert json.loads(record.read_text())["original_priority"] == {}


def test_an_unwritable_undo_record_changes_nothing_new_but_views_and_releases_go_on(tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    broken.write_text("")  # the record's folder is a regular file: ENOTDIR, even for root
    runner = ScriptedRunner()
    backend = make(runner, state_file=str(broken / "pbs-record.json"), max_boosted=2)
    assert len(backend.view().pending) > 0  # the feed's position is not written: no matter
    backend.boost([6, 3])
    backend.hold(5)
    assert acted(runner, "qalter") == [] and acted(runner, "qhold") == []  # no record, no change
    assert backend.changes() == {"boosted": 0, "held": 0, "drained": 0}
    backend.release(4)  # a release needs no record first: done
    assert acted(runner, "qrls") == [("qrls", "-h", "u", "4.pbshost")]
    assert backend.errors["state_write_failed"] >= 3


def test_a_vanished_job_is_counted_not_raised() -> None:
    gone = fail("qalter: Unknown Job Id 6.pbshost", 153)
    runner = ScriptedRunner(
        {
            "qalter": [gone],
            "qhold": [fail("qhold: Unknown Job Id 77.pbshost", 153)],
            "qrls": [fail("qrls: Request invalid for state of job 3.pbshost", 168)],
        }
    )
    backend = make(runner)
    backend.view()
    backend.boost([6])
    backend.hold(77)
    backend.release(3)
    assert backend.errors["vanished_job"] == 3 and backend.changes()["boosted"] == 0
    assert acted(runner, "qhold") == [("qhold", "-h", "u", "77")]  # an unknown number: no server suffix
    backend.hold(SUBJOB_ID_BASE * 8 + 2)  # a subjob the view does not have: named by array and index
    assert acted(runner, "qhold")[-1] == ("qhold", "-h", "u", "2[7]")


def test_timeouts_and_truncated_documents_are_retried_then_raised_in_one_line() -> None:
    runner = ScriptedRunner({"qstat": [CommandTimeout("no answer in 30 s"), CommandResult((), 0, LIVE[:500], "")]})
    backend = make(runner)
    with pytest.raises(PBSError) as info:
        backend.view()
    assert "\n" not in str(info.value) and "not JSON" in str(info.value)
    assert backend.errors["timeout"] == 1 and backend.errors["parse_error"] == 1
    ok = make(ScriptedRunner({"qstat": [CommandTimeout("slow"), CommandResult((), 0, LIVE, "")]}))
    assert len(ok.view().pending) == 5 and ok.errors["timeout"] == 1


@pytest.mark.parametrize(("check", "boosts"), [("warn", True), ("refuse", False), ("off", True)])
def test_the_scheduler_must_sort_on_priority(check: str, boosts: bool, caplog: pytest.LogCaptureFixture) -> None:
    runner = ScriptedRunner({"cat": [CommandResult((), 0, 'job_sort_key: "ncpus LOW"\tALL\n', "")]})
    backend = make(runner, priority_sort_check=check)
    backend.view()
    backend.boost([3])
    backend.boost([6, 3])
    assert bool(acted(runner, "qalter")) == boosts
    said = [r.getMessage() for r in caplog.records if "job_priority HIGH" in r.getMessage()]
    assert len(said) == (0 if check == "off" else 1) and len(acted(runner, "cat")) == (0 if check == "off" else 1)


def test_release_gated_releases_the_held_jobs_of_the_gated_queues() -> None:
    runner = ScriptedRunner()
    backend = make(runner, queues=frozenset({"workq"}))
    assert backend.release_gated() == 1 and acted(runner, "qrls") == [("qrls", "-h", "u", "4.pbshost")]
    fields = backend.heartbeat_fields()
    assert fields == {
        "batch_system": "pbs",
        "queues": ["workq"],
        "command_prefix": [],
        "bin_dir": None,
        "undo_record": None,
    }


def test_the_history_feed_delivers_each_completion_once_and_nothing_from_before() -> None:
    executor = CommandExecutor(lambda argv, t: CommandResult((), 0, "", ""))
    jobs = parse_qstat_json(HISTORY)
    ends = sorted({j.end_s for j in jobs if j.ran})
    # A feed that began after job 0 ended and before the others: 0 is history, not a reward.
    feed = CompletionFeed("history", executor, clock=lambda: ends[0] + 0.5)
    first = feed.poll(jobs)
    assert "0.pbshost" not in {j.pbs_id for j in first} and len(first) == 6
    assert feed.poll(jobs) == []
    restarted = CompletionFeed("history", executor, clock=lambda: NOW, state=feed.state())
    assert restarted.poll(jobs) == []


def test_the_accounting_feed_reads_on_from_where_it_stopped_and_into_the_next_day(tmp_path: Path) -> None:
    executor = CommandExecutor(lambda argv, t: CommandResult((), 0, "", ""))
    lines = ACCOUNTING.splitlines(keepends=True)
    day1, day2 = tmp_path / "20261123", tmp_path / "20261124"
    day1.write_text("".join(lines[:2]))
    feed = CompletionFeed("accounting", executor, str(tmp_path), clock=lambda: NOW)
    assert feed.poll([]) == []  # starts at the end: no replay
    day1.write_text("".join(lines[:20]) + lines[20][:30])  # a record still being written
    got = feed.poll([])
    day1.write_text("".join(lines))
    got += feed.poll([])
    last_end = next(line for line in reversed(lines) if ";E;" in line)
    day2.write_text(last_end.replace("11/23/2026", "11/24/2026").replace(last_end.split(";")[2], "8.pbshost"))
    got += feed.poll([])
    ended = [line.split(";")[2] for line in lines[2:] if ";E;" in line] + ["8.pbshost"]
    assert sorted(j.pbs_id for j in got if j.pbs_id in ended) == sorted(p for p in ended if p != "2[].pbshost")
    assert all(j.ran and math.isfinite(j.end_s) for j in got)
    state = feed.state()
    assert state["file"] == "20261124" and feed.poll([]) == []
    assert executor.errors["parse_error"] == 0


def test_a_server_without_job_history_is_named_in_one_warning(caplog: pytest.LogCaptureFixture) -> None:
    doc = json.loads(SERVER)
    for server in doc["Server"].values():
        server["job_history_enable"] = "False"
    backend = make(ScriptedRunner({"qstat -B": [CommandResult((), 0, json.dumps(doc), "")]}))
    backend.view()
    backend.view()
    said = [r.getMessage() for r in caplog.records if "job history" in r.getMessage()]
    assert len(said) == 1 and "job_history_enable = True" in said[0]
    caplog.clear()
    make(ScriptedRunner()).view()
    assert not [r for r in caplog.records if "job history" in r.getMessage()]
