"""Slurm accounting records: ``sacct --parsable2`` text, ``sacct --json`` (Slurm 22.05), and ``sacct`` run live.

Text (docs/history.md, "sacct text"): ``|``-separated fields under a header line of field names, the way
``sacct --parsable2`` (``-P``) prints them without ``--noheader``; ``--parsable`` (``-p``, a trailing ``|``)
is accepted too.  Columns are found by name in the header, so any order and extra columns work.  Times are
epoch seconds (``SLURM_TIME_FORMAT=%s``, what the live import sets) or Slurm's default
``YYYY-MM-DDTHH:MM:SS`` in the local time zone of the importing machine (set ``TZ`` to the cluster's).

Free-text columns (``JobName``, ``Comment``, ``WorkDir``…) may hold ``|`` or a newline: with exactly one
such column a line with too many fields has the surplus joined into it, and a line with too few is joined
with the next lines until the count is right (up to :data:`MAX_CONTINUATION` lines).  A name holding both a
newline and ``|`` can still imitate fields there, so the live import does not read ``|`` text: it asks for
the fixed-format fields of :data:`SACCT_FIELDS` and ``JobName`` (:data:`SACCT_LIVE_FIELDS`) with a delimiter
drawn at random for the run, which ``--parsable`` puts after every field (:func:`read_sacct_delimited`): no
job name recorded before the run can hold it, so none can end a field or a record early.

``JobName`` is optional everywhere (a file without it imports, every job's name ""): the trace keeps only
its executable id (:func:`rlsched.core.view.executable_id`, SWF field 14), never the name.

JSON: the ``jobs`` list of ``sacct --json`` as Slurm 22.05 prints it (openapi ``dbv0.0.38``: ``job_id``,
``array.{job_id,task_id,task}``, ``time.{submission,eligible,start,end,limit}`` with the limit in minutes,
``state.current``, ``tres.allocated``/``tres.requested`` lists of ``{type, count}``, ``required.CPUs``),
tolerant of missing optional fields and of the later layouts' ``{"set", "infinite", "number"}`` numbers and
list-valued states.
"""

from __future__ import annotations

import json
import math
import re
import secrets
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any

from rlsched.backends.common.runner import CommandExecutor, CommandResult
from rlsched.backends.slurm.errors import SlurmParseError
from rlsched.backends.slurm.parsers import parse_duration_s
from rlsched.history.records import DropLog, HistoryFormatError, HistoryJob

#: The fixed-format fields of a sacct record (no free text: no value holds ``|`` or a newline).  A saved file
#: may have these in any order, and others beside them.
SACCT_FIELDS = (
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
    "NodeList",
)
#: The ``--format`` the live import asks for: :data:`SACCT_FIELDS` and the job name (free text, read safely
#: through the run's own delimiter: :func:`sacct_argv`), whose CRC-32 becomes SWF field 14.
SACCT_LIVE_FIELDS = (*SACCT_FIELDS, "JobName")
#: The NodeList of a job that never ran.  Slurm 22.05 gives a job cancelled while pending a Start (= End, the
#: cancel time) and its requested CPUs as AllocCPUS: only the node list tells it never started.
NONE_ASSIGNED = "None assigned"
#: Columns whose values users write freely (may contain ``|`` or a newline).
FREE_TEXT = frozenset(
    {"jobname", "comment", "admincomment", "systemcomment", "workdir", "submitline", "constraints", "wckey", "reason"}
)
#: A line with too few fields is joined with at most this many following lines (a newline in a job name).
MAX_CONTINUATION = 8
#: Upper bound on any count read (CPUs, nodes): beyond it the record is malformed, not huge.
_MAX_COUNT = 10**8
#: sacct's words for "no such time".
_NO_TIME = frozenset({"", "Unknown", "None", "N/A"})
#: ``123_[1-5]``, ``123_[1,3,5%2]``: the pending remainder of a job array.
_ARRAY_PLACEHOLDER = re.compile(r"^\d+_\[")
_LEADING_INT = re.compile(r"^(\d+)")
_UNLIMITED = frozenset({"UNLIMITED", "INFINITE", "PARTITION_LIMIT", "NONE"})
#: 22.05 prints INFINITE (0xffffffff) and NO_VAL (0xfffffffe) limits as these numbers in JSON.
_NO_VAL32 = 0xFFFFFFFE


class _Bad(Exception):
    """One field of one record is unreadable (becomes a malformed-line entry)."""


# ------------------------------------------------------------------------------------------- fields


def _time(text: str, name: str) -> float:
    if text.isdecimal():
        return float(text)  # SLURM_TIME_FORMAT=%s
    if text in _NO_TIME:
        return math.nan
    try:
        return datetime.fromisoformat(text).timestamp()  # naive: the local time zone (TZ)
    except (ValueError, OverflowError, OSError):
        raise _Bad(f"{name}: not a time: {text[:40]!r} (epoch seconds or YYYY-MM-DDTHH:MM:SS)") from None


def _count(text: str, name: str) -> int:
    if not text.isdecimal() or len(text) > 9 or int(text) > _MAX_COUNT:
        raise _Bad(f"{name}: not a count: {text[:40]!r}")
    return int(text)


def _limit_minutes(text: str) -> float:
    if text.isdecimal():
        return 60.0 * int(text)
    if text.upper() in _UNLIMITED or text == "":
        return math.inf
    raise _Bad(f"TimelimitRaw: not minutes: {text[:40]!r}")


def _limit_duration(text: str) -> float:
    if text == "":
        return math.inf
    try:
        return parse_duration_s(text)
    except SlurmParseError:
        raise _Bad(f"Timelimit: not a Slurm duration: {text[:40]!r}") from None


# ------------------------------------------------------------------------------------------- text


class _Columns:
    """Where each field is in a line, found by name in the header (case-insensitive)."""

    def __init__(self, names: Sequence[str], where: str, trailing: bool = False) -> None:
        lowered = [n.strip().lower() for n in names]
        self.trailing = trailing
        self.n = len(lowered)
        self.pos = {name: i for i, name in reversed(list(enumerate(lowered)))}

        def first(*choices: str, required: bool = True) -> int:
            for choice in choices:
                if choice in self.pos:
                    return self.pos[choice]
            if required:
                raise HistoryFormatError(
                    f"{where}: no {' or '.join(choices)} column in the header ({'|'.join(names)[:120]})"
                )
            return -1

        self.raw = first("jobidraw", required=False)
        self.jobid = first("jobid", required=self.raw < 0)
        self.user = first("user", required=False)
        self.group = first("group", required=False)
        self.account = first("account", required=False)
        self.partition = first("partition", required=False)
        self.qos = first("qos", required=False)
        self.state = first("state")
        self.submit = first("submit")
        self.eligible = first("eligible", required=False)
        self.start = first("start")
        self.end = first("end")
        self.limit_raw = first("timelimitraw", required=False)
        self.limit = first("timelimit", required=False) if self.limit_raw < 0 else -1
        self.cpus = first("alloccpus", "ncpus")
        self.req_cpus = first("reqcpus", required=False)
        self.nodes = first("nnodes", "allocnodes", required=False)
        self.nodelist = first("nodelist", required=False)
        self.name = first("jobname", required=False)
        free = [i for i, name in enumerate(lowered) if name in FREE_TEXT]
        self.free = free[0] if len(free) == 1 else -1
        self.n_free = len(free)


def _fix_count(fields: list[str], cols: _Columns) -> list[str] | None:
    """The fields with a surplus joined into the one free-text column (a ``|`` in a job name); None when
    there is no such column."""
    extra = len(fields) - cols.n
    if extra > 0 and cols.free >= 0:
        f = cols.free
        return [*fields[:f], "|".join(fields[f : f + extra + 1]), *fields[f + extra + 1 :]]
    return None


def _records(
    lines: Iterator[tuple[int, str]], cols: _Columns, source: str, log: DropLog
) -> Iterator[tuple[str, list[str]]]:
    """(``FILE:LINE``, fields) per record, joining lines split by a newline inside a free-text value.

    Only a line that ends inside the free-text column is joined, and the joined record must have exactly
    the header's count: a line cut short elsewhere is reported, and the next record is read on its own.
    """
    pending: tuple[int, str, int] | None = None  # first line, text so far, lines joined
    for lineno, raw in lines:
        line = raw.rstrip("\r\n")
        if cols.trailing and line.endswith("|"):
            line = line[:-1]
        if pending is not None:
            first, text, joined = pending
            fields = f"{text}\n{line}".split("|")
            if len(fields) == cols.n:
                pending = None
                yield f"{source}:{first}", fields
                continue
            if len(fields) < cols.n and len(fields) - 1 == cols.free and joined < MAX_CONTINUATION:
                pending = (first, f"{text}\n{line}", joined + 1)
                continue
            log.bad(
                f"{source}:{first}",
                f"record cut short ({len(text.split('|'))} fields, the header has {cols.n}): {text[:80]!r}",
            )
            pending = None
        if not line.strip():
            continue
        fields = line.split("|")
        if len(fields) != cols.n:
            fixed = _fix_count(fields, cols) if len(fields) > cols.n else None
            if fixed is None:
                if len(fields) < cols.n and len(fields) - 1 == cols.free:
                    pending = (lineno, line, 0)  # the line ends inside the free-text value: read on
                    continue
                log.bad(f"{source}:{lineno}", f"{len(fields)} fields, the header has {cols.n}: {line[:80]!r}")
                continue
            fields = fixed
        yield f"{source}:{lineno}", fields
    if pending is not None:
        log.bad(f"{source}:{pending[0]}", f"record cut short at the end of the input: {pending[1][:80]!r}")


def read_sacct_text(
    lines: Iterable[str], source: str, log: DropLog, columns: Sequence[str] | None = None
) -> Iterator[HistoryJob]:
    """Jobs of ``sacct --parsable2`` text (see the module docstring).

    ``columns``: the field names of a file saved with ``--noheader`` (its first line is then a record).
    Steps and array placeholders are counted in ``log`` here; a bad line is ``log.bad`` (``FILE:LINE``).
    """
    numbered = enumerate(lines, 1)
    if columns is None:
        for lineno, line in numbered:
            if line.strip():
                header = line.rstrip("\r\n").split("|")
                trailing = len(header) > 1 and header[-1] == ""  # --parsable: every line ends with '|'
                if trailing:
                    header = header[:-1]
                if not any(h.strip().lower() in ("jobid", "jobidraw") for h in header):
                    raise HistoryFormatError(
                        f"{source}:{lineno}: not a sacct header line (no JobID/JobIDRaw field): {line[:80]!r}; "
                        "export with `sacct --parsable2` without --noheader, or name the fields with --columns"
                    )
                cols = _Columns(header, f"{source}:{lineno}", trailing)
                break
        else:
            return  # an empty file: no job
    else:
        cols = _Columns(columns, f"{source}: --columns")
    yield from _parse_records(_records(numbered, cols, source, log), cols, log)


def _parse_records(records: Iterator[tuple[str, list[str]]], cols: _Columns, log: DropLog) -> Iterator[HistoryJob]:
    # The hot loop of a million-record import (benchmarks/bench_history.py): column positions in locals, the
    # common cases (epoch digits, small counts) inline, the rare ones through the checking helpers.  A
    # missing optional column reads the "" appended to every record.
    intern = sys.intern  # users, accounts, states, job names repeat: keep one string of each
    i_id = cols.jobid if cols.jobid >= 0 else cols.raw
    i_raw, has_raw = (cols.raw, True) if cols.raw >= 0 else (i_id, False)
    i_user, i_group, i_account, i_partition, i_qos = cols.user, cols.group, cols.account, cols.partition, cols.qos
    i_state, i_submit, i_eligible, i_start, i_end = cols.state, cols.submit, cols.eligible, cols.start, cols.end
    i_cpus, i_nodes, i_req = cols.cpus, cols.nodes, cols.req_cpus
    i_limit_raw, i_limit, i_nodelist, i_name = cols.limit_raw, cols.limit, cols.nodelist, cols.name
    placeholder = _ARRAY_PLACEHOLDER.match
    leading_int = _LEADING_INT.match
    nan = math.nan

    def when(text: str, name: str) -> float:
        return float(text) if text.isdecimal() else _time(text, name)

    def count(text: str, name: str) -> int:
        return int(text) if text.isdecimal() and len(text) < 9 else _count(text, name)

    for where, f in records:
        f.append("")
        try:
            job_id = f[i_id]
            raw = f[i_raw]
            if "." in raw or "." in job_id:
                log.drop("job_step")
                continue
            if placeholder(job_id):
                log.drop("array_placeholder")
                continue
            if raw.isdecimal():
                raw_id = int(raw)
            else:
                match = leading_int(raw)
                if match is None or has_raw:
                    raise _Bad(f"JobIDRaw: not a job id: {raw[:40]!r}")
                raw_id = int(match[1])
            state = f[i_state]
            if " " in state:
                state = state.split(" ", 1)[0]  # "CANCELLED by 0"
            if i_limit_raw >= 0:
                limit_text = f[i_limit_raw]
                limit = 60.0 * int(limit_text) if limit_text.isdecimal() else _limit_minutes(limit_text)
            elif i_limit >= 0:
                limit = _limit_duration(f[i_limit])
            else:
                limit = math.inf
            eligible = f[i_eligible]
            nodes = f[i_nodes]
            req = f[i_req]
            never_ran = f[i_nodelist] == NONE_ASSIGNED
            yield HistoryJob(
                job_id,
                raw_id,
                intern(f[i_user]),
                intern(f[i_group]),
                intern(f[i_account]),
                intern(f[i_partition]),
                intern(f[i_qos]),
                intern(state),
                when(f[i_submit], "Submit"),
                when(eligible, "Eligible") if eligible else nan,
                nan if never_ran else when(f[i_start], "Start"),
                when(f[i_end], "End"),
                limit,
                count(f[i_cpus], "AllocCPUS"),
                count(nodes, "NNodes") if nodes else 0,
                count(req, "ReqCPUS") if req else -1,
                intern(f[i_name]),
            )
        except _Bad as exc:
            log.bad(where, str(exc))


# ------------------------------------------------------------------------------------------- JSON


def _number(value: Any, name: str) -> float | None:
    """An integer of the JSON (None: absent); later Slurm layouts wrap numbers as {set, infinite, number}."""
    if isinstance(value, Mapping):
        if value.get("infinite"):
            return math.inf
        if value.get("set") is False:
            return None
        value = value.get("number")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise _Bad(f"{name}: expected a number, got {value!r:.40}")
    return float(value)


def _epoch_json(value: Any, name: str) -> float:
    number = _number(value, name)
    return number if number else math.nan  # 0 or absent: no such time


def _string(obj: Mapping[str, Any], key: str) -> str:
    value = obj.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise _Bad(f"{key}: expected a string, got {value!r:.40}")
    return value


def _object(obj: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    """A nested object of the JSON, or an empty one when absent (optional blocks)."""
    value = obj.get(key)
    return value if isinstance(value, Mapping) else {}


def _tres(tres: Any, kind: str, which: str) -> int | None:
    if not isinstance(tres, Mapping):
        return None
    items = tres.get(which)
    if not isinstance(items, list):
        return None
    for item in items:
        if isinstance(item, Mapping) and item.get("type") == kind:
            count = _number(item.get("count"), f"tres.{which}.{kind}")
            if count is not None and count != math.inf:
                if not 0 <= count <= _MAX_COUNT:
                    raise _Bad(f"tres.{which}.{kind}: out of range: {count:g}")
                return int(count)
    return None


def _json_job(raw: Any) -> HistoryJob | str:
    """A job of the ``jobs`` list, or the drop reason found from its ids alone."""
    if not isinstance(raw, Mapping):
        raise _Bad(f"expected an object, got {type(raw).__name__}")
    job_id_n = _number(raw.get("job_id"), "job_id")
    if job_id_n is None or job_id_n != int(job_id_n) or job_id_n <= 0:
        raise _Bad(f"job_id: not a job id: {raw.get('job_id')!r:.40}")
    job_id = int(job_id_n)
    array = _object(raw, "array")
    array_job = _number(array.get("job_id"), "array.job_id") or 0
    task_id = _number(array.get("task_id"), "array.task_id")
    task = array.get("task")
    shown = str(job_id)
    if array_job and array_job != math.inf:
        if task_id is not None and task_id < _NO_VAL32:
            shown = f"{int(array_job)}_{int(task_id)}"
        elif isinstance(task, str) and task:
            return "array_placeholder"  # the pending remainder: "1-5" or "[1-5%2]"
    het = _object(raw, "het")
    het_offset = _number(het.get("job_offset"), "het.job_offset")
    het_job = _number(het.get("job_id"), "het.job_id") or 0
    if het_job and het_offset is not None and het_offset < _NO_VAL32:
        shown = f"{int(het_job)}+{int(het_offset)}"
    time = raw.get("time")
    if not isinstance(time, Mapping):
        raise _Bad("time: missing")
    state_obj = raw.get("state")
    state: Any = state_obj.get("current") if isinstance(state_obj, Mapping) else state_obj
    if isinstance(state, list):
        state = state[0] if state else ""
    if not isinstance(state, str):
        raise _Bad(f"state.current: expected a string, got {state!r:.40}")
    limit_min = _number(time.get("limit"), "time.limit")
    limit = math.inf if limit_min is None or limit_min >= _NO_VAL32 else 60.0 * limit_min
    tres = raw.get("tres")
    cpus = _tres(tres, "cpu", "allocated")
    nodes = _tres(tres, "node", "allocated")
    if nodes is None:
        alloc_nodes = raw.get("allocation_nodes")
        if isinstance(alloc_nodes, str) and alloc_nodes.isdecimal():
            nodes = int(alloc_nodes)
        else:
            n = _number(alloc_nodes, "allocation_nodes")
            nodes = int(n) if n is not None and 0 <= n <= _MAX_COUNT else 0
    req = _tres(tres, "cpu", "requested")
    if req is None:
        required = raw.get("required")
        req_n = _number(required.get("CPUs"), "required.CPUs") if isinstance(required, Mapping) else None
        req = int(req_n) if req_n is not None and 0 <= req_n <= _MAX_COUNT else -1
    association = _object(raw, "association")
    name = raw.get("name")
    return HistoryJob(
        job_id=shown,
        raw_id=job_id,
        user=_string(raw, "user"),
        group=_string(raw, "group"),
        account=_string(raw, "account") or _string(association, "account"),
        partition=_string(raw, "partition"),
        qos=_string(raw, "qos"),
        state=state.split(" ", 1)[0],
        submit_s=_epoch_json(time.get("submission"), "time.submission"),
        eligible_s=_epoch_json(time.get("eligible"), "time.eligible"),
        start_s=math.nan if raw.get("nodes") == NONE_ASSIGNED else _epoch_json(time.get("start"), "time.start"),
        end_s=_epoch_json(time.get("end"), "time.end"),
        time_limit_s=limit,
        cpus=cpus or 0,
        nodes=nodes,
        req_cpus=req,
        # A name only identifies the job's program: one of another type costs the job its history, not the job.
        name=name if isinstance(name, str) else "",
    )


def read_sacct_json(text: str, source: str, log: DropLog) -> Iterator[HistoryJob]:
    """Jobs of a ``sacct --json`` document (see the module docstring).  A document that is not JSON, or has
    no ``jobs`` list, is a :class:`HistoryFormatError`; a bad job entry is ``log.bad`` (``FILE:jobs[i]``)."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise HistoryFormatError(f"{source}:{exc.lineno}: not JSON: {exc.msg}") from None
    except (ValueError, RecursionError) as exc:
        raise HistoryFormatError(f"{source}: not JSON: {str(exc)[:120]}") from None
    if not isinstance(doc, Mapping) or not isinstance(doc.get("jobs"), list):
        raise HistoryFormatError(f"{source}: not a sacct --json document (no 'jobs' list)")
    errors = doc.get("errors")
    if errors:
        raise HistoryFormatError(f"{source}: sacct reported errors: {str(errors)[:200]}")
    for i, raw in enumerate(doc["jobs"]):
        try:
            job = _json_job(raw)
        except _Bad as exc:
            log.bad(f"{source}:jobs[{i}]", str(exc))
            continue
        if isinstance(job, str):
            log.drop(job)
        else:
            yield job


# ------------------------------------------------------------------------------------------- live


def record_delimiter() -> str:
    """A field delimiter for one live ``sacct`` run: random (64 bits), so no job name recorded before the run
    holds it (a name is free text: it may hold ``|`` and newlines, never a string drawn after it was written)."""
    return f"|rlsched-{secrets.token_hex(8)}|"


def sacct_argv(start: str, end: str, *, delimiter: str, sacct: str = "sacct", clusters: str | None = None) -> list[str]:
    """The ``sacct`` command of ``rlsched history import --from sacct``: every user's jobs (``-a``), the
    allocations only (``-X``: no steps), machine-readable with a header, every field followed by
    ``delimiter`` (``-p``, so each record ends with it: :func:`read_sacct_delimited`), the fields of
    :data:`SACCT_LIVE_FIELDS`, in every state, eligible or running in ``[start, end]``.  Run it with
    ``SLURM_TIME_FORMAT=%s`` (epoch seconds); draw ``delimiter`` with :func:`record_delimiter`."""
    argv = [
        sacct,
        "--allusers",
        "--allocations",
        "--parsable",
        f"--delimiter={delimiter}",
        f"--format={','.join(SACCT_LIVE_FIELDS)}",
        "--starttime",
        start,
        "--endtime",
        end,
    ]
    if clusters:
        argv += ["--clusters", clusters]
    return argv


def run_sacct(executor: CommandExecutor, argv: Sequence[str]) -> str:
    """Run ``argv`` through the daemon's runner (timeout, retries with backoff); its standard output.

    An answer without a header line (a cut-off answer) is retried like the daemon's commands are.
    """

    def parse(result: CommandResult) -> str:
        head = result.stdout.lstrip()[:200].split("\n", 1)[0]
        if "JobID" not in head:
            raise SlurmParseError("sacct", "line 1", f"no header line: {head[:80]!r}")
        return result.stdout

    return executor.run(argv, parse)


def read_sacct_delimited(text: str, delimiter: str, source: str, log: DropLog) -> Iterator[HistoryJob]:
    """Jobs of live ``sacct --parsable --delimiter=DELIMITER`` output (:func:`sacct_argv`): a header line, then
    one record per job, every field followed by ``delimiter`` and each record by a newline.

    No value holds ``delimiter``, so fields are cut there only, and a record is exactly as many of them as the
    header has: the output is cut where ``delimiter`` meets a newline, and a piece with too few fields (a job
    name that starts with a newline put one there) is joined with the next.  A job name holding ``|``,
    newlines or whole imitated records thus stays one field of its own record.  A record cut off at the end,
    or output out of step (more fields than the header: not sacct's layout, which no name can cause), is
    ``log.bad`` (``SOURCE:LINE``) and nothing after it is read; output without a header line that ends with
    ``delimiter`` is a :class:`HistoryFormatError`.
    """
    body = text.lstrip("\n")
    line = 1 + len(text) - len(body)
    head, newline, rest = body.partition("\n")
    names = head.split(delimiter)
    if not newline or len(names) < 2 or names.pop() != "" or not {"jobid", "jobidraw"} & {n.lower() for n in names}:
        raise HistoryFormatError(
            f"{source}:{line}: not sacct output with the delimiter {delimiter!r} (no header line): {head[:80]!r}"
        )
    cols = _Columns(names, f"{source}:{line}")
    n = cols.n
    end = delimiter + "\n"
    # One piece per record (a record's own lines, like the lines of a file, not every field: the memory of a
    # million-record import stays what a file's costs).
    pieces = rest.split(end)
    tail = pieces.pop()  # after the last record: nothing, unless the output was cut off

    def records() -> Iterator[tuple[str, list[str]]]:
        at = line  # the line the last piece ended on
        record, first = "", 0
        for piece in pieces:
            if record:
                record = f"{record}{end}{piece}"  # the newline after the delimiter began a value
            else:
                record, first = piece, at + 1
            at += piece.count("\n") + 1
            fields = record.split(delimiter)
            if len(fields) < n:
                continue
            if len(fields) > n:
                log.bad(f"{source}:{first}", f"output out of step, not read on: {record[:80]!r}")
                return
            record = ""
            yield f"{source}:{first}", fields
        cut = (f"{record}{end}{tail}" if record else tail).strip()
        if cut:
            log.bad(
                f"{source}:{first if record else at + 1}", f"record cut short at the end of the output: {cut[:80]!r}"
            )

    yield from _parse_records(records(), cols, log)
