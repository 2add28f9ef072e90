"""Pure parsers of Slurm 22.05 command output into typed records (docs/slurm.md).

Each parser takes the text a command printed and returns records, or raises
:class:`~rlsched.backends.slurm.errors.SlurmParseError` naming the command, the place in the document and
what was wrong — never anything else, whatever the input (property-tested with hypothesis).

Sources and their quirks, as observed on Debian 12's Slurm 22.05.8 (openapi v0.0.38):

- ``squeue --json`` ignores every filter and lists all jobs it knows, including those finished less than
  ``MinJobAge`` ago.  ``nice`` is null when 0 and a negative nice comes back as an unsigned 32-bit number
  (-500 → 4294966796).  A held job has priority 0 and reason ``JobHeldUser`` or ``JobHeldAdmin``.
  ``time_limit`` is in minutes, null when unlimited.  ``cpus`` is null (and ``start_time`` equals
  ``end_time``) for a job cancelled while pending.  A pending job's ``start_time`` is the scheduler's
  expected start, not a start.
- ``sinfo --json`` lists nodes only (no partitions), each with ``state`` (idle, mixed, allocated, down…),
  ``state_flags`` (CLOUD, POWERED_DOWN, DRAIN…), ``cpus``, ``alloc_cpus`` and ``idle_cpus``.
- ``scontrol show config`` prints ``Key = Value`` lines.
- The ``jobcomp/filetxt`` file has one ``Key=Value …`` line per finished job, with local times
  (``2026-11-22T03:09:16``) and free-text fields (``Name``, ``WorkDir``) that may contain spaces.
- ``sacct -X -n -P`` with ``SLURM_TIME_FORMAT=%s`` prints ``|``-separated fields and epoch times.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import msgspec

from rlsched.backends.common.fields import JsonFields, load_json_object
from rlsched.backends.slurm.errors import SlurmParseError

SQUEUE_JSON = "squeue --json"
SINFO_JSON = "sinfo --json"
SCONTROL_CONFIG = "scontrol show config"
JOBCOMP_FILE = "jobcomp/filetxt"
SACCT = "sacct"

#: Reasons of a held job (docs/slurm.md): a user hold, an admin (root) hold.
HELD_REASONS = frozenset({"JobHeldUser", "JobHeldAdmin"})
#: Job states after which a job holds no more resources (squeue ``job_state``, sacct ``State``).
FINISHED_STATES = frozenset(
    {
        "COMPLETED",
        "FAILED",
        "TIMEOUT",
        "CANCELLED",
        "NODE_FAIL",
        "PREEMPTED",
        "BOOT_FAIL",
        "DEADLINE",
        "OUT_OF_MEMORY",
        "REVOKED",
    }
)
#: Job states in which a job holds cores.
ACTIVE_STATES = frozenset({"RUNNING", "COMPLETING", "CONFIGURING", "SUSPENDED", "STAGE_OUT", "SIGNALING"})
#: Node flags under which a node accepts no new job.
UNAVAILABLE_NODE_FLAGS = frozenset(
    {
        "DRAIN",
        "FAIL",
        "POWERED_DOWN",
        "POWERING_DOWN",
        "POWERING_UP",
        "POWER_DOWN",
        "NOT_RESPONDING",
        "MAINTENANCE",
        "REBOOT_REQUESTED",
        "REBOOT_ISSUED",
        "INVALID_REG",
    }
)
#: Node flags under which a node has no live CPUs at all.
DOWN_NODE_FLAGS = frozenset({"POWERED_DOWN", "POWERING_UP", "NOT_RESPONDING"})
DOWN_NODE_STATES = frozenset({"down", "future", "unknown", "error"})

_NICE_OFFSET = 2**32
_INT_LIMIT = 2**63
#: Beyond these a job's values are absurd (the largest machines have ~10^7 cores; Slurm's priority is a
#: 32-bit unsigned): such a job is refused rather than let to skew every other job's ranking (issue 16).
MAX_JOB_CPUS = 2**24
MAX_JOB_PRIORITY = 2**32 - 1


class SlurmJob(msgspec.Struct, frozen=True, gc=False):
    """One job of ``squeue --json``.  Times are epoch seconds; ``time_limit_s`` is inf when unlimited;
    ``start_s``/``end_s`` are NaN when not meaningful (not started; still running).

    A msgspec struct, not a dataclass: built in C, it costs a third of a frozen dataclass, which counts at
    50,000 jobs a cycle (benchmarks/bench_cycle.py).  Change a copy with ``msgspec.structs.replace``."""

    job_id: int
    state: str
    reason: str
    user: str
    account: str
    partition: str
    qos: str
    cpus: int
    time_limit_s: float
    priority: int
    nice: int
    submit_s: float
    start_s: float
    end_s: float
    #: The job name (``name``; "" when absent or not a string): the view's executable id is its CRC-32
    #: (:func:`rlsched.core.view.executable_id`), what a learned runtime predictor keys a program's history by.
    name: str = ""

    @property
    def pending(self) -> bool:
        return self.state == "PENDING"

    @property
    def held(self) -> bool:
        return self.pending and self.reason in HELD_REASONS

    @property
    def active(self) -> bool:
        return self.state in ACTIVE_STATES

    @property
    def finished(self) -> bool:
        return self.state in FINISHED_STATES

    @property
    def base_priority(self) -> int:
        """Slurm's multifactor priority without the Nice term (priority = factors − nice)."""
        return self.priority + self.nice


@dataclass(frozen=True, slots=True)
class SlurmNode:
    """One node of ``sinfo --json``."""

    name: str
    state: str
    flags: frozenset[str]
    cpus: int
    alloc_cpus: int
    idle_cpus: int
    partitions: tuple[str, ...]
    features: tuple[str, ...]
    reason: str = ""

    @property
    def cloud(self) -> bool:
        return "CLOUD" in self.flags

    @property
    def live(self) -> bool:
        """The node's CPUs exist now (not powered down, not down, answering)."""
        return self.state not in DOWN_NODE_STATES and not (self.flags & DOWN_NODE_FLAGS)

    @property
    def accepting(self) -> bool:
        """New jobs can start here."""
        return self.live and not (self.flags & UNAVAILABLE_NODE_FLAGS)

    @property
    def powered(self) -> bool:
        """A cloud node that is up or coming up (a lease in use)."""
        return not (self.flags & {"POWERED_DOWN", "POWERING_DOWN"})


@dataclass(frozen=True, slots=True)
class CompletedJob:
    """A finished job that ran (jobs cancelled before they started are not completions)."""

    job_id: int
    state: str
    account: str
    partition: str
    qos: str
    cpus: int
    time_limit_s: float
    submit_s: float
    start_s: float
    end_s: float


# --------------------------------------------------------------------------------------------- JSON


def _load_json(text: str | bytes, command: str) -> dict[str, Any]:
    doc = load_json_object(text, command, SlurmParseError)
    errors = doc.get("errors")
    if errors:
        raise SlurmParseError(command, "errors", f"Slurm reported errors: {str(errors)[:200]}")
    return doc


def _fields(obj: object, command: str, where: str) -> JsonFields:
    return JsonFields(obj, command, where, SlurmParseError)


def _epoch(value: int | None) -> float:
    """Slurm's 0 (or null) means "no such time"."""
    return float(value) if value else math.nan


def _unsigned_nice(fields: JsonFields) -> int:
    nice = fields.opt_int("nice")
    if nice is None:  # null when 0 (docs/slurm.md)
        return 0
    if _NICE_OFFSET // 2 <= nice < _NICE_OFFSET:
        return nice - _NICE_OFFSET  # a negative nice printed as unsigned 32-bit
    if not -(_NICE_OFFSET // 2) <= nice < _NICE_OFFSET // 2:
        raise fields.error("nice", f"outside the 32-bit range: {nice}")
    return nice


def _list_of(doc: Mapping[str, Any], key: str, command: str) -> list[Any]:
    items = doc.get(key)
    if not isinstance(items, list):
        raise SlurmParseError(command, key, f"expected a list, got {type(items).__name__}")
    return items


def parse_squeue_json(text: str | bytes, on_skip: Callable[[SlurmParseError], None] | None = None) -> list[SlurmJob]:
    """Jobs of ``squeue --json`` (every state squeue still knows).

    A job whose fields are unreadable or absurd raises :class:`SlurmParseError`; with ``on_skip`` it is
    left out and reported there instead, so that one job cannot break the view of all the others.

    Decoded typed (msgspec: only the fields rlsched reads, about 6× faster than ``json.loads`` on a
    50,000-job document); a document the typed decoder refuses (a wrong type anywhere, not JSON, an error
    from Slurm) is read again by :func:`parse_squeue_json_reference`, whose error messages and skips it keeps.
    """
    try:
        doc = _SQUEUE_DECODER.decode(text)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return parse_squeue_json_reference(text, on_skip)
    if doc.errors:
        return parse_squeue_json_reference(text, on_skip)
    jobs = []
    for i, raw in enumerate(doc.jobs):
        job = _typed_squeue_job(raw)
        if job is None:  # an absurd or incomplete job: the reference reader says what is wrong
            try:
                job = _squeue_job(_fields(_struct_dict(raw), SQUEUE_JSON, f"jobs[{i}]"))
            except SlurmParseError as exc:
                if on_skip is None:
                    raise
                on_skip(exc)
                continue
        jobs.append(job)
    return jobs


def parse_squeue_json_reference(
    text: str | bytes, on_skip: Callable[[SlurmParseError], None] | None = None
) -> list[SlurmJob]:
    """:func:`parse_squeue_json` through ``json.loads`` and a check of every field (slow; exact messages)."""
    doc = _load_json(text, SQUEUE_JSON)
    jobs = []
    for i, raw in enumerate(_list_of(doc, "jobs", SQUEUE_JSON)):
        try:
            jobs.append(_squeue_job(_fields(raw, SQUEUE_JSON, f"jobs[{i}]")))
        except SlurmParseError as exc:
            if on_skip is None:
                raise
            on_skip(exc)
    return jobs


class _SqueueJob(msgspec.Struct, gc=False):
    """The fields of one ``squeue --json`` job that rlsched reads (UNSET: absent from the document; the
    free-text fields the reference reader takes as "" when absent or null default to "")."""

    job_id: int | msgspec.UnsetType | None = msgspec.UNSET
    job_state: str | msgspec.UnsetType | None = msgspec.UNSET
    state_reason: str | None = ""
    user_name: str | None = ""
    account: str | None = ""
    partition: str | None = ""
    qos: str | None = ""
    cpus: int | msgspec.UnsetType | None = msgspec.UNSET
    tres_req_str: str | msgspec.UnsetType | None = msgspec.UNSET
    time_limit: int | msgspec.UnsetType | None = msgspec.UNSET
    priority: int | msgspec.UnsetType | None = msgspec.UNSET
    nice: int | msgspec.UnsetType | None = msgspec.UNSET
    submit_time: int | msgspec.UnsetType | None = msgspec.UNSET
    start_time: int | msgspec.UnsetType | None = msgspec.UNSET
    end_time: int | msgspec.UnsetType | None = msgspec.UNSET
    # Any, not str: a name of another type must not send the whole document to the slow reader (it reads "").
    name: Any = ""


class _SqueueDoc(msgspec.Struct, gc=False):
    jobs: list[_SqueueJob]
    errors: Any = None


_SQUEUE_DECODER = msgspec.json.Decoder(_SqueueDoc)


def _struct_dict(raw: msgspec.Struct) -> dict[str, Any]:
    """The fields the document had (as ``json.loads`` would have given them)."""
    return {name: value for name in raw.__struct_fields__ if (value := getattr(raw, name)) is not msgspec.UNSET}


def _text_or_empty(value: str | msgspec.UnsetType | None) -> str:
    return value if isinstance(value, str) else ""


_PENDING_TIMES = (math.nan, math.nan)


def _typed_nice(nice: int) -> int | None:
    """A Nice as squeue prints it (a negative one as unsigned 32-bit), None when outside 32 bits."""
    if _NICE_OFFSET // 2 <= nice < _NICE_OFFSET:
        return nice - _NICE_OFFSET
    return nice if -(_NICE_OFFSET // 2) <= nice < _NICE_OFFSET // 2 else None


def _typed_times(raw: _SqueueJob, state: str) -> tuple[float, float] | None:
    """(start, end) of a job that is not pending (end: NaN unless it finished); None when out of range."""
    start_s = end_s = math.nan
    start = raw.start_time
    if start.__class__ is int:
        if not -_INT_LIMIT < start < _INT_LIMIT:
            return None
        start_s = float(start) if start else math.nan
    if state in FINISHED_STATES:
        end = raw.end_time
        if end.__class__ is int:
            if not -_INT_LIMIT < end < _INT_LIMIT:
                return None
            end_s = float(end) if end else math.nan
    return start_s, end_s


def _typed_squeue_job(raw: _SqueueJob) -> SlurmJob | None:
    """The common case of :func:`_squeue_job` on typed fields; None when anything is off (then the
    reference reader decides, and words the error).  Written for speed: it runs 50,000 times a cycle
    (msgspec already checked the types: a field is an int, a str, None or UNSET)."""
    job_id, state, cpus, submit = raw.job_id, raw.job_state, raw.cpus, raw.submit_time
    if (
        job_id.__class__ is not int
        or state.__class__ is not str
        or cpus.__class__ is not int
        or submit.__class__ is not int
    ):
        return None  # absent or null (null cpus: the request in tres_req_str, rare)
    if not (0 < job_id < _INT_LIMIT and state and 0 <= cpus <= MAX_JOB_CPUS and -_INT_LIMIT < submit < _INT_LIMIT):
        return None
    priority = raw.priority
    if priority.__class__ is not int:
        priority = 0
    elif not 0 <= priority <= MAX_JOB_PRIORITY:
        return None
    nice = raw.nice
    if nice.__class__ is not int:
        nice = 0  # null when 0 (docs/slurm.md)
    elif (nice := _typed_nice(nice)) is None:
        return None
    limit_min = raw.time_limit
    if limit_min.__class__ is int:
        if not -_INT_LIMIT < limit_min < _INT_LIMIT:
            return None
        limit_s = 60.0 * limit_min
    else:
        limit_s = math.inf
    times = _PENDING_TIMES if state == "PENDING" else _typed_times(raw, state)
    if times is None:
        return None
    start_s, end_s = times
    return SlurmJob(
        job_id,
        state,
        raw.state_reason or "",
        raw.user_name or "",
        raw.account or "",
        raw.partition or "",
        raw.qos or "",
        cpus,
        limit_s,
        priority,
        nice,
        float(submit) if submit else math.nan,
        start_s,
        end_s,
        raw.name if raw.name.__class__ is str else "",
    )


def _job_name(value: object) -> str:
    """A job name as the view keys it: a string, "" for anything else (absent, null, another type) — a job's
    name only identifies its program, so an odd one costs the job its history, never its place in the view."""
    return value if isinstance(value, str) else ""


def _squeue_job(f: JsonFields) -> SlurmJob:
    """One job of ``squeue --json``."""
    job_id = f.req_int("job_id")
    if job_id <= 0:
        raise f.error("job_id", f"not a positive job id: {job_id}")
    state = f.text("job_state")
    if not state:
        raise f.error("job_state", "empty")
    limit_min = f.opt_int("time_limit")
    cpus = f.opt_int("cpus")
    if cpus is None:
        # Null for a job that never got CPUs (cancelled while pending: its start_time is then its end
        # time, so cpus=0 is what marks it as never run).  A pending one falls back on its request.
        match = re.search(r"(?:^|,)cpu=(\d+)", f.text("tres_req_str", ""))
        cpus = int(match[1]) if match and state == "PENDING" else 0
    if not 0 <= cpus <= MAX_JOB_CPUS:
        raise f.error("cpus", f"outside 0..{MAX_JOB_CPUS}: {cpus}")
    priority = f.opt_int("priority", 0) or 0
    if not 0 <= priority <= MAX_JOB_PRIORITY:
        raise f.error("priority", f"outside 0..{MAX_JOB_PRIORITY}: {priority}")
    started = state not in ("PENDING",)
    start = f.opt_int("start_time", 0) if started else 0
    end = f.opt_int("end_time", 0) if state in FINISHED_STATES else 0
    return SlurmJob(
        job_id=job_id,
        state=state,
        reason=f.text("state_reason", ""),
        user=f.text("user_name", ""),
        account=f.text("account", ""),
        partition=f.text("partition", ""),
        qos=f.text("qos", ""),
        cpus=cpus,
        time_limit_s=math.inf if limit_min is None else 60.0 * limit_min,
        priority=priority,
        nice=_unsigned_nice(f),
        submit_s=_epoch(f.req_int("submit_time")),
        start_s=_epoch(start),
        end_s=_epoch(end),
        name=_job_name(f.obj.get("name")),
    )


def parse_sinfo_json(text: str | bytes) -> list[SlurmNode]:
    """Nodes of ``sinfo --json``, each once.

    Decoded typed (msgspec), like :func:`parse_squeue_json`; any node the typed reader does not take as it is
    sends the whole document to :func:`parse_sinfo_json_reference` (which words the error)."""
    try:
        doc = _SINFO_DECODER.decode(text)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return parse_sinfo_json_reference(text)
    if doc.errors:
        return parse_sinfo_json_reference(text)
    nodes: dict[str, SlurmNode] = {}
    for raw in doc.nodes:
        name, cpus, alloc, idle, state = raw.name, raw.cpus, raw.alloc_cpus, raw.idle_cpus, raw.state
        if not isinstance(name, str) or not isinstance(cpus, int) or not isinstance(state, str):
            return parse_sinfo_json_reference(text)
        alloc = alloc if isinstance(alloc, int) else 0
        idle = idle if isinstance(idle, int) else cpus - alloc
        if not 0 <= alloc <= cpus < _INT_LIMIT or not 0 <= idle <= cpus:
            return parse_sinfo_json_reference(text)
        features = tuple(x for x in _text_or_empty(raw.features).split(",") if x)
        nodes[name] = SlurmNode(
            name=name,
            state=state.lower(),
            flags=frozenset(raw.state_flags or ()),
            cpus=cpus,
            alloc_cpus=alloc,
            idle_cpus=idle,
            partitions=tuple(raw.partitions or ()),
            features=features,
            reason=_text_or_empty(raw.reason),
        )
    return list(nodes.values())


class _SinfoNode(msgspec.Struct, gc=False):
    name: str | msgspec.UnsetType | None = msgspec.UNSET
    state: str | msgspec.UnsetType | None = msgspec.UNSET
    state_flags: list[str] | None = None
    cpus: int | msgspec.UnsetType | None = msgspec.UNSET
    alloc_cpus: int | msgspec.UnsetType | None = msgspec.UNSET
    idle_cpus: int | msgspec.UnsetType | None = msgspec.UNSET
    partitions: list[str] | None = None
    features: str | msgspec.UnsetType | None = msgspec.UNSET
    reason: str | msgspec.UnsetType | None = msgspec.UNSET


class _SinfoDoc(msgspec.Struct, gc=False):
    nodes: list[_SinfoNode]
    errors: Any = None


_SINFO_DECODER = msgspec.json.Decoder(_SinfoDoc)


def parse_sinfo_json_reference(text: str | bytes) -> list[SlurmNode]:
    """:func:`parse_sinfo_json` through ``json.loads`` and a check of every field (slow; exact messages)."""
    doc = _load_json(text, SINFO_JSON)
    nodes: dict[str, SlurmNode] = {}
    for i, raw in enumerate(_list_of(doc, "nodes", SINFO_JSON)):
        f = _fields(raw, SINFO_JSON, f"nodes[{i}]")
        name = f.text("name")
        cpus = f.req_int("cpus")
        alloc = f.opt_int("alloc_cpus", 0) or 0
        idle = f.opt_int("idle_cpus", cpus - alloc)
        idle = cpus - alloc if idle is None else idle
        if not 0 <= alloc <= cpus or not 0 <= idle <= cpus:
            raise f.error("cpus", f"inconsistent CPU counts: cpus={cpus} alloc_cpus={alloc} idle_cpus={idle}")
        features = tuple(x for x in f.text("features", "").split(",") if x)
        nodes[name] = SlurmNode(
            name=name,
            state=f.text("state").lower(),
            flags=frozenset(f.text_list("state_flags")),
            cpus=cpus,
            alloc_cpus=alloc,
            idle_cpus=idle,
            partitions=f.text_list("partitions"),
            features=features,
            reason=f.text("reason", ""),
        )
    return list(nodes.values())


# --------------------------------------------------------------------------------------------- text


def parse_scontrol_config(text: str) -> dict[str, str]:
    """``Key = Value`` lines of ``scontrol show config`` (other lines, such as the header, are skipped)."""
    config: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(" = ")
        key = key.strip()
        if sep and key and " " not in key:
            config[key] = value.strip()
    if not config:
        raise SlurmParseError(SCONTROL_CONFIG, "", "no 'Key = Value' line")
    return config


_DURATION = re.compile(r"^(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?$")


def parse_duration_s(text: str, command: str = SACCT, where: str = "") -> float:
    """A Slurm time limit in seconds: ``UNLIMITED``/``INFINITE``/``Partition_Limit`` → inf, ``M``, ``M:S``,
    ``H:M:S``, ``D-H``, ``D-H:M``, ``D-H:M:S`` (the forms of Slurm's ``time_str2mins``)."""
    value = text.strip()
    if value.upper() in ("UNLIMITED", "INFINITE", "PARTITION_LIMIT"):
        return math.inf
    m = _DURATION.match(value)
    if m is None:
        raise SlurmParseError(command, where, f"not a Slurm duration: {value!r:.40}")
    days_s, a, b, c = m.groups()
    days = int(days_s) if days_s else 0
    parts = [int(x) for x in (a, b, c) if x is not None]
    if days_s is not None:  # D-H, D-H:M, D-H:M:S
        hours, minutes, seconds = [*parts, 0, 0][:3]
    elif len(parts) == 3:
        hours, minutes, seconds = parts
    elif len(parts) == 2:
        hours, (minutes, seconds) = 0, parts
    else:
        hours, minutes, seconds = 0, parts[0], 0
    return float(((days * 24 + hours) * 60 + minutes) * 60 + seconds)


_LOCAL_TIME = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d"
_JOBCOMP_HEAD = re.compile(
    r"^JobId=(?P<job_id>\d+) UserId=(?P<user>[^\s(]*)(?:\(\d+\))?"
    r"(?: GroupId=(?P<group>[^\s(]*)(?:\(\d+\))?)?"
)
# The fixed-format run of fields between the free-text Name and WorkDir: found as a whole, so a job name
# with spaces or '=' in it does not shift the fields (a name that mimics this whole run could still).
_JOBCOMP_MIDDLE = re.compile(
    rf" JobState=(?P<state>[A-Z_]+)(?: by \d+)? Partition=(?P<partition>\S*) TimeLimit=(?P<limit>\S+)"
    rf" StartTime=(?P<start>{_LOCAL_TIME}|unknown|None) EndTime=(?P<end>{_LOCAL_TIME}|unknown|None)"
    rf" NodeList=\S* NodeCnt=(?P<nodes>\d+) ProcCnt=(?P<procs>\d+) WorkDir="
)
_JOBCOMP_TAIL = re.compile(
    rf" Account=(?P<account>\S*) QOS=(?P<qos>\S*) WcKey=\S* Cluster=\S*"
    rf" SubmitTime=(?P<submit>{_LOCAL_TIME}|unknown|None) EligibleTime="
)


def _local_time(text: str, where: str) -> float:
    if text in ("unknown", "None"):
        return math.nan
    try:
        return time.mktime(time.strptime(text, "%Y-%m-%dT%H:%M:%S"))  # slurmctld writes local time
    except (ValueError, OverflowError) as exc:
        raise SlurmParseError(JOBCOMP_FILE, where, f"bad time {text!r}: {exc}") from None


@dataclass(frozen=True, slots=True)
class JobcompRecord:
    """Every field rlsched reads from one ``jobcomp/filetxt`` record (times epoch seconds, NaN: unknown)."""

    job_id: int
    user: str
    group: str
    state: str
    partition: str
    time_limit_s: float
    start_s: float
    end_s: float
    nodes: int
    procs: int
    account: str
    qos: str
    submit_s: float
    #: The free-text ``Name`` (the job name; "" when the record has none): what the history import turns
    #: into SWF field 14, the executable id (:func:`rlsched.core.view.executable_id`).
    name: str = ""


_JOBCOMP_NAME = " Name="


def parse_jobcomp_record(text: str, where: str = "") -> JobcompRecord:
    """One ``jobcomp/filetxt`` record (a line, or lines joined where a job name held a newline).

    The fixed run of fields between the free-text ``Name`` and ``WorkDir``, and the run from ``Account``
    to ``SubmitTime``, must each occur exactly once: a job name or work dir imitating one makes the record
    ambiguous, and it is refused rather than read either way (issue 16: no field value may forge a record).
    """
    head = _JOBCOMP_HEAD.match(text)
    middles = list(_JOBCOMP_MIDDLE.finditer(text))
    if head is None or not middles:
        raise SlurmParseError(JOBCOMP_FILE, where, f"not a jobcomp record: {text[:80]!r}")
    if len(middles) > 1:
        raise SlurmParseError(
            JOBCOMP_FILE,
            where,
            f"ambiguous record: its JobState…WorkDir fields occur {len(middles)} times (a job name imitating them)",
        )
    middle = middles[0]
    tails = list(_JOBCOMP_TAIL.finditer(text, middle.end()))
    if not tails:
        raise SlurmParseError(JOBCOMP_FILE, where, f"no Account/QOS/SubmitTime fields: {text[:80]!r}")
    if len(tails) > 1:
        raise SlurmParseError(
            JOBCOMP_FILE,
            where,
            f"ambiguous record: its Account…SubmitTime fields occur {len(tails)} times (a work dir imitating them)",
        )
    tail = tails[0]
    # The name is everything between the head and the fixed run (which occurs once), so spaces, '=' and a
    # joined newline in it are kept as the job had them.
    between = text[head.end() : middle.start()]
    name = between[len(_JOBCOMP_NAME) :] if between.startswith(_JOBCOMP_NAME) else ""
    return JobcompRecord(
        job_id=int(head["job_id"]),
        user=head["user"],
        group=head["group"] or "",
        state=middle["state"],
        partition=middle["partition"],
        time_limit_s=parse_duration_s(middle["limit"], JOBCOMP_FILE, where),
        start_s=_local_time(middle["start"], where),
        end_s=_local_time(middle["end"], where),
        nodes=int(middle["nodes"]),
        procs=int(middle["procs"]),
        account=tail["account"],
        qos=tail["qos"],
        submit_s=_local_time(tail["submit"], where),
        name=name,
    )


_JOBCOMP_RECORD_START = re.compile(r"^JobId=(?P<job_id>\d+) UserId=")
_JOBCOMP_RECORD_END = re.compile(r" ExitCode=\S*\s*$")
#: A jobcomp record may span at most this many lines (newlines in its name and work dir).
JOBCOMP_MAX_RECORD_LINES = 8


@dataclass(frozen=True, slots=True)
class JobcompChunk:
    """One record of the jobcomp file as text (its lines joined with ``\\n``), or lines that are not one
    (``problem`` says why).  ``line`` is the 1-based number of its first line."""

    line: int
    text: str
    problem: str | None = None
    #: The file ended inside this record: a live reader waits for the rest rather than skipping it.
    unfinished: bool = False


def split_jobcomp_records(lines: Iterable[str]) -> Iterator[JobcompChunk]:
    """The records of a ``jobcomp/filetxt`` file, found so that no job name can forge one (issue 16).

    A record starts on a line beginning ``JobId=<n> UserId=`` and ends on the line ending ``ExitCode=…``.
    A line that does not end its record (a newline inside ``Name`` or ``WorkDir``) is joined with the next,
    up to :data:`JOBCOMP_MAX_RECORD_LINES` lines.  If that next line itself begins ``JobId=<n> UserId=`` —
    a record cut short, or a name holding a newline followed by a forged record — both are chunks with a
    problem: nothing of them is trusted.  Read each good chunk with :func:`parse_jobcomp_record`.
    """
    pending: tuple[int, str, int] | None = None  # first line, text so far, lines in it
    for lineno, raw in enumerate(lines, 1):
        line = raw.rstrip("\r\n")
        if pending is not None:
            first, text, count = pending
            if _JOBCOMP_RECORD_START.match(line):
                yield JobcompChunk(
                    first,
                    text,
                    "record does not end on its line and the next line starts "
                    "another (cut short, or a job name forging a record): both skipped",
                )
                yield JobcompChunk(lineno, line, f"follows the unfinished record of line {first}: skipped")
                pending = None
                continue
            text, count = f"{text}\n{line}", count + 1
        else:
            if not line.strip():
                continue
            first, text, count = lineno, line, 1
        if _JOBCOMP_RECORD_END.search(text) or not _JOBCOMP_RECORD_START.match(text):
            pending = None
            yield JobcompChunk(first, text)
        elif count < JOBCOMP_MAX_RECORD_LINES:
            pending = (first, text, count)
        else:
            yield JobcompChunk(first, text, f"no end of record within {JOBCOMP_MAX_RECORD_LINES} lines")
            pending = None
    if pending is not None:
        yield JobcompChunk(
            pending[0], pending[1], f"record cut short at the end of the file: {pending[1][:80]!r}", unfinished=True
        )


def jobcomp_chunk_job_id(text: str) -> int | None:
    """The job id a jobcomp chunk starts with (whether or not the chunk is a record that can be trusted)."""
    match = _JOBCOMP_RECORD_START.match(text)
    return int(match["job_id"]) if match else None


def parse_jobcomp_line(line: str, where: str = "") -> CompletedJob | None:
    """One line of the ``jobcomp/filetxt`` file; None for a job that never ran (cancelled while pending)."""
    record = parse_jobcomp_record(line, where)
    if record.nodes == 0 or record.procs == 0 or math.isnan(record.start_s) or math.isnan(record.end_s):
        return None
    return CompletedJob(
        job_id=record.job_id,
        state=record.state,
        account=record.account,
        partition=record.partition,
        qos=record.qos,
        cpus=record.procs,
        time_limit_s=record.time_limit_s,
        submit_s=record.submit_s,
        start_s=record.start_s,
        end_s=record.end_s,
    )


#: The ``--format`` the completion feed asks sacct for (read by
#: :func:`rlsched.backends.slurm.completions.read_sacct_completions`; no free-text field).
SACCT_FORMAT = "JobIDRaw,Account,Partition,QOS,AllocCPUS,Timelimit,Submit,Start,End,State"
