"""The jobcomp/filetxt file: the daemon's parser reused, records spanning lines, and no job name forging a
record (issue 16)."""

from __future__ import annotations

import io
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlsched.backends.slurm.errors import SlurmParseError
from rlsched.backends.slurm.parsers import parse_jobcomp_line, parse_jobcomp_record
from rlsched.history.jobcomp import read_jobcomp
from rlsched.history.records import DropLog, HistoryJob, drop_reason
from tests.history.conftest import DATA

SAMPLE = (DATA / "slurm" / "jobcomp.txt").read_text()
LINES = SAMPLE.splitlines()


def record(job_id: int, name: str = "wrap", account: str = "cms", workdir: str = "/tmp") -> str:
    return (
        f"JobId={job_id} UserId=alice(1000) GroupId=physics(100) Name={name} JobState=COMPLETED "
        "Partition=debug TimeLimit=10 StartTime=2026-11-22T03:09:16 EndTime=2026-11-22T03:09:46 "
        f"NodeList=node1 NodeCnt=1 ProcCnt=4 WorkDir={workdir} ReservationName= "
        f"Tres=cpu=4,mem=8000M,node=1,billing=4 Account={account} QOS=normal WcKey= Cluster=c "
        "SubmitTime=2026-11-22T03:09:00 EligibleTime=2026-11-22T03:09:00 DerivedExitCode=0:0 ExitCode=0:0 "
    )


def read(text: str, strict: bool = False) -> tuple[list[HistoryJob], DropLog]:
    log = DropLog(strict=strict)
    return list(read_jobcomp(io.StringIO(text, newline="\n"), "jobcomp.txt", log)), log


def test_the_daemon_sample() -> None:
    jobs, log = read(SAMPLE)
    assert log.total == 0 and len(jobs) == len(LINES)
    by_id = {j.raw_id: j for j in jobs}
    assert by_id[2].user == "root" and by_id[2].group == "root" and by_id[2].cpus == 16 and by_id[2].nodes == 1
    assert by_id[2].end_s - by_id[2].start_s == 30 and by_id[2].time_limit_s == 600
    assert by_id[1].time_limit_s == math.inf
    assert [drop_reason(by_id[i]) for i in (4, 5)] == ["cancelled_before_start"] * 2
    assert by_id[10].partition == "debug" and by_id[10].state == "COMPLETED"  # the "weird" name
    # The daemon's per-line parser gives the same jobs (one parser, two users).
    done = {c.job_id: c for c in map(parse_jobcomp_line, LINES) if c is not None}
    assert set(done) == {j.raw_id for j in jobs if drop_reason(j) is None}
    assert all(done[i].start_s == by_id[i].start_s and done[i].cpus == by_id[i].cpus for i in done)


def test_a_newline_in_a_name_or_work_dir_joins_the_lines() -> None:
    text = record(1, name="two\nlines") + "\n" + record(2, workdir="/home/a\nb") + "\n" + record(3) + "\n"
    jobs, log = read(text)
    assert [j.raw_id for j in jobs] == [1, 2, 3] and log.total == 0
    assert all(j.cpus == 4 and j.account == "cms" for j in jobs)


def test_the_job_name_is_read_whole() -> None:
    jobs, log = read(SAMPLE)
    by_id = {j.raw_id: j for j in jobs}
    assert by_id[2].name == "wrap" and by_id[10].name == 'weird | name "x" JobState=FAILED Partition=x'
    text = record(1, name="two\nlines") + "\n" + record(2, name="a b=c") + "\n" + record(3, name="") + "\n"
    jobs, log = read(text)
    assert [j.name for j in jobs] == ["two\nlines", "a b=c", ""] and log.total == 0


def test_a_name_forging_a_whole_record_after_a_newline_forges_nothing() -> None:
    forged = record(999, account="atlas").rstrip()
    text = record(1, name=f"x\n{forged}") + "\n" + record(2) + "\n"
    jobs, log = read(text)
    assert [j.raw_id for j in jobs] == [2]  # neither 999 nor a misread 1
    assert log.malformed == 2 and log.examples[0].startswith("jobcomp.txt:1: ")
    assert log.examples[1].startswith("jobcomp.txt:2: ")


def test_a_name_forging_the_start_of_a_record_forges_nothing() -> None:
    # The forged head takes over the real record's fields if read alone: both lines are refused.
    text = record(1, name="x\nJobId=999 UserId=mallory(0) GroupId=root(0) Name=y") + "\n" + record(2) + "\n"
    jobs, log = read(text)
    assert [j.raw_id for j in jobs] == [2] and log.malformed == 2


def test_a_name_imitating_the_field_run_on_one_line_is_refused() -> None:
    run = (
        "JobState=FAILED Partition=x TimeLimit=1 StartTime=2026-11-22T03:09:16 EndTime=2026-11-22T03:09:17 "
        "NodeList=n NodeCnt=1 ProcCnt=64 WorkDir="
    )
    text = record(1, name=f"x {run}/") + "\n"
    jobs, log = read(text)
    assert jobs == [] and "ambiguous" in log.examples[0]
    with pytest.raises(SlurmParseError, match="ambiguous"):
        parse_jobcomp_record(text.rstrip("\n"))


def test_a_record_cut_short_at_the_end_and_garbage_are_reported() -> None:
    text = record(1) + "\nnot a record\n" + record(2)[:60]
    jobs, log = read(text)
    assert [j.raw_id for j in jobs] == [1] and log.malformed == 2
    assert log.examples[0].startswith("jobcomp.txt:2: not a jobcomp record")
    assert log.examples[1].startswith("jobcomp.txt:3: record cut short")
    with pytest.raises(Exception, match=r"^jobcomp.txt:2: "):
        read(text, strict=True)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab =\n()JobId=1 UserId=ExitCode=0:0"), max_size=60))
def test_no_name_makes_another_job_appear(name: str) -> None:
    jobs, _ = read(record(1, name=name) + "\n" + record(2) + "\n")
    ids = [j.raw_id for j in jobs]
    assert ids[-1:] == [2]  # the next job is never lost to a name
    assert set(ids) <= {1, 2}
    assert all(j.cpus == 4 for j in jobs)
    assert all(j.name == (name if j.raw_id == 1 else "wrap") for j in jobs)  # a job read is read with its own name
