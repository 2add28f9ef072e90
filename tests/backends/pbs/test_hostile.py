"""Any input to the PBS parsers parses or raises PBSParseError with one line — never anything else
(hypothesis), and the values PBS writes are read right."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from rlsched.backends.pbs.backend import pbs_id_of
from rlsched.backends.pbs.errors import PBSParseError
from rlsched.backends.pbs.parsers import (
    SUBJOB_ID_BASE,
    accounting_job,
    parse_accounting_line,
    parse_job_id,
    parse_pbs_time,
    parse_pbsnodes_json,
    parse_qstat_json,
    parse_walltime,
    read_accounting,
    sched_sort_keys,
    select_cpus,
)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=True) | st.text(max_size=30),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=5),
    max_leaves=30,
)
job_keys = st.sampled_from(
    [
        "job_state",
        "queue",
        "Resource_List",
        "ctime",
        "stime",
        "obittime",
        "mtime",
        "Priority",
        "Account_Name",
        "project",
        "egroup",
        "euser",
        "Job_Owner",
        "array_state_count",
        "Exit_status",
    ]
)
resource_values = st.dictionaries(
    st.sampled_from(["ncpus", "select", "walltime", "nodect"]),
    json_values | st.sampled_from(["1:ncpus=2+2:ncpus=3", "01:00:00", "x:y", ""]),
)
job_objects = st.dictionaries(
    job_keys,
    json_values | resource_values | st.sampled_from(["Q", "R", "H", "F", "B", "X", "Mon Nov 23 09:17:30 2026"]),
    max_size=12,
)
job_ids = st.sampled_from(["1.h", "2[].h", "3[4].h", "x", "5[", "9" * 20, "6[999999999999].h"]) | st.text(max_size=12)


def one_line(exc: PBSParseError) -> None:
    assert "\n" not in str(exc) and str(exc)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300) | json_values.map(json.dumps))
def test_qstat_and_pbsnodes_any_text_parses_or_raises_a_parse_error(text: str) -> None:
    for parse in (parse_qstat_json, parse_pbsnodes_json):
        try:
            parse(text)
        except PBSParseError as exc:
            one_line(exc)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(job_ids, job_objects, max_size=4))
def test_qstat_any_job_parses_or_is_skipped_alone(jobs: dict[str, Any]) -> None:
    text = json.dumps({"timestamp": 1, "Jobs": jobs})
    skipped: list[PBSParseError] = []
    parsed = parse_qstat_json(text, skipped.append)
    assert len(parsed) + len(skipped) == len(jobs)
    for exc in skipped:
        one_line(exc)
    for job in parsed:
        assert job.cpus >= 0 and -1024 <= job.priority <= 1023 and len(job.state) == 1
        assert job.walltime_s >= 0


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_accounting_any_line_parses_or_raises_a_parse_error(line: str) -> None:
    try:
        record = parse_accounting_line(line)
        if record.kind == "E":
            accounting_job(record)
    except PBSParseError as exc:
        one_line(exc)


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(
            [
                "start",
                "end",
                "ctime",
                "Resource_List.ncpus",
                "Resource_List.select",
                "Resource_List.walltime",
                "Exit_status",
                "account",
                "queue",
            ]
        ),
        st.text(alphabet='0123456789:=+ncpus" ab', max_size=20),
    )
)
def test_accounting_any_end_record_fields_parse_or_raise(fields: dict[str, str]) -> None:
    message = " ".join(f"{k}={v}" for k, v in fields.items())
    bad: list[tuple[str, str]] = []
    read_accounting([f"11/23/2026 09:17:31;E;12.pbshost;{message}"], "acct", lambda w, r: bad.append((w, r)))
    assert all(w == "acct:1" and "\n" not in r for w, r in bad)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=40) | st.integers() | st.floats() | st.none() | st.booleans())
@example("¹")  # str.isdigit() is true for superscripts, which float() refuses: found by this test
@example("²:³")
def test_times_durations_select_any_value(value: object) -> None:
    for parse in (parse_pbs_time, parse_walltime):
        try:
            result = parse(value)
            assert math.isfinite(result)
        except PBSParseError as exc:
            one_line(exc)
    if isinstance(value, str):
        try:
            assert select_cpus(value) >= 0
        except PBSParseError as exc:
            one_line(exc)


@given(st.integers(0, SUBJOB_ID_BASE - 1), st.integers(0, 100_000))
def test_job_ids_map_to_distinct_integers_and_back(seq: int, index: int) -> None:
    plain, array, subjob = (
        parse_job_id(f"{seq}.server"),
        parse_job_id(f"{seq}[].server"),
        parse_job_id(f"{seq}[{index}].server"),
    )
    assert plain == (seq, False, False) and array == (seq, True, False)
    assert subjob[2] and subjob[0] != seq and pbs_id_of(subjob[0]) == f"{seq}[{index}]"
    assert pbs_id_of(seq) == str(seq)


def test_values_as_pbs_writes_them() -> None:
    assert parse_walltime("01:02:03") == 3723 and parse_walltime("90") == 90 and parse_walltime("1:30") == 90
    assert select_cpus("2:ncpus=4:mem=1gb+1:ncpus=2") == 10 and select_cpus("3:mem=2gb") == 3
    assert parse_pbs_time("Mon Nov  2 09:17:30 2026") == parse_pbs_time("Mon Nov 2 09:17:30 2026")
    assert parse_pbs_time(1700000000) == 1700000000.0
    assert sched_sort_keys('# c\njob_sort_key: "job_priority HIGH"\tALL\njob_sort_key: "ncpus LOW" ALL\n') == [
        "job_priority HIGH",
        "ncpus LOW",
    ]
    record = parse_accounting_line(
        '11/23/2026 09:17:31;E;7.pbshost;user=u group=g jobname="a b" queue=workq '
        "ctime=100 start=110 end=170 Resource_List.ncpus=4 Exit_status=0 account=atlas"
    )
    job = accounting_job(record)
    assert record.fields["jobname"] == "a b" and job.cpus == 4 and job.ran and job.account == "atlas"
    assert (job.submit_s, job.start_s, job.end_s) == (100.0, 110.0, 170.0)
    with pytest.raises(PBSParseError, match="not a record time"):
        parse_accounting_line("yesterday;E;1.h;")


node_objects = st.dictionaries(
    st.sampled_from(["state", "resources_available", "resources_assigned", "queue", "comment"]),
    json_values
    | st.sampled_from(["free", "down,offline", "job-busy"])
    | st.dictionaries(st.sampled_from(["ncpus", "mem"]), json_values),
    max_size=5,
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(max_size=8), node_objects, max_size=3))
def test_pbsnodes_any_node_parses_or_raises_a_parse_error(nodes: dict[str, Any]) -> None:
    try:
        for node in parse_pbsnodes_json(json.dumps({"nodes": nodes})):
            assert 0 <= node.idle_cpus <= node.cpus and node.states
    except PBSParseError as exc:
        one_line(exc)
