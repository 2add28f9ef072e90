"""Hostile input from unprivileged users (issue 16): one job's fields never break a view, the jobcomp file
cannot be forged, boosts stay in Slurm's Nice range, rows cannot be split."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from rlsched.backends.common.runner import CommandExecutor, CommandResult, decode_output
from rlsched.backends.slurm.completions import CompletionFeed
from rlsched.backends.slurm.errors import SlurmParseError
from rlsched.backends.slurm.parsers import SlurmJob, parse_squeue_json
from rlsched.cli.daemon import printable
from tests.backends.slurm.test_backend import SQUEUE, FakeRunner, jobcomp_line, make, ok


def squeue_with(**changes: object) -> str:
    """The sample squeue document with job 9's fields changed."""
    doc = json.loads(SQUEUE)
    for job in doc["jobs"]:
        if job["job_id"] == 9:
            job.update(changes)
    return json.dumps(doc)


@pytest.mark.parametrize("field, value", [("cpus", 2**40), ("priority", 2**40), ("priority", -5), ("cpus", "many")])
def test_an_absurd_job_is_refused_by_the_parser_and_skipped_by_the_view(field: str, value: object) -> None:
    text = squeue_with(**{field: value})
    with pytest.raises(SlurmParseError, match=rf"jobs\[\d+\]\.{field}"):
        parse_squeue_json(text)
    skipped: list[SlurmParseError] = []
    jobs = parse_squeue_json(text, skipped.append)
    assert len(skipped) == 1 and 9 not in {j.job_id for j in jobs}
    assert len(jobs) == len(json.loads(SQUEUE)["jobs"]) - 1
    runner = FakeRunner({"squeue": [ok(("squeue",), text)]})
    b = make(runner)
    view = b.view()
    assert 9 not in view.pending.job_id.tolist() and len(view.pending) > 0
    assert b.errors["job_skipped"] == 1


def test_invalid_utf8_in_a_job_name_keeps_the_view_and_is_counted() -> None:
    raw = squeue_with(name="X").replace('"name": "X"', '"name": "\udcff"')
    data = raw.encode("utf-8", "surrogateescape")  # the byte 0xff, as slurmctld prints it
    assert b"\xff" in data

    class BytesRunner(FakeRunner):
        def __call__(self, argv: Sequence[str], timeout_s: float) -> CommandResult:
            if argv[0] == "squeue":
                text, bad = decode_output(data)
                return CommandResult(tuple(argv), 0, text, "", bad)
            return super().__call__(argv, timeout_s)

    b = make(BytesRunner())
    view = b.view()
    assert 9 in view.pending.job_id.tolist()
    assert b.errors["decode_replacement"] == 1


def test_extreme_nice_of_one_job_does_not_stop_the_others_boost() -> None:
    # squeue prints a job submitted with --nice=2147483645 thus: Slurm's priority floor, the Nice as given.
    text = squeue_with(nice=2147483645, priority=1)
    runner = FakeRunner({"squeue": [ok(("squeue",), text)]})
    b = make(runner)
    b.view()
    assert b.nice_step() == 10000  # the extreme job does not widen the step
    b.boost([9, 10, 8])
    updates = [c[2:] for c in runner.calls if c[:2] == ("scontrol", "update")]
    assert updates == [("JobId=9", "Nice=-30000"), ("JobId=10", "Nice=-20000"), ("JobId=8", "Nice=-10000")]
    runner.calls.clear()
    b.boost([])  # given back exactly: Slurm takes |Nice| up to 2**31 - 3
    restores = {c[2]: c[3] for c in runner.calls if c[:2] == ("scontrol", "update")}
    assert restores["JobId=9"] == "Nice=2147483645"


def test_priorities_beyond_the_nice_range_still_boost_within_it() -> None:
    text = squeue_with(priority=4_000_000_000)
    runner = FakeRunner({"squeue": [ok(("squeue",), text)]})
    b = make(runner)
    b.view()
    b.boost([10, 8, 9])
    nices = [int(c[3].split("=")[1]) for c in runner.calls if c[:2] == ("scontrol", "update")]
    assert nices and all(-(2**31 - 3) <= n < 0 for n in nices)
    assert nices == sorted(nices)  # still a ladder, top first


def finished(job_id: int, end_s: float) -> SlurmJob:
    return SlurmJob(
        job_id=job_id,
        state="COMPLETED",
        reason="",
        user="u",
        account="real",
        partition="debug",
        qos="normal",
        cpus=1,
        time_limit_s=600.0,
        priority=1,
        nice=0,
        submit_s=end_s - 60,
        start_s=end_s - 30,
        end_s=end_s,
    )


def test_a_job_name_forging_a_jobcomp_record_forges_nothing_and_hides_nothing(tmp_path: Path) -> None:
    path = tmp_path / "jobcomp.txt"
    path.write_text(jobcomp_line(1))
    feed = CompletionFeed("jobcomp", CommandExecutor(FakeRunner()), jobcomp_path=str(path))
    assert feed.poll([]) == []
    forged = jobcomp_line(666).rstrip("\n").replace("Account=atlas", "Account=forged")
    with path.open("a") as fh:
        fh.write(jobcomp_line(2, name="x\n" + forged))  # the name: a newline, then a whole record
        fh.write(
            jobcomp_line(
                3,
                name="y JobState=COMPLETED Partition=debug TimeLimit=10 StartTime=2026-11-22T03:"
                "09:16 EndTime=2026-11-22T03:09:46 NodeList=n NodeCnt=1 ProcCnt=99 WorkDir=/",
            )
        )
        fh.write(jobcomp_line(4))
    squeue = [finished(2, 1795317000.0), finished(3, 1795317001.0), finished(666, 1795317002.0)]
    done = feed.poll(squeue[:2])
    # 2 and 3 come from squeue (their records are ambiguous), 4 from its record; 666 is nowhere.
    assert sorted(j.job_id for j in done) == [2, 3, 4]
    assert {j.account for j in done if j.job_id in (2, 3)} == {"real"}
    assert all(j.account != "forged" and j.cpus != 99 for j in done)
    assert feed.executor.errors["parse_error"] == 3
    assert feed.poll(squeue) == []  # nothing twice, and 666 is never read
    assert feed.offset == path.stat().st_size


def test_the_jobcomp_feed_waits_for_a_record_whose_lines_are_not_all_written(tmp_path: Path) -> None:
    path = tmp_path / "jobcomp.txt"
    path.write_text("")
    feed = CompletionFeed("jobcomp", CommandExecutor(FakeRunner()), jobcomp_path=str(path))
    feed.poll([])
    record = jobcomp_line(5, name="two\nlines")
    first, rest = record.split("\n", 1)
    with path.open("a") as fh:
        fh.write(first + "\n")
    assert feed.poll([]) == [] and feed.offset == 0
    with path.open("a") as fh:
        fh.write(rest)
    assert [j.job_id for j in feed.poll([])] == [5]
    assert feed.offset == path.stat().st_size


def test_invalid_utf8_in_the_jobcomp_file_is_replaced_and_counted(tmp_path: Path) -> None:
    path = tmp_path / "jobcomp.txt"
    path.write_text("")
    feed = CompletionFeed("jobcomp", CommandExecutor(FakeRunner()), jobcomp_path=str(path))
    feed.poll([])
    path.write_bytes(jobcomp_line(7, name="\udcff").encode("utf-8", "surrogateescape"))
    assert [j.job_id for j in feed.poll([])] == [7]
    assert feed.executor.errors["decode_replacement"] == 1


def test_printable_escapes_what_would_split_or_repaint_a_row() -> None:
    assert printable("atlas") == "atlas"
    assert printable("a\nb\tc\x1b[2J\u2028é") == "a\\nb\\tc\\x1b[2J\\u2028é"
    assert "\n" not in printable("".join(map(chr, range(0x20))))
