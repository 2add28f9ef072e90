"""sacct records: parsable2 text (header order, free-text columns, steps, arrays), JSON of Slurm 22.05,
the live command line, and malformed input."""

from __future__ import annotations

import contextlib
import io
import json
import math
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlsched.history.records import DropLog, HistoryFormatError, HistoryJob, drop_reason
from rlsched.history.sacct import (
    MAX_CONTINUATION,
    SACCT_FIELDS,
    SACCT_LIVE_FIELDS,
    read_sacct_delimited,
    read_sacct_json,
    read_sacct_text,
    record_delimiter,
    sacct_argv,
)
from rlsched.history.trace import build_trace
from tests.history.conftest import HISTORY


def epoch(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def read_text(name: str, strict: bool = False, **kwargs: object) -> tuple[list[HistoryJob], DropLog]:
    log = DropLog(strict=strict)
    lines = (HISTORY / name).read_text().splitlines(keepends=True)
    return list(read_sacct_text(lines, name, log, **kwargs)), log  # type: ignore[arg-type]


def test_parsable2_sample_reads_fields_by_header_name() -> None:
    jobs, log = read_text("sacct-parsable2.txt")
    by_id = {j.job_id: j for j in jobs}
    first = by_id["100"]
    assert (first.user, first.group, first.account, first.partition, first.qos) == (
        "alice",
        "physics",
        "atlas",
        "debug",
        "normal",
    )
    assert first.submit_s == epoch("2026-11-20T08:00:00") and first.start_s == epoch("2026-11-20T08:00:05")
    assert first.end_s - first.start_s == 3600 and first.time_limit_s == 7200
    assert (first.cpus, first.req_cpus, first.nodes) == (16, 16, 1)
    assert by_id["103"].time_limit_s == 86400  # 1-00:00:00
    assert by_id["130"].time_limit_s == math.inf and by_id["130"].nodes == 2
    assert by_id["131"].state == "CANCELLED"  # "CANCELLED by 0"
    # Array elements are kept under their own raw ids; steps and the placeholder are counted, not read.
    assert (by_id["110_1"].raw_id, by_id["110_2"].raw_id) == (110, 111)
    assert log.dropped == {"job_step": 3, "array_placeholder": 1}
    assert not any("." in j.job_id for j in jobs)


def test_a_pipe_or_a_newline_in_the_job_name_does_not_shift_fields() -> None:
    jobs, _ = read_text("sacct-parsable2.txt")
    by_id = {j.job_id: j for j in jobs}
    assert by_id["102"].user == "carol" and by_id["102"].state == "TIMEOUT" and by_id["102"].cpus == 8
    assert by_id["103"].user == "dave" and by_id["103"].state == "FAILED" and by_id["103"].cpus == 2


def test_a_malformed_line_is_counted_with_file_and_line_and_nothing_else_is_lost() -> None:
    jobs, log = read_text("sacct-parsable2.txt")
    assert log.malformed == 1
    assert log.examples == ["sacct-parsable2.txt:18: 1 fields, the header has 19: 'garbage'"]
    assert "140" in {j.job_id for j in jobs}  # the line after it is read
    with pytest.raises(HistoryFormatError, match=r"^sacct-parsable2.txt:18: 1 fields"):
        read_text("sacct-parsable2.txt", strict=True)


def test_the_sample_drops_by_reason() -> None:
    jobs, log = read_text("sacct-parsable2.txt")
    trace = build_trace(jobs, log)
    assert len(trace) == 9
    assert log.as_dict() == {
        "job_step": 3,
        "array_placeholder": 1,
        "cancelled_before_start": 1,
        "not_started": 1,
        "not_ended": 1,
        "malformed": 1,
    }
    assert log.total == 8


def test_headerless_file_with_named_columns_and_epoch_times() -> None:
    columns = (
        "JobIDRaw",
        "JobID",
        "User",
        "Group",
        "Account",
        "Partition",
        "QOS",
        "State",
        "Submit",
        "Eligible",
        "Start",
        "End",
        "TimelimitRaw",
        "AllocCPUS",
        "ReqCPUS",
        "NNodes",
    )
    jobs, log = read_text("sacct-noheader-epoch.txt", columns=columns)
    assert [j.raw_id for j in jobs] == [200, 201] and log.total == 0
    assert jobs[0].submit_s == 1795000000 and jobs[0].time_limit_s == 600 and jobs[1].qos == "express"
    with pytest.raises(HistoryFormatError, match=r"sacct-noheader-epoch.txt:1: not a sacct header line"):
        read_text("sacct-noheader-epoch.txt")


def test_parsable_with_trailing_separator_and_other_order() -> None:
    text = [
        "State|End|Start|Submit|AllocCPUS|JobID|Account|\n",
        "COMPLETED|1795000100|1795000050|1795000000|3|77|atlas|\n",
    ]
    log = DropLog()
    [job] = read_sacct_text(text, "p.txt", log)
    assert (job.job_id, job.raw_id, job.cpus, job.account, job.time_limit_s) == ("77", 77, 3, "atlas", math.inf)
    assert (job.user, job.qos, job.nodes, job.req_cpus) == ("", "", 0, -1)


def test_parsable_with_trailing_separator_and_a_job_name_column() -> None:
    text = [
        "JobID|JobName|State|Submit|Start|End|AllocCPUS|\n",
        "8|a|b|COMPLETED|1795000000|1795000050|1795000100|3|\n",
        "9|plain|COMPLETED|1795000000|1795000050|1795000100|5|\n",
    ]
    jobs = list(read_sacct_text(text, "p.txt", DropLog()))
    assert [(j.raw_id, j.state, j.cpus) for j in jobs] == [(8, "COMPLETED", 3), (9, "COMPLETED", 5)]


def test_a_header_without_a_required_column_is_one_line_naming_file_and_line() -> None:
    with pytest.raises(HistoryFormatError, match=r"^h.txt:2: no alloccpus or ncpus column"):
        list(read_sacct_text(["\n", "JobID|State|Submit|Start|End\n"], "h.txt", DropLog()))


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("1|COMPLETED|yesterday|1795000050|1795000100|3", "Submit: not a time"),
        ("1|COMPLETED|1795000000|1795000050|1795000100|-3", "AllocCPUS: not a count"),
        ("1|COMPLETED|1795000000|1795000050|1795000100|99999999999", "AllocCPUS: not a count"),
        ("x1|COMPLETED|1795000000|1795000050|1795000100|3", "not a job id"),
        ("1|COMPLETED|1795000000|1795000050", "4 fields, the header has 6"),
    ],
)
def test_bad_fields_are_malformed_lines(line: str, reason: str) -> None:
    log = DropLog()
    jobs = list(read_sacct_text(["JobIDRaw|State|Submit|Start|End|AllocCPUS\n", line + "\n"], "b.txt", log))
    assert jobs == [] and log.malformed == 1
    assert log.examples[0].startswith("b.txt:2: ") and reason in log.examples[0]


def test_json_22_05_sample() -> None:
    log = DropLog()
    text = (HISTORY / "sacct-22.05.json").read_text()
    jobs = list(read_sacct_json(text, "sacct-22.05.json", log))
    by_id = {j.job_id: j for j in jobs}
    assert set(by_id) == {"300", "301", "302_1", "302_2", "305", "306", "307", "308"}
    t0 = 1795000000
    first = by_id["300"]
    assert (first.submit_s, first.start_s, first.end_s, first.time_limit_s) == (t0, t0 + 5, t0 + 3605, 7200)
    assert (first.cpus, first.nodes, first.req_cpus, first.user, first.group) == (16, 1, 16, "alice", "physics")
    assert by_id["302_2"].raw_id == 303
    assert by_id["307"].time_limit_s == math.inf  # 4294967295 minutes: INFINITE
    assert by_id["305"].cpus == 0 and math.isnan(by_id["305"].start_s)
    assert by_id["308"].account == "ops" and by_id["308"].req_cpus == -1  # optional blocks absent
    assert log.dropped == {"array_placeholder": 1}
    assert log.malformed == 1 and log.examples[0].startswith("sacct-22.05.json:jobs[9]: job_id")
    assert [drop_reason(by_id[i]) for i in ("305", "306")] == ["cancelled_before_start", "not_ended"]


def test_json_later_layouts_numbers_and_states() -> None:
    doc = {
        "jobs": [
            {
                "job_id": 9,
                "state": {"current": ["COMPLETED"]},
                "account": "a",
                "time": {
                    "submission": {"set": True, "infinite": False, "number": 1795000000},
                    "start": {"set": True, "infinite": False, "number": 1795000010},
                    "end": {"set": True, "infinite": False, "number": 1795000020},
                    "limit": {"set": True, "infinite": True, "number": 0},
                },
                "tres": {"allocated": [{"type": "cpu", "count": 2}]},
            }
        ]
    }
    [job] = read_sacct_json(json.dumps(doc), "new.json", DropLog())
    assert job.state == "COMPLETED" and job.time_limit_s == math.inf and job.end_s == 1795000020 and job.cpus == 2


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", r"^x.json:1: not JSON"),
        ("[]", "no 'jobs' list"),
        ('{"jobs": 3}', "no 'jobs' list"),
        ('{"jobs": [], "errors": [{"error": "boom"}]}', "sacct reported errors"),
    ],
)
def test_json_documents_that_cannot_be_read(text: str, message: str) -> None:
    with pytest.raises(HistoryFormatError, match=message):
        list(read_sacct_json(text, "x.json", DropLog()))


def test_live_command_line() -> None:
    delimiter = record_delimiter()
    argv = sacct_argv("2026-11-01", "now", delimiter=delimiter, sacct="/opt/slurm/bin/sacct", clusters="c1")
    assert argv[0] == "/opt/slurm/bin/sacct"
    # --parsable (not -P): every field, the last too, is followed by the delimiter, so each record ends with it.
    assert {"--allusers", "--allocations", "--parsable"} <= set(argv) and "--noheader" not in argv
    assert "--parsable2" not in argv and f"--delimiter={delimiter}" in argv
    assert f"--format={','.join(SACCT_LIVE_FIELDS)}" in argv
    assert argv[argv.index("--starttime") + 1] == "2026-11-01" and argv[argv.index("--endtime") + 1] == "now"
    assert argv[-2:] == ["--clusters", "c1"]
    # The fixed fields hold no free text; the job name is the one free-text field asked for.
    assert "JobName" not in SACCT_FIELDS and (*SACCT_FIELDS, "JobName") == SACCT_LIVE_FIELDS


def test_each_run_draws_its_own_delimiter() -> None:
    drawn = {record_delimiter() for _ in range(50)}
    assert len(drawn) == 50 and all(d.startswith("|rlsched-") and d.endswith("|") and len(d) == 26 for d in drawn)


def live_output(delimiter: str, records: list[list[str]], cut: str = "") -> str:
    """What ``sacct --parsable --delimiter=D`` prints: every field followed by D, a newline after each record."""
    return "".join("".join(f + delimiter for f in record) + "\n" for record in records) + cut


_LIVE_HEADER = list(SACCT_LIVE_FIELDS)


def live_record(raw_id: int, user: str, cpus: int, name: str) -> list[str]:
    values = {
        "JobIDRaw": str(raw_id),
        "JobID": str(raw_id),
        "User": user,
        "Group": "physics",
        "Account": "atlas",
        "Partition": "debug",
        "QOS": "normal",
        "State": "COMPLETED",
        "Submit": "1795000000",
        "Eligible": "1795000000",
        "Start": "1795000010",
        "End": "1795000070",
        "TimelimitRaw": "10",
        "AllocCPUS": str(cpus),
        "ReqCPUS": str(cpus),
        "NNodes": "1",
        "NodeList": "node1",
        "JobName": name,
    }
    return [values[field] for field in _LIVE_HEADER]


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet=st.sampled_from("ab |\n=\r\x0céé"), max_size=30)
    | st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=40)
)
def test_live_output_keeps_any_job_name_whole_and_the_other_fields_alone(name: str) -> None:
    delimiter = record_delimiter()
    text = live_output(delimiter, [_LIVE_HEADER, live_record(5, "alice", 4, name), live_record(6, "bob", 2, "x")])
    log = DropLog()
    jobs = list(read_sacct_delimited(text, delimiter, "sacct output", log))
    assert [(j.raw_id, j.user, j.cpus, j.name) for j in jobs] == [(5, "alice", 4, name), (6, "bob", 2, "x")]
    assert log.total == 0


def test_a_job_name_imitating_records_in_live_output_forges_nothing() -> None:
    delimiter = record_delimiter()
    # A whole record as the '|' text of `sacct -P` would print it, after a newline, in the name.
    forged = "|".join(live_record(666, "mallory", 64, "forged"))
    name = f"run|{forged}\n{forged}\n"
    text = live_output(delimiter, [_LIVE_HEADER, live_record(5, "alice", 4, name), live_record(6, "bob", 2, "x")])
    log = DropLog()
    jobs = list(read_sacct_delimited(text, delimiter, "sacct output", log))
    assert [(j.raw_id, j.user, j.cpus) for j in jobs] == [(5, "alice", 4), (6, "bob", 2)] and log.total == 0
    assert jobs[0].name == name
    # The '|' reader of a saved file cannot tell such a name from records (why the live import does not use it).
    saved = "|".join(_LIVE_HEADER) + "\n" + "|".join(live_record(5, "alice", 4, name)) + "\n"
    assert 666 in {j.raw_id for j in read_sacct_text(io.StringIO(saved, newline="\n"), "saved.txt", DropLog())}


def test_live_output_cut_off_is_counted_with_its_line() -> None:
    delimiter = record_delimiter()
    records = [_LIVE_HEADER, live_record(5, "alice", 4, "two\nlines"), live_record(6, "bob", 2, "x")]
    log = DropLog()
    text = live_output(delimiter, records, cut=f"8{delimiter}8{delimiter}dave")
    jobs = list(read_sacct_delimited(text, delimiter, "sacct output", log))
    assert [j.raw_id for j in jobs] == [5, 6] and jobs[0].name == "two\nlines"
    # Lines: the header 1, job 5 on 2-3 (its name spans two), job 6 on 4, the cut record on 5.
    cut = f"8{delimiter}8{delimiter}dave"
    assert log.examples == [f"sacct output:5: record cut short at the end of the output: {cut!r}"]


def test_live_output_out_of_step_is_reported_and_not_read_on() -> None:
    delimiter = record_delimiter()
    # Not sacct's layout: a record missing a field, which would put the next record's job id in its last one.
    short = live_record(7, "carol", 1, "a")
    del short[3]
    records = [_LIVE_HEADER, live_record(5, "alice", 4, "a"), short, live_record(6, "bob", 2, "x")]
    log = DropLog()
    jobs = list(read_sacct_delimited(live_output(delimiter, records), delimiter, "sacct output", log))
    assert [j.raw_id for j in jobs] == [5] and len(log.examples) == 1  # nothing read after the misstep
    assert log.examples[0].startswith(f"sacct output:3: output out of step, not read on: '7{delimiter}7{delimiter}")


def test_live_output_without_the_runs_delimiter_is_one_line_error() -> None:
    text = "|".join(_LIVE_HEADER) + "\n" + "|".join(live_record(5, "alice", 4, "a")) + "\n"
    with pytest.raises(HistoryFormatError, match=r"^sacct output:1: not sacct output with the delimiter"):
        list(read_sacct_delimited(text, record_delimiter(), "sacct output", DropLog()))


def test_job_names_are_read_and_a_file_without_them_still_imports() -> None:
    jobs, _ = read_text("sacct-parsable2.txt")
    names = {j.job_id: j.name for j in jobs}
    assert names["100"] == "sim-a" and names["101"] == "short run"
    assert names["102"] == "pipe|name" and names["103"] == "line one\nline two"  # the free-text column, whole
    columns = (*SACCT_FIELDS[:-1],)  # the headerless sample: no NodeList, no JobName
    jobs, log = read_text("sacct-noheader-epoch.txt", columns=columns)
    assert [j.raw_id for j in jobs] == [200, 201] and log.total == 0 and {j.name for j in jobs} == {""}


def test_json_job_names_and_an_odd_one() -> None:
    text = (HISTORY / "sacct-22.05.json").read_text()
    jobs = {j.job_id: j for j in read_sacct_json(text, "sacct-22.05.json", DropLog())}
    assert jobs["300"].name == "wrap" and jobs["308"].name == ""  # 308 has no name
    doc = json.loads(text)
    doc["jobs"][0]["name"] = 42  # not a string: the job is read, without a name
    log = DropLog()
    jobs = {j.job_id: j for j in read_sacct_json(json.dumps(doc), "odd.json", log)}
    assert jobs["300"].name == "" and jobs["300"].cpus == 16 and log.malformed == 1  # jobs[9], as before


_HEADER = "JobID|JobIDRaw|JobName|User|Account|Partition|QOS|State|Submit|Start|End|TimelimitRaw|AllocCPUS|NNodes\n"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(max_size=120), max_size=8))
def test_random_lines_parse_or_count_as_malformed(lines: list[str]) -> None:
    log = DropLog()
    jobs = list(read_sacct_text([_HEADER, *(line + "\n" for line in lines)], "r.txt", log))
    assert all(isinstance(j, HistoryJob) for j in jobs)
    assert all(e.startswith("r.txt:") for e in log.examples)
    with contextlib.suppress(HistoryFormatError):
        list(read_sacct_text(lines, "r.txt", DropLog()))


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet=st.sampled_from("ab |\n=\r\x0céé"), max_size=30)
    | st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=40)
)
def test_any_job_name_leaves_the_other_fields_alone(name: str) -> None:
    record = f"5|5|{name}|alice|atlas|debug|normal|COMPLETED|1795000000|1795000010|1795000070|10|4|1\n"
    log = DropLog()
    text = _HEADER + record + "6|6|x|bob|cms|debug|normal|COMPLETED|1795000000|1795000010|1795000070|10|2|1\n"
    jobs = list(read_sacct_text(io.StringIO(text, newline="\n"), "n.txt", log))
    read = [(j.raw_id, j.user, j.cpus) for j in jobs]
    assert read[-1:] == [(6, "bob", 2)], log.examples  # the next record is never lost
    if name.count("\n") >= MAX_CONTINUATION or ("\n" in name and "|" in name):
        # Beyond what a record may span, or a '|' and a newline both (indistinguishable from a line cut
        # short): job 5 is reported, never read with another record's fields.
        assert read in ([(5, "alice", 4), (6, "bob", 2)], [(6, "bob", 2)])
        assert log.malformed or len(read) == 2
    else:
        assert read == [(5, "alice", 4), (6, "bob", 2)], log.examples


_JSON_DOC = json.loads((HISTORY / "sacct-22.05.json").read_text())
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None)
@given(
    st.integers(0, 7),
    st.sampled_from(["job_id", "time", "state", "tres", "array", "het", "account", "required", "allocation_nodes"]),
    json_values,
)
def test_a_corrupt_json_entry_is_malformed_or_read_never_a_crash(index: int, key: str, value: object) -> None:
    doc = json.loads(json.dumps(_JSON_DOC))
    doc["jobs"][index][key] = value
    log = DropLog()
    jobs = list(read_sacct_json(json.dumps(doc), "c.json", log))
    assert len(jobs) + log.malformed + sum(log.dropped.values()) == len(doc["jobs"])
    assert all(0 <= j.cpus <= 10**8 and j.nodes >= 0 for j in jobs)


def test_a_job_cancelled_while_pending_is_dropped_though_slurm_gives_it_a_start() -> None:
    # Recorded from Slurm 22.05 with slurmdbd: a job cancelled while pending behind a 16-CPU job.
    text = [
        "JobIDRaw|State|Submit|Eligible|Start|End|AllocCPUS|ReqCPUS|NNodes|NodeList|Account|TimelimitRaw",
        "2|COMPLETED|1795107511|1795107511|1795107512|1795107517|16|16|1|node1|cms|10",
        "3|CANCELLED by 0|1795107512|1795107512|1795107513|1795107513|16|16|1|None assigned|cms|10",
    ]
    log = DropLog()
    jobs = list(read_sacct_text(text, "live.txt", log))
    by_id = {j.job_id: j for j in jobs}
    assert drop_reason(by_id["2"]) is None
    assert math.isnan(by_id["3"].start_s) and drop_reason(by_id["3"]) == "cancelled_before_start"
    assert "NodeList" in SACCT_FIELDS
