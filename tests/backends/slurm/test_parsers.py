"""Parsers of Slurm output: recorded samples from the real test cluster (tests/data/slurm/, captured on
Debian 12's Slurm 22.05.8) and hypothesis property tests (any input parses or raises SlurmParseError)."""

from __future__ import annotations

import contextlib
import copy
import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlsched.backends.slurm.completions import read_sacct_completions
from rlsched.backends.slurm.errors import SlurmParseError
from rlsched.backends.slurm.parsers import (
    parse_duration_s,
    parse_jobcomp_line,
    parse_jobcomp_record,
    parse_scontrol_config,
    parse_sinfo_json,
    parse_sinfo_json_reference,
    parse_squeue_json,
    parse_squeue_json_reference,
)
from rlsched.history.records import DropLog

DATA = Path(__file__).resolve().parents[2] / "data" / "slurm"
SQUEUE = (DATA / "squeue-mixed.json").read_text()
SINFO = (DATA / "sinfo-cloud.json").read_text()


def test_squeue_sample_quirks() -> None:
    jobs = {job.job_id: job for job in parse_squeue_json(SQUEUE)}
    # job 3 had Nice=-500 set by an admin: printed as 4294966796.
    assert jobs[3].nice == -500 and jobs[3].state == "COMPLETED"
    assert jobs[2].nice == -5
    # job 9: user nice 100, held by the user (priority 0, reason JobHeldUser).
    assert jobs[9].nice == 100 and jobs[9].held and jobs[9].priority == 0 and jobs[9].pending
    assert jobs[9].account == "lhcb" and jobs[9].cpus == 4 and math.isinf(jobs[9].time_limit_s)
    # job 5 was cancelled while pending: cpus is null and start_time == end_time: it never ran.
    assert jobs[5].cpus == 0 and jobs[5].state == "CANCELLED" and jobs[5].start_s == jobs[5].end_s
    # job 10's name mimics key=value pairs: JSON keeps it out of the way.
    assert jobs[10].account == "atlas" and jobs[10].partition == "debug"
    running = [job for job in jobs.values() if job.active]
    assert [job.job_id for job in running] == [7]
    assert running[0].time_limit_s == 300 and running[0].start_s >= running[0].submit_s
    assert all(not math.isnan(j.end_s) for j in jobs.values() if j.finished)
    assert all(math.isnan(j.start_s) for j in jobs.values() if j.pending)


def test_squeue_job_names_and_a_job_without_one() -> None:
    doc = json.loads(SQUEUE)
    del doc["jobs"][7]["name"]  # job 8
    doc["jobs"][8]["name"] = None  # job 9
    doc["jobs"][6]["name"] = 42  # job 7: not a string
    for parse in (parse_squeue_json, parse_squeue_json_reference):
        jobs = {job.job_id: job for job in parse(json.dumps(doc))}
        assert jobs[1].name == "wrap" and jobs[10].name == 'weird | name "x" JobState=FAILED Partition=x'
        assert (jobs[7].name, jobs[8].name, jobs[9].name) == ("", "", "")
        assert jobs[7].active and jobs[7].cpus > 0  # the odd name costs the job nothing else


def test_sinfo_sample_lists_each_node_once() -> None:
    nodes = {node.name: node for node in parse_sinfo_json(SINFO)}
    assert sorted(nodes) == ["cloud1", "cloud2", "cloud3", "cloud4", "node1"]
    assert nodes["node1"].cpus == 16 and nodes["node1"].accepting and not nodes["node1"].cloud
    cloud = nodes["cloud1"]
    assert cloud.cloud and not cloud.powered and not cloud.live and cloud.cpus == 8
    assert cloud.partitions == ("cloud", "burst") and cloud.features == ("cloud",)


def test_scontrol_config_sample() -> None:
    config = parse_scontrol_config((DATA / "scontrol-show-config.txt").read_text())
    assert config["PriorityType"] == "priority/multifactor"
    assert config["JobCompType"] == "jobcomp/filetxt"
    assert config["PriorityWeightJobSize"] == "1000"
    with pytest.raises(SlurmParseError, match="scontrol show config"):
        parse_scontrol_config("Configuration data as of now\n")


def test_jobcomp_sample() -> None:
    lines = (DATA / "jobcomp.txt").read_text().splitlines()
    parsed = [parse_jobcomp_line(line, f"line {i}") for i, line in enumerate(lines, 1)]
    by_id = {job.job_id: job for job in parsed if job is not None}
    assert 4 not in by_id and 5 not in by_id  # cancelled while pending: never ran
    assert by_id[2].cpus == 16 and by_id[2].account == "cms" and by_id[2].time_limit_s == 600
    assert by_id[2].end_s - by_id[2].start_s == 30 and by_id[2].start_s == by_id[2].submit_s
    # The job name "weird | name "x" JobState=FAILED Partition=x" does not fool the parser.
    assert by_id[10].state == "COMPLETED" and by_id[10].partition == "debug" and by_id[10].account == "atlas"
    assert by_id[10].time_limit_s == 525600 * 60
    # The free-text Name, whole: everything between the user/group and the fixed run of fields.
    assert parse_jobcomp_record(lines[0]).name == "wrap"
    assert parse_jobcomp_record(lines[-1]).name == 'weird | name "x" JobState=FAILED Partition=x'
    assert parse_jobcomp_record(lines[0].replace(" Name=wrap ", " Name= ")).name == ""


def test_jobcomp_bad_line_names_the_place() -> None:
    with pytest.raises(SlurmParseError, match=r"jobcomp/filetxt: bad output at line 7: not a jobcomp"):
        parse_jobcomp_line("JobId=x garbage", "line 7")


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("UNLIMITED", math.inf),
        ("Partition_Limit", math.inf),
        ("10", 600),
        ("10:30", 630),
        ("01:02:03", 3723),
        ("2-00", 172800),
        ("1-02:03", 93780),
        ("1-02:03:04", 93784),
    ],
)
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration_s(text) == seconds


def test_errors_reported_by_slurm_are_parse_errors() -> None:
    doc = json.dumps({"meta": {}, "errors": [{"error": "Unable to contact slurm controller"}], "jobs": []})
    with pytest.raises(SlurmParseError, match=r"squeue --json.*Unable to contact"):
        parse_squeue_json(doc)


@pytest.mark.parametrize("cut", [0, 1, 100, len(SQUEUE) // 2, len(SQUEUE) - 2])
def test_truncated_json_is_a_parse_error(cut: int) -> None:
    with pytest.raises(SlurmParseError, match="squeue --json: bad output: not JSON"):
        parse_squeue_json(SQUEUE[:cut])


def test_wrong_types_name_the_field() -> None:
    doc = json.loads(SQUEUE)
    doc["jobs"][2]["job_id"] = "3"
    with pytest.raises(SlurmParseError, match=r"at jobs\[2\]\.job_id: expected an integer"):
        parse_squeue_json(json.dumps(doc))
    doc = json.loads(SQUEUE)
    doc["jobs"][0]["nice"] = 2**40
    with pytest.raises(SlurmParseError, match=r"jobs\[0\]\.nice"):
        parse_squeue_json(json.dumps(doc))


# ------------------------------------------------------------------------------------------ properties

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70) | st.floats() | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)


def _mutate(doc: Any, path: list[Any], value: Any) -> Any:
    """Replace the element at ``path`` (indices into dicts by sorted key position) with ``value``."""
    node = doc
    for step in path[:-1]:
        if isinstance(node, dict) and node:
            node = node[sorted(node)[step % len(node)]]
        elif isinstance(node, list) and node:
            node = node[step % len(node)]
        else:
            return doc
    if isinstance(node, dict) and node:
        node[sorted(node)[path[-1] % len(node)]] = value
    elif isinstance(node, list) and node:
        node[path[-1] % len(node)] = value
    return doc


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_random_text_parses_or_raises_parse_error(text: str) -> None:
    for parser in (parse_squeue_json, parse_sinfo_json, parse_scontrol_config):
        with contextlib.suppress(SlurmParseError):
            parser(text)
    read_sacct_completions(text, DropLog())  # never raises: a bad record is counted and skipped
    with contextlib.suppress(SlurmParseError):
        parse_jobcomp_line(text)


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_random_json_parses_or_raises_parse_error(value: Any) -> None:
    for parser in (parse_squeue_json, parse_sinfo_json):
        for doc in (value, {"jobs": value, "nodes": value}, {"jobs": [value], "nodes": [value]}):
            with contextlib.suppress(SlurmParseError):
                parser(json.dumps(doc))


_SQUEUE_DOC = json.loads(SQUEUE)
_SINFO_DOC = json.loads(SINFO)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.integers(0, 50), min_size=1, max_size=5), json_values, st.sampled_from(["squeue", "sinfo"]))
def test_corrupted_samples_parse_or_raise_parse_error(path: list[int], value: Any, which: str) -> None:
    doc = copy.deepcopy(_SQUEUE_DOC if which == "squeue" else _SINFO_DOC)
    text = json.dumps(_mutate(doc, path, value))
    parser = parse_squeue_json if which == "squeue" else parse_sinfo_json
    try:
        parser(text)
    except SlurmParseError as exc:
        assert exc.command in ("squeue --json", "sinfo --json")
        assert str(exc).startswith(exc.command)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 10**6), st.text(alphabet=st.characters(blacklist_characters="\n\r"), max_size=60))
def test_jobcomp_names_never_break_the_parser(position: int, junk: str) -> None:
    line = (DATA / "jobcomp.txt").read_text().splitlines()[0]
    name_at = line.index("Name=") + len("Name=")
    corrupted = line[:name_at] + junk + line[name_at:]
    job = parse_jobcomp_line(corrupted)
    assert job is not None and job.job_id == 2 and job.cpus == 16
    cut = line[: position % len(line)]
    with contextlib.suppress(SlurmParseError):
        parse_jobcomp_line(cut)


def _outcome(parse: Any, text: str) -> tuple[Any, list[str], str | None]:
    """What a reader makes of ``text``: its records (NaN made comparable), its skips, its error."""
    skipped: list[str] = []
    try:
        records = (
            parse(text, skipped.append) if parse in (parse_squeue_json, parse_squeue_json_reference) else parse(text)
        )
    except SlurmParseError as exc:
        return None, [str(e) for e in skipped], str(exc)
    return repr(records).replace("nan", "NaN"), [str(e) for e in skipped], None


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.lists(st.integers(0, 50), min_size=1, max_size=4), min_size=1, max_size=3),
    json_values,
    st.sampled_from(["squeue", "sinfo"]),
)
def test_typed_decoding_reads_exactly_what_the_reference_reader_does(
    paths: list[list[int]], value: Any, which: str
) -> None:
    """msgspec's typed reader against json.loads + field checks: same jobs, same skips, same errors."""
    doc = copy.deepcopy(_SQUEUE_DOC if which == "squeue" else _SINFO_DOC)
    jobs_key = 1 if which == "squeue" else 2  # "jobs" / "nodes" among the sorted top-level keys
    for path in paths:
        # Mostly inside one job (node), sometimes anywhere in the document.
        doc = _mutate(doc, [jobs_key, *path] if len(path) > 1 else path, copy.deepcopy(value))
    text = json.dumps(doc)
    fast, reference = (
        (parse_squeue_json, parse_squeue_json_reference)
        if which == "squeue"
        else (parse_sinfo_json, parse_sinfo_json_reference)
    )
    assert _outcome(fast, text) == _outcome(reference, text)


@pytest.mark.parametrize(
    "field,value",
    [
        ("cpus", None),
        ("cpus", 2**30),
        ("priority", 2**33),
        ("nice", 2**40),
        ("job_id", 0),
        ("job_state", ""),
        ("submit_time", None),
        ("time_limit", None),
        ("start_time", None),
        ("state_reason", None),
        ("name", None),
        ("name", 42),
        ("name", ["a"]),
        ("name", {"a": 1}),
    ],
)
def test_typed_decoding_of_odd_fields_matches_the_reference(field: str, value: Any) -> None:
    doc = copy.deepcopy(_SQUEUE_DOC)
    for job in doc["jobs"]:
        job[field] = value
    text = json.dumps(doc)
    assert _outcome(parse_squeue_json, text) == _outcome(parse_squeue_json_reference, text)
