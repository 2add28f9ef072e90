"""One job of a site's history, whatever the source, and the rules that decide which jobs a trace keeps.

Every source (``sacct --parsable2``, ``sacct --json``, the ``jobcomp/filetxt`` file, later PBS accounting)
turns its records into :class:`HistoryJob`; :func:`drop_reason` then applies the same rules to all of them,
so a job is kept or dropped for the same reason whichever file it came from (docs/history.md, "Drops").
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field

from rlsched.errors import RlschedError

#: Drop reasons, in the order they are tested (a record is counted once, under the first that applies).
DROP_REASONS = (
    "job_step",  # 123.batch, 123.0, 123.extern: a step of a job, not a job
    "array_placeholder",  # 123_[1-5]: the pending remainder of an array, not a job that ran
    "cancelled_before_start",  # cancelled while pending (no start, or no CPUs allocated)
    "not_started",  # no start time: still pending when the records were taken, or never launched
    "not_ended",  # started but no end: still running when the records were taken
    "zero_cpus",  # a start and an end but no allocated CPU
    "bad_times",  # no submit time, end before start, start before submit, absurd values
    "outside_window",  # submitted outside the --start/--end window
    "duplicate",  # the same job (raw id and start) twice
)
#: A line (or JSON entry) that could not be read at all; counted beside the drops.
MALFORMED = "malformed"

#: Times outside [1990, 2200) are not times a batch system recorded: treated as absurd.
MIN_EPOCH_S = 631_152_000.0
MAX_EPOCH_S = 7_258_118_400.0
#: A single run longer than this is absurd (a clock jump, a corrupt record).
MAX_RUN_S = 366 * 86400.0
#: How many malformed lines are kept (with file and line) for the summary and meta.json.
MAX_EXAMPLES = 5

_CANCELLED = "CANCELLED"


@dataclass(frozen=True, slots=True)
class HistoryJob:
    """One job record.  Times are epoch seconds (NaN: unknown); ``time_limit_s`` is inf when unlimited.

    ``job_id`` is the id as the source prints it (``123``, ``123_4`` for an array element, ``123+1`` for
    a heterogeneous component); ``raw_id`` the unique numeric id (sacct's JobIDRaw).
    ``req_cpus`` is -1 when the source does not give the request.  ``name`` is the job name (sacct's
    ``JobName``, jobcomp's ``Name``, PBS's ``jobname``; "" when the source has none): the trace keeps only its
    executable id (:func:`rlsched.core.view.executable_id`, SWF field 14), never the name itself.
    """

    job_id: str
    raw_id: int
    user: str
    group: str
    account: str
    partition: str
    qos: str
    state: str
    submit_s: float
    eligible_s: float
    start_s: float
    end_s: float
    time_limit_s: float
    cpus: int
    nodes: int
    req_cpus: int = -1
    name: str = ""


class HistoryFormatError(RlschedError, ValueError):
    """A history file (or command output) the import cannot read at all, or a malformed line under
    ``--strict``; the message is one line naming the file and the line (``FILE:LINE: reason``)."""


@dataclass
class DropLog:
    """What an import left out: drops by reason, malformed lines (the first few with their place)."""

    strict: bool = False
    dropped: Counter[str] = field(default_factory=Counter)
    malformed: int = 0
    examples: list[str] = field(default_factory=list)

    def drop(self, reason: str) -> None:
        self.dropped[reason] += 1

    def bad(self, where: str, reason: str) -> None:
        """A malformed record at ``where`` (``FILE:LINE``): an error under ``strict``, else counted."""
        message = f"{where}: {reason}"
        if self.strict:
            raise HistoryFormatError(message)
        self.malformed += 1
        if len(self.examples) < MAX_EXAMPLES:
            self.examples.append(message)

    def as_dict(self) -> dict[str, int]:
        """Drop counts by reason (the known reasons in their order, then any other), plus ``malformed``."""
        out = {reason: self.dropped[reason] for reason in DROP_REASONS if self.dropped[reason]}
        out.update({reason: n for reason, n in sorted(self.dropped.items()) if reason not in out and n})
        if self.malformed:
            out[MALFORMED] = self.malformed
        return out

    @property
    def total(self) -> int:
        return sum(self.dropped.values()) + self.malformed


def _is_time(value: float) -> bool:
    return MIN_EPOCH_S <= value < MAX_EPOCH_S


def drop_reason(job: HistoryJob) -> str | None:
    """Why ``job`` cannot be replayed (one of :data:`DROP_REASONS` up to ``bad_times``), or None to keep it.

    The window and duplicates are the caller's (they need more than one record).
    """
    started = not math.isnan(job.start_s)
    if job.state.startswith(_CANCELLED) and (not started or job.cpus <= 0):
        return "cancelled_before_start"
    if not started:
        return "not_started"
    if math.isnan(job.end_s):
        return "not_ended"
    if job.cpus <= 0:
        return "zero_cpus"
    if not (_is_time(job.submit_s) and _is_time(job.start_s) and _is_time(job.end_s)):
        return "bad_times"
    if job.end_s < job.start_s or job.start_s < job.submit_s or job.end_s - job.start_s > MAX_RUN_S:
        return "bad_times"
    return None
