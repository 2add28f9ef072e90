"""The completion feed's readers (issue 24): sacct's records go through the history import's reader, so one
malformed record (an account named with a newline) is skipped and counted once, never the whole answer; the
jobcomp feed says what it did with an unreadable record naming a job squeue still lists.  The live version
of the newline account is in tests/daemon/test_faults_live.py."""

from __future__ import annotations

import logging
import math
from pathlib import Path

import msgspec
import pytest

from rlsched.backends.common.runner import CommandExecutor
from rlsched.backends.slurm.completions import CompletionFeed, RecordLog, read_sacct_completions
from rlsched.backends.slurm.parsers import SlurmJob
from rlsched.history.records import DropLog
from tests.backends.slurm.test_backend import FakeRunner, jobcomp_line, ok
from tests.backends.slurm.test_hostile import finished

GOOD = "101|atlas|debug|normal|4|01:00:00|1700000000|1700000060|1700000360|COMPLETED\n"
#: ``sacctmgr add account $'evil\nacct'``, a job under it, ``scancel``: sacct prints the record on two lines.
NEWLINE_ACCOUNT = "102|evil\nacct|debug|normal|2|00:10:00|1700000000|1700000100|1700000200|CANCELLED by 0\n"


def test_the_finished_jobs_that_ran() -> None:
    text = (
        GOOD + "102|cms|short|high|0|00:10:00|1700000000|None|1700000010|CANCELLED by 0\n"
        "103|cms|short|high|2|00:10:00|1700000000|1700000005|1700000100|CANCELLED by 0\n"
        "104|cms|short|high|2|00:10:00|1700000000|1700000005|Unknown|RUNNING\n"
        "105|cms|debug|normal|2||1700000000|1700000005|1700000100|CANCELLED by 0\n"
    )
    log = DropLog()
    jobs = read_sacct_completions(text, log)
    assert [j.job_id for j in jobs] == [101, 103, 105] and log.malformed == 0
    assert jobs[2].time_limit_s == math.inf  # slurmdbd recorded no limit
    assert jobs[0].start_s - jobs[0].submit_s == 60 and jobs[0].time_limit_s == 3600
    assert jobs[1].state == "CANCELLED" and jobs[1].qos == "high" and jobs[0].account == "atlas"


@pytest.mark.parametrize(
    "bad",
    [
        "1|2|3\n",
        NEWLINE_ACCOUNT,
        GOOD.replace("1700000060", "yesterday"),
        GOOD.replace("|4|", "|four|"),
        GOOD.replace("101", "x101"),
        "\x00|" * 9 + "\n",
    ],
)
def test_a_malformed_record_is_counted_and_the_others_are_read(bad: str) -> None:
    log = DropLog()
    jobs = read_sacct_completions(bad + GOOD.replace("101", "106"), log)
    assert [j.job_id for j in jobs] == [106] and log.malformed >= 1


def test_the_sacct_feed_delivers_around_a_newline_account_and_counts_it_once(caplog: pytest.LogCaptureFixture) -> None:
    answer = GOOD + NEWLINE_ACCOUNT + GOOD.replace("101", "103")
    runner = FakeRunner({"sacct": [ok(("sacct",), answer), ok(("sacct",), answer + GOOD.replace("101", "104"))]})
    now = [1700000400.0]
    feed = CompletionFeed("sacct", CommandExecutor(runner), clock=lambda: now[0] - 100)
    with caplog.at_level(logging.WARNING):
        assert [j.job_id for j in feed.poll([])] == [101, 103]
        counted = feed.executor.errors["parse_error"]
        assert counted == 2  # the record's two lines, each unreadable on its own
        now[0] += 60
        # sacct's windows overlap: the same record is read again, but counted and logged once.
        assert [j.job_id for j in feed.poll([])] == [104]
    assert feed.executor.errors["parse_error"] == counted
    warnings = [r for r in caplog.records if "malformed record" in r.getMessage()]
    assert len(warnings) == 2 and all("\n" not in r.getMessage() for r in warnings)


def test_the_record_log_keeps_every_reason() -> None:
    log = RecordLog()
    for k in range(8):
        log.bad(f"sacct:{k}", f"reason {k}")
    assert log.malformed == 8 and log.reasons == [f"reason {k}" for k in range(8)]


def forged_name_feed(tmp_path: Path) -> CompletionFeed:
    """A jobcomp feed past the file's start, then the record of job 2, whose name (a newline and a record of job
    7) makes it unreadable: squeue decides for both ids."""
    path = tmp_path / "jobcomp.txt"
    path.write_text(jobcomp_line(1))
    feed = CompletionFeed("jobcomp", CommandExecutor(FakeRunner()), jobcomp_path=str(path))
    assert feed.poll([]) == []
    with path.open("a") as fh:
        fh.write(jobcomp_line(2, name="x\n" + jobcomp_line(7).rstrip("\n")))
    return feed


def not_finished(job_id: int, state: str = "RUNNING") -> SlurmJob:
    return msgspec.structs.replace(finished(job_id, math.nan), state=state, end_s=math.nan)


def test_an_unreadable_jobcomp_record_naming_a_running_job_is_not_said_to_be_gone(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    feed = forged_name_feed(tmp_path)
    with caplog.at_level(logging.WARNING):
        done = feed.poll([finished(2, 1795317000.0), not_finished(7)])
    assert [j.job_id for j in done] == [2]
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert "job 7: its record is unreadable and squeue lists the job as RUNNING" in text
    assert "squeue no longer has it" not in text


def test_a_job_that_ends_between_squeue_and_the_jobcomp_read_is_delivered_at_the_next_poll(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # The view's squeue is taken first, the jobcomp file read after: a job ending in between has its record in
    # the file but is RUNNING in that squeue.  Its record unreadable, squeue decides: it is looked up again,
    # across a restart too, and delivered once when squeue lists it finished.
    feed = forged_name_feed(tmp_path)
    with caplog.at_level(logging.WARNING):
        assert feed.poll([not_finished(2)]) == []
        assert feed.poll([not_finished(2)]) == []
    assert sum("job 2: its record is unreadable" in r.getMessage() for r in caplog.records) == 1  # said once
    assert feed.jobcomp_path is not None
    restarted = CompletionFeed(
        "jobcomp", CommandExecutor(FakeRunner()), jobcomp_path=feed.jobcomp_path, state=feed.state()
    )
    assert restarted.unsettled == {2}
    assert [j.job_id for j in restarted.poll([finished(2, 1795317000.0)])] == [2]
    assert restarted.poll([finished(2, 1795317000.0)]) == [] and restarted.unsettled == set()


def test_an_unsettled_job_gone_from_squeue_is_looked_up_no_more(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    feed = forged_name_feed(tmp_path)
    feed.poll([not_finished(2, "PENDING")])
    assert feed.unsettled == {2}
    with caplog.at_level(logging.WARNING):
        assert feed.poll([]) == [] and feed.unsettled == set()
    assert "job 2: its record is unreadable and squeue no longer has it" in caplog.text
