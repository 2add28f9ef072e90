"""Parsers of PBS output on documents recorded from the real OpenPBS 23.06.06 server (tests/data/pbs/)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from rlsched.backends.pbs.errors import PBSParseError
from rlsched.backends.pbs.parsers import (
    SUBJOB_ID_BASE,
    parse_pbsnodes_json,
    parse_qstat_json,
    read_accounting,
)

DATA = Path(__file__).resolve().parents[2] / "data" / "pbs"
LIVE = (DATA / "qstat-live.json").read_text()
HISTORY = (DATA / "qstat-history.json").read_text()
NODES = (DATA / "pbsnodes-busy.json").read_text()
ACCOUNTING = (DATA / "accounting-20261123").read_text().splitlines()


def sub(seq: int, index: int) -> int:
    return (index + 1) * SUBJOB_ID_BASE + seq


def test_the_live_view_queued_running_held_arrays_and_multi_chunk_select() -> None:
    jobs = {job.pbs_id: job for job in parse_qstat_json(LIVE)}
    assert len(jobs) == 10
    running = jobs["1.pbshost"]
    assert running.active and not running.pending and running.cpus == 6 and running.account == "cms"
    assert running.walltime_s == 600 and math.isfinite(running.start_s) and math.isnan(running.end_s)
    # The array: one pending job while subjobs are queued; running subjobs are running jobs of their own.
    array = jobs["2[].pbshost"]
    assert array.array and array.state == "B" and array.queued_subjobs == 2 and array.pending
    assert array.job_id == 2 and not array.active and array.project == "physics"
    assert jobs["2[0].pbshost"].active and jobs["2[0].pbshost"].job_id == sub(2, 0)
    assert not jobs["2[2].pbshost"].pending and not jobs["2[2].pbshost"].active  # waits as part of 2[]
    queued = jobs["3.pbshost"]
    assert queued.pending and not queued.held and queued.walltime_s == 5400 and queued.cpus == 4
    assert (queued.account, queued.project, queued.group) == ("atlas", "physics", "root")
    assert math.isnan(queued.start_s) and queued.submit_s > 1.7e9
    held = jobs["4.pbshost"]
    assert held.held and held.pending and held.account == "lhcb"
    multi = jobs["5.pbshost"]
    assert multi.cpus == 7 and multi.priority == 5 and math.isinf(multi.walltime_s) and multi.account == ""
    assert math.isinf(jobs["6.pbshost"].walltime_s)


def test_job_names_of_qstat_and_of_the_accounting_log() -> None:
    doc = json.loads(LIVE)
    doc["Jobs"]["3.pbshost"]["Job_Name"] = 7  # qstat -F json prints a name that looks like a number as one
    del doc["Jobs"]["4.pbshost"]["Job_Name"]
    doc["Jobs"]["5.pbshost"]["Job_Name"] = ["not", "a", "name"]
    jobs = {job.pbs_id: job for job in parse_qstat_json(json.dumps(doc))}
    assert jobs["1.pbshost"].name == "blocker" and jobs["2[].pbshost"].name == jobs["2[0].pbshost"].name == "arr"
    assert (jobs["3.pbshost"].name, jobs["4.pbshost"].name, jobs["5.pbshost"].name) == ("7", "", "")
    assert jobs["5.pbshost"].cpus == 7  # an odd name costs the job nothing else
    ended = {job.pbs_id: job for _, job in read_accounting(ACCOUNTING, "acct", lambda w, r: None)}
    assert (ended["0.pbshost"].name, ended["1.pbshost"].name, ended["6.pbshost"].name) == ("STDIN", "blocker", "nowall")
    # A quoted name with spaces, as PBS writes one.
    line = next(x for x in ACCOUNTING if ";E;1.pbshost;" in x)
    ((_, job),) = read_accounting([line.replace("jobname=blocker", 'jobname="my run"')], "acct", lambda w, r: None)
    assert job.name == "my run"


def test_the_history_only_jobs_that_ran_are_completions() -> None:
    jobs = {job.pbs_id: job for job in parse_qstat_json(HISTORY)}
    ran = sorted(job.pbs_id for job in jobs.values() if job.ran)
    # 0 and 6 ran to the end, 1 was deleted running, the subjobs ran; 3, 4, 5 never started; 2[] is the array.
    assert ran == [
        "0.pbshost",
        "1.pbshost",
        "2[0].pbshost",
        "2[1].pbshost",
        "2[2].pbshost",
        "2[3].pbshost",
        "6.pbshost",
    ]
    zero = jobs["0.pbshost"]
    assert zero.end_s - zero.start_s == 1 and zero.exit_status == 0 and zero.finished and not zero.pending


def test_nodes() -> None:
    (node,) = parse_pbsnodes_json(NODES)
    assert node.name == "pbshost" and node.cpus == 8 and node.assigned_cpus == 8 and node.idle_cpus == 0
    assert node.live and node.states <= {"free", "job-busy"}
    empty = json.loads(NODES)
    empty["nodes"]["pbshost"]["state"] = "down,offline"
    (down,) = parse_pbsnodes_json(json.dumps(empty))
    assert not down.live and not down.accepting


def test_accounting_end_records_agree_with_the_history() -> None:
    bad: list[tuple[str, str]] = []
    ended = {job.pbs_id: job for _, job in read_accounting(ACCOUNTING, "acct", lambda w, r: bad.append((w, r)))}
    assert not bad
    history = {job.pbs_id: job for job in parse_qstat_json(HISTORY)}
    for pbs_id in ("0.pbshost", "1.pbshost", "6.pbshost", "2[0].pbshost"):
        a, h = ended[pbs_id], history[pbs_id]
        assert (a.start_s, a.end_s, a.cpus, a.submit_s) == (h.start_s, h.end_s, h.cpus, h.submit_s), pbs_id
        assert a.ran
    assert ended["0.pbshost"].account == "atlas" and ended["1.pbshost"].walltime_s == 600


def test_a_missing_jobs_table_is_no_job_and_a_truncated_document_one_error() -> None:
    assert parse_qstat_json('{"timestamp": 1, "pbs_version": "23.06.06", "pbs_server": "pbshost"}') == []
    with pytest.raises(PBSParseError, match=r"^qstat -f -F json: bad output: not JSON") as info:
        parse_qstat_json(LIVE[: len(LIVE) // 2])
    assert "\n" not in str(info.value)


def test_one_bad_job_is_skipped_alone() -> None:
    doc = json.loads(LIVE)
    doc["Jobs"]["3.pbshost"]["Resource_List"]["walltime"] = "soon"
    skipped: list[PBSParseError] = []
    jobs = parse_qstat_json(json.dumps(doc), skipped.append)
    assert len(jobs) == 9 and len(skipped) == 1
    assert "Jobs['3.pbshost'].Resource_List.walltime" in str(skipped[0]) and "not a duration" in str(skipped[0])
