"""Unit tests of the Slurm backend with an injected command runner: faults a real cluster will not
produce on demand (timeouts, refusals, truncated JSON), the boost ladder, the undo record, the
completion feeds and the configuration.  The samples are real output (tests/data/slurm/)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from rlsched.backends import UnknownBackendError, backend_config_from_table, build_backend
from rlsched.backends.common.runner import CommandExecutor, CommandResult, CommandTimeout, RetryPolicy
from rlsched.backends.slurm import SlurmBackend, SlurmBackendConfig, SlurmCommandError
from rlsched.backends.slurm.completions import SACCT_PARTITION_WAIT_S, CompletionFeed, detect_source
from rlsched.core.classify import ClassRule, VOMapping
from rlsched.core.live import LiveBackend, NodeControl
from rlsched.core.view import UNKNOWN_EXECUTABLE, Backend, JobClass, executable_id, user_id

DATA = Path(__file__).resolve().parents[2] / "data" / "slurm"
SQUEUE = (DATA / "squeue-mixed.json").read_text()
SINFO = (DATA / "sinfo-cloud.json").read_text()
CONFIG = (DATA / "scontrol-show-config.txt").read_text()

Reply = CommandResult | Exception


class FakeRunner:
    """Answers by command name; a queue of replies per name (the last one repeats)."""

    def __init__(self, replies: dict[str, list[Reply]] | None = None) -> None:
        self.replies = replies or {}
        self.calls: list[tuple[str, ...]] = []

    def __call__(self, argv: Sequence[str], timeout_s: float) -> CommandResult:
        self.calls.append(tuple(argv))
        key = argv[0] if argv[0] != "scontrol" else f"scontrol {argv[1]}"
        queue = self.replies.get(key)
        if queue is None:
            defaults = {"squeue": SQUEUE, "sinfo": SINFO, "scontrol show": CONFIG}
            return ok(argv, defaults.get(key, ""))
        reply = queue.pop(0) if len(queue) > 1 else queue[0]
        if isinstance(reply, Exception):
            raise reply
        return reply


def ok(argv: Sequence[str], stdout: str = "") -> CommandResult:
    return CommandResult(tuple(argv), 0, stdout, "")


def fail(stderr: str, code: int = 1) -> CommandResult:
    return CommandResult(("x",), code, "", stderr)


def make(
    runner: FakeRunner, sleeps: list[float] | None = None, clock: Callable[[], float] | None = None, **config: object
) -> SlurmBackend:
    sleeps = [] if sleeps is None else sleeps
    cfg = SlurmBackendConfig(completion_source=str(config.pop("completion_source", "squeue")), **config)  # type: ignore[arg-type]
    return SlurmBackend(cfg, runner=runner, sleep=sleeps.append, clock=clock or (lambda: 1795317000.0))


def test_it_is_a_backend() -> None:
    assert isinstance(make(FakeRunner()), Backend)
    assert isinstance(make(FakeRunner()), LiveBackend) and isinstance(make(FakeRunner()), NodeControl)


def test_the_registry_builds_it_with_its_record_in_the_state_dir_and_refuses_unknown_kinds(tmp_path: Path) -> None:
    config = backend_config_from_table({"kind": "slurm", "partitions": ["debug"]}, "x.toml: [backend]")
    assert isinstance(config, SlurmBackendConfig) and config.kind == "slurm" and config.gate_problem() is None
    backend = build_backend(config, tmp_path)
    assert isinstance(backend, SlurmBackend) and backend.config.state_file == str(tmp_path / "slurm-record.json")
    read_only = build_backend(config, None)
    assert isinstance(read_only, SlurmBackend) and read_only.config.state_file is None
    assert SlurmBackendConfig().gate_problem() is not None
    with pytest.raises(UnknownBackendError, match="unknown backend kind 'lsf' \\(known: pbs, slurm\\)"):
        backend_config_from_table({"kind": "lsf"})


def test_it_answers_the_daemons_questions_from_its_last_poll() -> None:
    b = make(FakeRunner(), partitions=frozenset({"debug"}), slurm_conf="/etc/s.conf")
    view = b.view()
    counts = b.queue_counts()
    held = int(view.pending.held.sum())
    by_state = {s: sum(n for k, n in counts.items() if k[3] == s) for s in ("pending", "held", "running")}
    assert by_state == {"pending": len(view.pending) - held, "held": held, "running": len(view.running)}
    assert counts and all("debug" in k[0].split(",") for k in counts)
    labels = b.job_labels()
    assert set(view.pending.job_id.tolist()) <= set(labels)
    assert b.heartbeat_fields() == {
        "partitions": ["debug"],
        "slurm_conf": "/etc/s.conf",
        "bin_dir": None,
        "undo_record": None,
    }
    assert b.changes() == {"boosted": 0, "held": 0, "drained": 0} and b.boost_limit == 32


def test_the_views_time_is_when_the_reads_ended_and_polled_when_they_began() -> None:
    """A job can start while squeue and sinfo run: the view says when its reads began (the shadow report's
    window opens there), and its time is when they ended (every job it shows was submitted by then)."""
    now = [1795317000.0]

    class SlowRunner(FakeRunner):
        def __call__(self, argv: Sequence[str], timeout_s: float) -> CommandResult:
            now[0] += 2.0  # each command takes two seconds on a busy controller
            return super().__call__(argv, timeout_s)

    view = make(SlowRunner(), clock=lambda: now[0]).view()
    assert view.polled_s == 1795317000.0 and view.time_s == 1795317004.0  # squeue, then sinfo
    # A wall clock stepped back during the reads: the view is still well formed.
    steps = iter([1795317010.0, 1795317000.0])
    stepped = make(FakeRunner(), clock=lambda: next(steps, 1795317000.0)).view()
    assert stepped.polled_s == stepped.time_s == 1795317000.0


def test_holding_an_ended_job_counts_it_as_vanished_without_a_command() -> None:
    runner = FakeRunner()
    b = make(runner)
    b.poll()
    ended = next(job.job_id for job in b._polled if not job.pending and not job.active)
    before = len(runner.calls)
    b.hold(ended)
    assert b.errors["vanished_job"] == 1 and len(runner.calls) == before and b.changes()["held"] == 0


def test_node_states_are_backend_neutral() -> None:
    b = make(FakeRunner())
    b.poll()
    states = {n.name: n for n in b.nodes()}
    assert {name for name, n in states.items() if n.cloud} == {"cloud1", "cloud2", "cloud3", "cloud4"}
    assert all(n.powered_down and not n.leased and not n.up for n in states.values() if n.cloud)
    assert states["node1"].up and not states["node1"].cloud
    b.drain_nodes(["cloud2"], "rlsched_lease_cap")
    assert b.drained_nodes() == frozenset({"cloud2"}) and b.changes()["drained"] == 1
    b.forget_drained(["cloud2"])
    assert b.drained_nodes() == frozenset() and b.undo() == 0


def test_view_from_recorded_samples() -> None:
    b = make(FakeRunner(), class_rule=ClassRule(interactive_qos=frozenset({"express"})))
    view = b.view()
    assert view.pending.job_id.tolist() == [8, 9, 10]
    assert view.pending.held.tolist() == [False, True, False]
    assert view.running.job_id.tolist() == [7]
    # time limit 5 min <= 900 s: interactive; unlimited: batch.
    assert view.pending.job_class.tolist() == [JobClass.INTERACTIVE, JobClass.BATCH, JobClass.BATCH]
    # Unnamed accounts are a VO of their own ("") — the sample has finished jobs without --account.
    assert view.vos == ("cms", "lhcb", "atlas", "")
    assert (view.total_cores, view.idle_cores) == (16, 0)
    assert view.cloud is not None and (view.cloud.nodes_total, view.cloud.nodes_powered) == (4, 0)
    # squeue feed: jobs that ran and ended after the backend started (clock 1795317000); 4 and 5 never ran.
    assert set(view.finished.job_id.tolist()) == {1, 3, 6}
    assert (view.finished.run_s >= 0).all() and (view.finished.wait_s >= 0).all()
    assert len(b.view().finished) == 0  # delivered once


def test_the_view_carries_each_jobs_user_for_the_runtime_predictors() -> None:
    b = make(FakeRunner())
    view = b.view()
    names = {job.job_id: job.user for job in b._polled}
    assert all(names[j] for j in view.pending.job_id.tolist())  # the sample names every user
    assert view.pending.user.tolist() == [user_id(names[j]) for j in view.pending.job_id.tolist()]
    assert view.running.user.tolist() == [user_id(names[j]) for j in view.running.job_id.tolist()]


def test_the_view_carries_each_jobs_executable_id_from_its_name() -> None:
    # The recorded sample with job 8 renamed, job 9's name taken away and running job 7's name blank.
    doc = json.loads(SQUEUE)
    jobs = {job["job_id"]: job for job in doc["jobs"]}
    jobs[8]["name"] = "sim-a"
    del jobs[9]["name"]
    jobs[7]["name"] = "  "
    view = make(FakeRunner({"squeue": [ok(("squeue",), json.dumps(doc))]})).view()
    assert view.pending.job_id.tolist() == [8, 9, 10] and view.running.job_id.tolist() == [7]
    weird = 'weird | name "x" JobState=FAILED Partition=x'
    assert view.pending.executable.tolist() == [executable_id("sim-a"), UNKNOWN_EXECUTABLE, executable_id(weird)]
    assert view.running.executable.tolist() == [UNKNOWN_EXECUTABLE]
    assert executable_id("sim-a") != executable_id("wrap")  # each name its own id: the column is no constant
    # The recorded names as they are: every job ran `sbatch --wrap` ("wrap").
    view = make(FakeRunner()).view()
    assert view.pending.executable.tolist()[:2] == [executable_id("wrap")] * 2
    assert view.running.executable.tolist() == [executable_id("wrap")]


def test_partition_scope_filters_jobs_and_nodes() -> None:
    view = make(FakeRunner(), partitions=frozenset({"cloud"})).view()
    assert len(view.pending) == 0 and len(view.running) == 0
    assert view.total_cores == 0 and view.cloud is not None and view.cloud.nodes_total == 4


def test_transient_failures_are_retried_with_exponential_backoff_and_counted() -> None:
    runner = FakeRunner(
        {
            "squeue": [
                fail("slurm_load_jobs error: Unable to contact slurm controller"),
                CommandResult(("squeue",), 0, SQUEUE[:500], ""),
                CommandTimeout("no answer in 30 s"),
                ok(("squeue",), SQUEUE),
            ]
        }
    )
    sleeps: list[float] = []
    b = make(runner, sleeps, retry=RetryPolicy(attempts=4, base_delay_s=0.5, max_delay_s=8))
    assert len(b.view().pending) == 3
    assert sleeps == [0.5, 1.0, 2.0]
    assert b.errors == {"nonzero_exit": 1, "parse_error": 1, "timeout": 1}


def test_persistent_failure_raises_after_the_last_attempt() -> None:
    runner = FakeRunner({"squeue": [CommandTimeout("no answer in 30 s")]})
    sleeps: list[float] = []
    b = make(runner, sleeps, retry=RetryPolicy(attempts=3, base_delay_s=1, max_delay_s=1.5))
    with pytest.raises(SlurmCommandError, match="squeue --json: timeout") as info:
        b.view()
    assert info.value.kind == "timeout" and b.errors["timeout"] == 3 and sleeps == [1.0, 1.5]


def test_missing_command_is_not_retried() -> None:
    b = make(FakeRunner({"squeue": [FileNotFoundError("squeue")]}))
    with pytest.raises(SlurmCommandError, match="missing_command"):
        b.view()
    assert b.errors == {"missing_command": 1}


def test_vanished_job_is_counted_not_retried_not_raised() -> None:
    runner = FakeRunner(
        {
            "scontrol update": [fail("Invalid job id specified for job 8")],
            "scontrol hold": [fail("Job has already finished for job 8")],
        }
    )
    b = make(runner)
    b.view()
    b.boost([8])
    b.hold(8)
    assert b.errors == {"vanished_job": 2}
    assert b.record.original_nice == {} and b.held_by_rlsched == set()
    assert sum(call[:2] == ("scontrol", "update") for call in runner.calls) == 1


def test_scontrol_refusal_is_retried_then_raised_and_the_record_kept(tmp_path: Path) -> None:
    runner = FakeRunner({"scontrol update": [fail("Unable to contact slurm controller")]})
    state = tmp_path / "record.json"
    b = make(runner, state_file=str(state))
    b.view()
    with pytest.raises(SlurmCommandError, match="nonzero_exit"):
        b.boost([8])
    assert b.errors["nonzero_exit"] == 3
    # Recorded before the attempt: a later undo will still restore job 8's Nice.
    assert json.loads(state.read_text())["original_nice"] == {"8": 0}


def test_boost_ladder_orders_ranked_jobs_above_any_multifactor_priority() -> None:
    runner = FakeRunner()
    b = make(runner)
    b.view()
    b.boost([10, 9, 8, 424242, 10])  # unknown and duplicate ids are ignored
    updates = [c for c in runner.calls if c[:2] == ("scontrol", "update")]
    assert updates == [
        ("scontrol", "update", "JobId=10", "Nice=-30000"),
        ("scontrol", "update", "JobId=9", "Nice=-20000"),
        ("scontrol", "update", "JobId=8", "Nice=-10000"),
    ]
    # The step (10000) exceeds the sum of the PriorityWeight* settings of the sample config (2000).
    assert b.nice_step() == 10000
    assert b.record.original_nice == {10: 0, 9: 100, 8: 0}
    runner.calls.clear()
    b.boost([10, 9, 8])  # same ranking: nothing to do
    assert runner.calls == []
    b.boost([8])  # 10 and 9 leave the ranking: their own Nice comes back
    updates = [c[2:] for c in runner.calls if c[:2] == ("scontrol", "update")]
    # The ladder counts from the bottom rank: job 8 keeps its offset, no call for it.
    assert updates == [("JobId=10", "Nice=0"), ("JobId=9", "Nice=100")]
    assert b.undo() == 1 and b.record.original_nice == {}


def test_max_boosted_limits_the_ladder() -> None:
    runner = FakeRunner()
    b = make(runner, max_boosted=1)
    b.view()
    b.boost([9, 8])
    assert [c[2:] for c in runner.calls if c[:2] == ("scontrol", "update")] == [("JobId=9", "Nice=-10000")]


def test_record_survives_a_restart_and_undo_finishes_the_job(tmp_path: Path) -> None:
    state = tmp_path / "record.json"
    first = make(FakeRunner(), state_file=str(state))
    first.view()
    first.boost([8, 10])
    first.hold(8)
    first.set_lease_cap(1)
    runner = FakeRunner()
    second = make(runner, state_file=str(state))
    assert second.record.original_nice == {8: 0, 10: 0} and second.held_by_rlsched == {8}
    assert second.record.drained_by_rlsched == {"cloud2", "cloud3", "cloud4"}
    assert second.undo() == 6
    assert ("scontrol", "update", "NodeName=cloud2,cloud3,cloud4", "State=RESUME") in runner.calls
    assert ("scontrol", "release", "8") in runner.calls
    assert json.loads(state.read_text())["original_nice"] == {}


def test_bad_record_file_is_a_clear_error(tmp_path: Path) -> None:
    state = tmp_path / "record.json"
    state.write_text("{not json")
    with pytest.raises(ValueError, match=r"record\.json: unreadable rlsched Slurm record"):
        make(FakeRunner(), state_file=str(state))


def test_lease_cap_keeps_busy_nodes_and_drains_the_rest() -> None:
    runner = FakeRunner()
    b = make(runner)
    b.view()
    b.set_lease_cap(3)
    assert ("scontrol", "update", "NodeName=cloud4", "State=DRAIN", "Reason=rlsched_lease_cap") in runner.calls
    b.set_lease_cap(4)
    assert ("scontrol", "update", "NodeName=cloud4", "State=RESUME") in runner.calls
    with pytest.raises(ValueError, match="lease cap must be >= 0"):
        b.set_lease_cap(-1)


# ------------------------------------------------------------------------------------------ completions


def jobcomp_line(job_id: int, name: str = "wrap", start: str = "2026-11-22T03:09:16") -> str:
    return (
        f"JobId={job_id} UserId=root(0) GroupId=root(0) Name={name} JobState=COMPLETED Partition=debug "
        f"TimeLimit=10 StartTime={start} EndTime=2026-11-22T03:09:46 NodeList=node1 NodeCnt=1 ProcCnt=2 "
        "WorkDir=/tmp ReservationName= Tres=cpu=2,node=1 Account=atlas QOS= WcKey= Cluster=unknown "
        "SubmitTime=2026-11-22T03:09:00 EligibleTime=unknown DerivedExitCode=0:0 ExitCode=0:0 \n"
    )


def test_jobcomp_feed_reads_new_whole_lines_once(tmp_path: Path) -> None:
    path = tmp_path / "jobcomp.txt"
    path.write_text(jobcomp_line(1))
    feed = CompletionFeed("jobcomp", CommandExecutor(FakeRunner()), jobcomp_path=str(path))
    assert feed.poll([]) == []  # history before the start is not replayed
    with path.open("a") as fh:
        fh.write(jobcomp_line(2, name="a b JobState=FAILED x=y"))
        fh.write("garbage line\n")
        fh.write(jobcomp_line(3)[:40])  # still being written
    done = feed.poll([])
    assert [j.job_id for j in done] == [2] and feed.executor.errors["parse_error"] == 1
    assert done[0].start_s - done[0].submit_s == 16 and done[0].end_s - done[0].start_s == 30
    with path.open("a") as fh:
        fh.write(jobcomp_line(3)[40:])
    assert [j.job_id for j in feed.poll([])] == [3]
    assert feed.poll([]) == []
    path.write_text(jobcomp_line(4))  # rotated: a new, shorter file
    restored = CompletionFeed("jobcomp", feed.executor, jobcomp_path=str(path), state=feed.state())
    assert [j.job_id for j in restored.poll([])] == [4]


def test_sacct_feed_deduplicates_overlapping_windows() -> None:
    line = "101|atlas|debug|normal|4|01:00:00|1700000000|1700000060|1700000360|COMPLETED\n"
    runner = FakeRunner({"sacct": [ok(("sacct",), line), ok(("sacct",), line + line.replace("101", "102"))]})
    now = [1700000300.0]
    feed = CompletionFeed("sacct", CommandExecutor(runner), clock=lambda: now[0])
    assert [j.job_id for j in feed.poll([])] == [101]
    now[0] += 60
    assert [j.job_id for j in feed.poll([])] == [102]
    argv = runner.calls[-1]
    assert argv[:5] == ("sacct", "-X", "-n", "-P", "-a") and "-S" in argv


def test_sacct_feed_waits_for_a_partition_slurmdbd_has_not_written_yet() -> None:
    # Recorded on the test cluster (22.05 + slurmdbd): a job that started at submit is first listed with an
    # empty Partition, which a partition-scoped daemon would drop; a later window has it.  (Unscoped daemons
    # take the record at once: test_sacct_feed_deduplicates_overlapping_windows.)
    early = "101|atlas||normal|4|01:00:00|1700000000|1700000000|1700000010|COMPLETED\n"
    later = early.replace("||", "|short|")
    runner = FakeRunner({"sacct": [ok(("sacct",), early), ok(("sacct",), later), ok(("sacct",), later)]})
    now = [1699999990.0]
    feed = CompletionFeed("sacct", CommandExecutor(runner), clock=lambda: now[0], wait_for_partition=True)
    now[0] = 1700000012.0
    assert feed.poll([]) == []
    now[0] += 1
    assert [(j.job_id, j.partition) for j in feed.poll([])] == [(101, "short")]
    assert feed.poll([]) == []
    # Never written: delivered as it is once the wait is over, not lost.
    now[0] = 1699999990.0
    stale = CompletionFeed(
        "sacct",
        CommandExecutor(FakeRunner({"sacct": [ok(("sacct",), early)] * 2})),
        clock=lambda: now[0],
        wait_for_partition=True,
    )
    now[0] = 1700000012.0
    assert stale.poll([]) == []
    now[0] += SACCT_PARTITION_WAIT_S
    assert [j.job_id for j in stale.poll([])] == [101]


def test_completion_source_detection(tmp_path: Path) -> None:
    log = tmp_path / "jobcomp.txt"
    log.write_text("")
    assert detect_source({"AccountingStorageType": "accounting_storage/slurmdbd"}) == "sacct"
    assert (
        detect_source(
            {
                "AccountingStorageType": "accounting_storage/none",
                "JobCompType": "jobcomp/filetxt",
                "JobCompLoc": str(log),
            }
        )
        == "jobcomp"
    )
    assert detect_source({"JobCompType": "jobcomp/filetxt", "JobCompLoc": str(tmp_path / "nope")}) == "squeue"
    config = CONFIG.replace("/tmp/rlsched-slurm/log/jobcomp.txt", str(tmp_path / "nope"))
    b = make(FakeRunner({"scontrol show": [ok(("scontrol",), config)]}), completion_source="auto")
    b.view()
    assert b._feed is not None and b._feed.source == "squeue"
    b = make(
        FakeRunner({"scontrol show": [ok(("scontrol",), config.replace(str(tmp_path / "nope"), str(log)))]}),
        completion_source="auto",
    )
    b.view()
    assert b._feed is not None and b._feed.source == "jobcomp"


# ------------------------------------------------------------------------------------------ config


def test_vo_mapping_fixed_and_dynamic() -> None:
    fixed = VOMapping(("atlas", "cms", "other"), (0.5, 0.3, 0.2), {"atlas-prod": "atlas"}, "other")
    assert [fixed.index(a) for a in ("atlas-prod", "cms", "lhcb", "atlas")] == [0, 1, 2, 0]
    dynamic = VOMapping()
    assert [dynamic.index(a) for a in ("b", "a", "b")] == [0, 1, 0] and dynamic.names == ("b", "a")
    with pytest.raises(ValueError, match="default_vo is required"):
        VOMapping(("a",))
    with pytest.raises(ValueError, match="not in vos"):
        VOMapping(("a",), accounts={"x": "z"}, default_vo="a")


def test_class_rule() -> None:
    rule = ClassRule(frozenset({"express"}), frozenset({"short"}), 900)
    assert rule.classify("express", "debug", math.inf) == JobClass.INTERACTIVE
    assert rule.classify("", "debug,short", math.inf) == JobClass.INTERACTIVE
    assert rule.classify("", "debug", 900) == JobClass.INTERACTIVE
    assert rule.classify("", "debug", 901) == JobClass.BATCH


def test_config_from_table() -> None:
    config = SlurmBackendConfig.from_table(
        {
            "kind": "slurm",
            "mode": "boost",
            "slurm_conf": "/etc/slurm/slurm.conf",
            "timeout_s": 10,
            "vos": ["atlas", "other"],
            "vo_shares": [0.7, 0.3],
            "default_vo": "other",
            "vo_accounts": {"atlas-prod": "atlas"},
            "interactive_qos": ["express"],
            "interactive_max_time_s": 600,
            "retry_attempts": 5,
            "completion_source": "jobcomp",
            "partitions": ["debug"],
        },
        "rlsched.toml [backend]",
    )
    assert config.timeout_s == 10.0 and config.retry.attempts == 5 and config.partitions == {"debug"}
    assert config.class_rule.interactive_qos == {"express"} and config.class_rule.interactive_max_time_s == 600
    with pytest.raises(ValueError, match=r"^rlsched.toml: key 'backend.timeout_z': unknown key"):
        SlurmBackendConfig.from_table({"timeout_z": 1}, "rlsched.toml")
    with pytest.raises(ValueError, match=r"key 'backend\.vos': expected a list of strings"):
        SlurmBackendConfig.from_table({"vos": "atlas"})
    with pytest.raises(ValueError, match=r"key 'backend\.completion_source': expected one of auto, sacct, jobcomp"):
        SlurmBackendConfig.from_table({"completion_source": "dbd"})
