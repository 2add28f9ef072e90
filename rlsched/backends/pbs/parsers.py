"""Pure parsers of OpenPBS / PBS Professional output into typed records (docs/pbs.md).

Each parser takes the text a command printed (or one line of an accounting log) and returns records, or
raises :class:`~rlsched.backends.pbs.errors.PBSParseError` naming the source, the place and what was wrong —
never anything else, whatever the input (property-tested with hypothesis; real documents recorded from
OpenPBS 23.06 are in ``tests/data/pbs/``).

Quirks, as observed on OpenPBS 23.06.06:

- ``qstat -f -F json`` is ``{"timestamp", "pbs_version", "pbs_server", "Jobs": {"12.host": {...}}}``; "Jobs"
  is absent when there is no job.  Times are local-time strings (``"Mon Nov 23 09:17:30 2026"``: ``ctime``
  submitted, ``stime`` started, ``obittime`` ended), ``job_state`` is one letter (Q queued, H held, W waiting
  for its start time, T in transit, R running, E exiting, B an array with subjobs begun, X a finished subjob,
  F finished, M moved, S/U suspended).  ``Resource_List.ncpus`` is the total of every chunk of ``select``;
  ``walltime`` is ``"HH:MM:SS"`` and absent when unlimited; ``Account_Name`` is absent unless given; a
  user-given ``Priority`` is -1024…1023.
- With ``-t`` an array job ``13[].host`` is listed with its subjobs ``13[0].host`` …; rlsched sees the parent
  as one pending job (as long as it has queued subjobs) and each running subjob as a running job.
- ``pbsnodes -a -F json`` is ``{"nodes": {"name": {"state": "free", "resources_available": {"ncpus": 8},
  "resources_assigned": {"ncpus": 2}, ...}}}``; ``state`` may combine values (``"down,offline"``).
- Accounting logs (``server_priv/accounting/YYYYMMDD``) have one record per line:
  ``MM/DD/YYYY HH:MM:SS;E;12.host;user=u group=g ... start=1700000000 end=1700000060 ...`` with epoch times;
  a value with spaces is double-quoted.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from rlsched.backends.common.fields import JsonFields, load_json_object
from rlsched.backends.pbs.errors import PBSParseError

QSTAT_JSON = "qstat -f -F json"
PBSNODES_JSON = "pbsnodes -a -F json"
ACCOUNTING = "PBS accounting log"
SCHED_CONFIG = "sched_config"

#: job_state letters in which a job waits (an array parent also while state B has queued subjobs).
PENDING_STATES = frozenset({"Q", "H", "W", "T"})
#: job_state letters in which a job holds cores.
ACTIVE_STATES = frozenset({"R", "E"})
#: job_state letters of a job that is over (M: moved to another server, never a completion here).
FINISHED_STATES = frozenset({"F", "X"})
#: Node states in which a node's CPUs are not there at all.
DOWN_NODE_STATES = frozenset({"down", "state-unknown", "unresolvable", "stale"})
#: Node states in which no new job starts on the node.
UNAVAILABLE_NODE_STATES = DOWN_NODE_STATES | {
    "offline",
    "maintenance",
    "provisioning",
    "wait-provisioning",
    "sleep",
    "resv-exclusive",
}
#: PBS's priority range (``qalter -p``).
MIN_PRIORITY, MAX_PRIORITY = -1024, 1023
#: Beyond this a job's CPU count is absurd: the job is refused rather than let to skew the view.
MAX_JOB_CPUS = 2**24
#: Array subjob ``S[i]`` gets the integer id ``(i + 1) * SUBJOB_ID_BASE + S`` (plain job and array: ``S``).
SUBJOB_ID_BASE = 10**13
MAX_ARRAY_INDEX = 2**63 // SUBJOB_ID_BASE - 2

_JOB_ID = re.compile(r"^(\d+)(?:\[(\d*)\])?(?:\.(\S+))?$")
_WEEKDAYS = frozenset({"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"})


@dataclass(frozen=True, slots=True)
class PBSJob:
    """One job (or array, or array subjob).  Times are epoch seconds, NaN when not meaningful;
    ``walltime_s`` is inf when unlimited."""

    pbs_id: str
    job_id: int
    state: str
    queue: str
    user: str
    group: str
    account: str
    project: str
    cpus: int
    walltime_s: float
    priority: int
    submit_s: float
    start_s: float
    end_s: float
    array: bool = False
    subjob: bool = False
    queued_subjobs: int = 0
    exit_status: int | None = None
    #: The job name (``Job_Name`` of qstat, ``jobname`` of an accounting record; "" when absent): the view's
    #: executable id is its CRC-32 (:func:`rlsched.core.view.executable_id`), what a learned runtime
    #: predictor keys a program's history by.
    name: str = ""

    @property
    def pending(self) -> bool:
        if self.subjob:
            return False  # a queued subjob waits as part of its array parent
        if self.array:
            return self.state in PENDING_STATES or (self.state == "B" and self.queued_subjobs > 0)
        return self.state in PENDING_STATES

    @property
    def held(self) -> bool:
        return self.pending and self.state == "H"

    @property
    def active(self) -> bool:
        return self.state in ACTIVE_STATES and not self.array

    @property
    def finished(self) -> bool:
        return self.state in FINISHED_STATES

    @property
    def ran(self) -> bool:
        """A finished job that started (a job deleted while queued is no completion)."""
        return (
            self.finished
            and not self.array
            and self.cpus > 0
            and math.isfinite(self.start_s)
            and math.isfinite(self.end_s)
            and self.end_s >= self.start_s
        )

    def vo_key(self, vo_from: str) -> str:
        """The name the VO mapping reads: ``account`` (Account_Name), ``project`` or ``group``."""
        return {"account": self.account, "project": self.project, "group": self.group}.get(vo_from, "")


@dataclass(frozen=True, slots=True)
class PBSNode:
    """One node (vnode) of ``pbsnodes -a -F json``."""

    name: str
    states: frozenset[str]
    cpus: int
    assigned_cpus: int
    queue: str = ""
    comment: str = ""

    @property
    def live(self) -> bool:
        return not (self.states & DOWN_NODE_STATES)

    @property
    def accepting(self) -> bool:
        return self.live and not (self.states & UNAVAILABLE_NODE_STATES)

    @property
    def idle_cpus(self) -> int:
        return max(0, self.cpus - self.assigned_cpus)


# --------------------------------------------------------------------------------------------- values
def parse_job_id(text: str, command: str = QSTAT_JSON, where: str = "") -> tuple[int, bool, bool]:
    """``"12.host"`` → (12, False, False); ``"13[].host"`` → (13, True, False) (an array);
    ``"13[4].host"`` → (5·10^13 + 13, False, True) (a subjob)."""
    match = _JOB_ID.match(text)
    if not match:
        raise PBSParseError(command, where, f"not a PBS job id: {text!r:.80}")
    seq = int(match[1])
    if seq >= SUBJOB_ID_BASE:
        raise PBSParseError(command, where, f"job sequence number too large: {seq}")
    if match[2] is None:
        return seq, False, False
    if match[2] == "":
        return seq, True, False
    index = int(match[2])
    if index > MAX_ARRAY_INDEX:
        raise PBSParseError(command, where, f"array index too large: {index}")
    return (index + 1) * SUBJOB_ID_BASE + seq, False, True


def parse_pbs_time(value: object, command: str = QSTAT_JSON, where: str = "") -> float:
    """A time of ``qstat -F json`` (``"Mon Nov 23 09:17:30 2026"``, local time) or epoch seconds → epoch."""
    if isinstance(value, bool):
        raise PBSParseError(command, where, f"not a time: {value!r}")
    if isinstance(value, int | float):
        if not math.isfinite(value) or not 0 <= value < 2**40:
            raise PBSParseError(command, where, f"not a time: {value!r:.40}")
        return float(value)
    if not isinstance(value, str):
        raise PBSParseError(command, where, f"not a time: {value!r:.60}")
    text = value.strip()
    if text.isdecimal() and len(text) <= 12:
        return float(text)
    parts = text.split()
    if len(parts) != 5 or parts[0] not in _WEEKDAYS:
        raise PBSParseError(command, where, f"not a time: {value!r:.60}")
    try:
        return float(time.mktime(time.strptime(" ".join(parts[1:]), "%b %d %H:%M:%S %Y")))
    except (ValueError, OverflowError) as exc:
        raise PBSParseError(command, where, f"not a time: {value!r:.60} ({exc})") from None


def parse_walltime(value: object, command: str = QSTAT_JSON, where: str = "") -> float:
    """``"HH:MM:SS"``, ``"MM:SS"``, ``"SS"`` (or a number of seconds) → seconds."""
    if isinstance(value, bool):
        raise PBSParseError(command, where, f"not a duration: {value!r}")
    if isinstance(value, int | float):
        if not math.isfinite(value) or value < 0:
            raise PBSParseError(command, where, f"not a duration: {value!r}")
        return float(value)
    if not isinstance(value, str):
        raise PBSParseError(command, where, f"not a duration: {value!r:.60}")
    parts = value.strip().split(":")
    if not 1 <= len(parts) <= 3 or not all(re.fullmatch(r"\d{1,12}(\.\d*)?", p) for p in parts):
        raise PBSParseError(command, where, f"not a duration: {value!r:.60}")
    seconds = 0.0
    for part in parts:
        seconds = seconds * 60 + float(part)
    return seconds


def select_cpus(select: str, command: str = QSTAT_JSON, where: str = "") -> int:
    """The CPUs of a ``select`` request: ``"2:ncpus=4:mem=1gb+1:ncpus=2"`` → 10 (a chunk without ncpus has 1)."""
    total = 0
    for chunk in select.split("+"):
        items = chunk.strip().split(":")
        count = 1
        ncpus = 1
        for k, item in enumerate(items):
            if k == 0 and item.isdecimal():
                count = int(item)
                continue
            key, sep, val = item.partition("=")
            if not sep or not key:
                raise PBSParseError(command, where, f"bad select chunk {chunk!r:.60}")
            if key == "ncpus":
                if not val.isdecimal():
                    raise PBSParseError(command, where, f"bad ncpus in select: {val!r:.30}")
                ncpus = int(val)
        total += count * ncpus
        if total > MAX_JOB_CPUS:
            raise PBSParseError(command, where, f"select asks for more than {MAX_JOB_CPUS} CPUs")
    return total


# --------------------------------------------------------------------------------------------- JSON
def _fields(obj: object, command: str, where: str) -> JsonFields:
    """Typed access to one object of a PBS JSON document (numbers and strings taken either way)."""
    return JsonFields(obj, command, where, PBSParseError, lenient=True)


def _time(f: JsonFields, key: str) -> float:
    """A local-time field (``"Mon Nov 23 09:17:30 2026"``); absent or empty: NaN."""
    value = f.obj.get(key)
    if value is None or value == "":
        return math.nan
    return parse_pbs_time(value, f.command, f"{f.where}.{key}")


def _job_name(value: object) -> str:
    """``Job_Name`` as the view keys it: qstat -F json prints a name that looks like a number as one (taken as
    its text); anything else that is not a string is "" — a name only identifies the job's program, so an odd
    one costs the job its history, never its place in the view."""
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return ""


def _queued_subjobs(counts: str) -> int:
    """``array_state_count`` ``"Queued:3 Running:1 Exiting:0 Expired:0 "`` → 3."""
    match = re.search(r"Queued:(\d+)", counts)
    return int(match[1]) if match else 0


def _qstat_job(pbs_id: str, f: JsonFields) -> PBSJob:
    job_id, array, subjob = parse_job_id(pbs_id, f.command, f.where)
    state = f.text("job_state", "")
    if len(state) != 1 or not state.isalpha():
        raise f.error("job_state", f"not a PBS job state: {state!r:.20}")
    resources = f.sub("Resource_List")
    cpus = resources.opt_int("ncpus")
    if cpus is None:
        select = resources.text("select", "")
        cpus = select_cpus(select, f.command, f"{resources.where}.select") if select else 1
    if not 0 <= cpus <= MAX_JOB_CPUS:
        raise resources.error("ncpus", f"outside 0..{MAX_JOB_CPUS}: {cpus}")
    walltime = resources.obj.get("walltime")
    walltime_s = (
        math.inf if walltime in (None, "") else parse_walltime(walltime, f.command, f"{resources.where}.walltime")
    )
    priority = f.opt_int("Priority", 0) or 0
    if not MIN_PRIORITY <= priority <= MAX_PRIORITY:
        raise f.error("Priority", f"outside {MIN_PRIORITY}..{MAX_PRIORITY}: {priority}")
    owner = f.text("Job_Owner", "")
    user = f.text("euser", "") or owner.partition("@")[0]
    end = _time(f, "obittime")
    if state in FINISHED_STATES and math.isnan(end):
        end = _time(f, "mtime")
    return PBSJob(
        pbs_id=pbs_id,
        job_id=job_id,
        state=state,
        queue=f.text("queue", ""),
        user=user,
        group=f.text("egroup", ""),
        account=f.text("Account_Name", ""),
        project=f.text("project", ""),
        cpus=cpus,
        walltime_s=walltime_s,
        priority=priority,
        submit_s=_time(f, "ctime"),
        start_s=_time(f, "stime") if state not in ("Q", "H", "W", "T") or subjob else math.nan,
        end_s=end if state in FINISHED_STATES else math.nan,
        array=array,
        subjob=subjob,
        queued_subjobs=_queued_subjobs(f.text("array_state_count", "")) if array else 0,
        exit_status=f.opt_int("Exit_status"),
        name=_job_name(f.obj.get("Job_Name")),
    )


def parse_qstat_json(
    text: str, on_skip: Callable[[PBSParseError], None] | None = None, command: str = QSTAT_JSON
) -> list[PBSJob]:
    """Jobs of ``qstat -f [-x] [-t] -F json``.  A job whose fields are unreadable raises; with ``on_skip`` it
    is left out and reported there instead, so that one job cannot break the view of all the others."""
    doc = load_json_object(text, command, PBSParseError)
    jobs_obj = doc.get("Jobs", {})
    if jobs_obj is None:
        return []
    if not isinstance(jobs_obj, dict):
        raise PBSParseError(command, "Jobs", f"expected an object, got {type(jobs_obj).__name__}")
    jobs = []
    for pbs_id, raw in jobs_obj.items():
        try:
            jobs.append(_qstat_job(pbs_id, _fields(raw, command, f"Jobs[{pbs_id!r:.60}]")))
        except PBSParseError as exc:
            if on_skip is None:
                raise
            on_skip(exc)
    return jobs


def parse_pbsnodes_json(text: str) -> list[PBSNode]:
    """Nodes of ``pbsnodes -a -F json``."""
    doc = load_json_object(text, PBSNODES_JSON, PBSParseError)
    nodes_obj = doc.get("nodes", {})
    if nodes_obj is None:
        return []
    if not isinstance(nodes_obj, dict):
        raise PBSParseError(PBSNODES_JSON, "nodes", f"expected an object, got {type(nodes_obj).__name__}")
    nodes = []
    for name, raw in nodes_obj.items():
        f = _fields(raw, PBSNODES_JSON, f"nodes[{name!r:.60}]")
        state = f.text("state", "")
        if not state:
            raise f.error("state", "missing")
        cpus = f.sub("resources_available").opt_int("ncpus", 0) or 0
        assigned = f.sub("resources_assigned").opt_int("ncpus", 0) or 0
        if not 0 <= cpus <= MAX_JOB_CPUS or not 0 <= assigned <= MAX_JOB_CPUS:
            raise f.error("resources_available.ncpus", f"CPU counts outside 0..{MAX_JOB_CPUS}: {cpus}, {assigned}")
        nodes.append(
            PBSNode(
                name=str(name),
                states=frozenset(s.strip() for s in state.split(",")),
                cpus=cpus,
                assigned_cpus=assigned,
                queue=f.text("queue", ""),
                comment=f.text("comment", ""),
            )
        )
    return nodes


def sched_sort_keys(text: str) -> list[str]:
    """The ``job_sort_key`` lines of a ``sched_config`` file, in order (``["job_priority HIGH", ...]``)."""
    keys = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("job_sort_key:"):
            value = stripped.split(":", 1)[1].strip()
            match = re.match(r'"([^"]*)"', value)
            keys.append((match[1] if match else value.split()[0] if value.split() else "").strip())
    return keys


# --------------------------------------------------------------------------------------------- accounting
@dataclass(frozen=True, slots=True)
class AccountingRecord:
    """One line of an accounting log: its time, type letter (Q, S, E, D, A, R, ...), job id and fields."""

    time_s: float
    kind: str
    pbs_id: str
    fields: dict[str, str]


def _split_message(message: str) -> dict[str, str]:
    """``key=value key="a b" ...`` → dict.  A space-separated word without ``=`` continues the previous value
    (an unquoted value with spaces, as some PBS versions write ``jobname``)."""
    fields: dict[str, str] = {}
    last: str | None = None
    i, n = 0, len(message)
    while i < n:
        while i < n and message[i] == " ":
            i += 1
        if i >= n:
            break
        j = i
        while j < n and message[j] not in "= ":
            j += 1
        if j < n and message[j] == "=":
            key = message[i:j]
            j += 1
            if j < n and message[j] == '"':
                end = message.find('"', j + 1)
                end = n if end < 0 else end
                value = message[j + 1 : end]
                i = end + 1
            else:
                end = message.find(" ", j)
                end = n if end < 0 else end
                value = message[j:end]
                i = end
            fields[key] = value
            last = key
        else:
            end = message.find(" ", i)
            end = n if end < 0 else end
            if last is not None:
                fields[last] += " " + message[i:end]
            i = end
    return fields


def parse_accounting_line(line: str, where: str = "") -> AccountingRecord:
    """One accounting record: ``MM/DD/YYYY HH:MM:SS;TYPE;ID;message`` (local time)."""
    parts = line.rstrip("\r\n").split(";", 3)
    if len(parts) < 3:
        raise PBSParseError(ACCOUNTING, where, "expected 'date;type;id;message'")
    stamp, kind, pbs_id = parts[0], parts[1], parts[2]
    try:
        when = float(time.mktime(time.strptime(stamp, "%m/%d/%Y %H:%M:%S")))
    except (ValueError, OverflowError):
        raise PBSParseError(ACCOUNTING, where, f"not a record time: {stamp!r:.40}") from None
    if len(kind) != 1 or not kind.isalpha():
        raise PBSParseError(ACCOUNTING, where, f"not a record type: {kind!r:.20}")
    return AccountingRecord(when, kind, pbs_id, _split_message(parts[3]) if len(parts) > 3 else {})


def accounting_job(record: AccountingRecord, where: str = "") -> PBSJob:
    """The finished job of an ``E`` (end) record."""
    if record.kind != "E":
        raise PBSParseError(ACCOUNTING, where, f"not an end record: {record.kind}")
    job_id, array, subjob = parse_job_id(record.pbs_id, ACCOUNTING, where)
    f = record.fields

    def epoch(key: str) -> float:
        value = f.get(key, "")
        if not value:
            return math.nan
        if not value.isdecimal() or len(value) > 12:
            raise PBSParseError(ACCOUNTING, f"{where} {key}", f"not an epoch time: {value!r:.40}")
        return float(value)

    ncpus = f.get("Resource_List.ncpus") or f.get("resources_used.ncpus") or ""
    if ncpus:
        if not ncpus.isdecimal():
            raise PBSParseError(ACCOUNTING, f"{where} Resource_List.ncpus", f"not a number: {ncpus!r:.30}")
        cpus = int(ncpus)
    else:
        select = f.get("Resource_List.select", "")
        cpus = select_cpus(select, ACCOUNTING, f"{where} Resource_List.select") if select else 1
    if cpus > MAX_JOB_CPUS:
        raise PBSParseError(ACCOUNTING, f"{where} Resource_List.ncpus", f"more than {MAX_JOB_CPUS} CPUs")
    walltime = f.get("Resource_List.walltime", "")
    exit_text = f.get("Exit_status", "")
    return PBSJob(
        pbs_id=record.pbs_id,
        job_id=job_id,
        state="F",
        queue=f.get("queue", ""),
        user=f.get("user", ""),
        group=f.get("group", ""),
        account=f.get("account", "").strip('"'),
        project=f.get("project", ""),
        cpus=cpus,
        walltime_s=parse_walltime(walltime, ACCOUNTING, f"{where} Resource_List.walltime") if walltime else math.inf,
        priority=0,
        submit_s=epoch("ctime"),
        start_s=epoch("start"),
        end_s=epoch("end"),
        array=array,
        subjob=subjob,
        exit_status=int(exit_text) if re.fullmatch(r"-?\d{1,9}", exit_text) else None,
        name=f.get("jobname", ""),
    )


def end_records(
    lines: Iterable[str], source: str, on_bad: Callable[[str, str], None]
) -> Iterator[tuple[str, AccountingRecord, PBSJob]]:
    """The end records of accounting-log lines as (place ``FILE:LINE``, record, job); ``on_bad(place,
    reason)`` for the lines that cannot be read (blank lines and records of other types are skipped)."""
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{source}:{number}"
        try:
            record = parse_accounting_line(line, where)
            if record.kind != "E":
                continue
            job = accounting_job(record, where)
        except PBSParseError as exc:
            on_bad(where, exc.message)
            continue
        yield where, record, job


def read_accounting(lines: Iterable[str], source: str, on_bad: Callable[[str, str], None]) -> list[tuple[str, PBSJob]]:
    """The end records of accounting-log lines as (place, job) (see :func:`end_records`)."""
    return [(where, job) for where, _, job in end_records(lines, source, on_bad)]
