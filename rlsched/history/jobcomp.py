"""The ``jobcomp/filetxt`` file (``JobCompLoc``): one ``Key=Value …`` record per finished job.

Each record is read by the daemon's own parser (:func:`rlsched.backends.slurm.parsers.parse_jobcomp_record`),
which refuses a record whose fixed field runs occur more than once (a job name imitating them).  Records are
found so that no job name can forge one (issue 16):

- a record starts on a line beginning ``JobId=<n> UserId=`` and ends on the line ending ``ExitCode=…``;
- a line that does not end its record (a newline inside ``Name`` or ``WorkDir``) is joined with the next;
- if that next line itself begins ``JobId=<n> UserId=`` — a record cut short, or a job name holding a
  newline followed by a forged record — both are reported and skipped: nothing of them is trusted.

Times are local times of the cluster: set ``TZ`` to its zone when importing elsewhere.  The file has no
eligible time rlsched reads, no requested CPU count and no array or step records (Slurm writes one record
per job allocation).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator

from rlsched.backends.slurm.errors import SlurmParseError
from rlsched.backends.slurm.parsers import parse_jobcomp_record
from rlsched.history.records import DropLog, HistoryJob

_RECORD_START = re.compile(r"^JobId=\d+ UserId=")
_RECORD_END = re.compile(r" ExitCode=\S*\s*$")
#: A record may span at most this many lines (newlines in its name and work dir).
MAX_RECORD_LINES = 8


def _records(lines: Iterable[str], source: str, log: DropLog) -> Iterator[tuple[str, str]]:
    """(``FILE:LINE``, text) per record (see the module docstring)."""
    pending: tuple[int, str, int] | None = None     # first line, text so far, lines in it
    for lineno, raw in enumerate(lines, 1):
        line = raw.rstrip("\r\n")
        if pending is not None:
            first, text, count = pending
            if _RECORD_START.match(line):
                log.bad(f"{source}:{first}", "record does not end on its line and the next line starts another "
                                             "(cut short, or a job name forging a record): both skipped")
                log.bad(f"{source}:{lineno}", f"follows the unfinished record of line {first}: skipped")
                pending = None
                continue
            text, count = f"{text}\n{line}", count + 1
        else:
            if not line.strip():
                continue
            first, text, count = lineno, line, 1
        if _RECORD_END.search(text) or not _RECORD_START.match(text):
            pending = None
            yield f"{source}:{first}", text
        elif count < MAX_RECORD_LINES:
            pending = (first, text, count)
        else:
            log.bad(f"{source}:{first}", f"no end of record within {MAX_RECORD_LINES} lines")
            pending = None
    if pending is not None:
        log.bad(f"{source}:{pending[0]}", f"record cut short at the end of the file: {pending[1][:80]!r}")


def read_jobcomp(lines: Iterable[str], source: str, log: DropLog) -> Iterator[HistoryJob]:
    """Jobs of a ``jobcomp/filetxt`` file; a bad record is ``log.bad`` (``FILE:LINE``)."""
    for where, text in _records(lines, source, log):
        try:
            record = parse_jobcomp_record(text, "")
        except SlurmParseError as exc:
            log.bad(where, exc.message)
            continue
        # A job cancelled while pending has StartTime = EndTime and no CPUs (docs/slurm.md).
        ran = record.procs > 0 and record.nodes > 0
        yield HistoryJob(
            job_id=str(record.job_id), raw_id=record.job_id, user=record.user, group=record.group,
            account=record.account, partition=record.partition, qos=record.qos, state=record.state,
            submit_s=record.submit_s, eligible_s=math.nan, start_s=record.start_s if ran else math.nan,
            end_s=record.end_s, time_limit_s=record.time_limit_s, cpus=record.procs, nodes=record.nodes)
