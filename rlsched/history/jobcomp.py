"""The ``jobcomp/filetxt`` file (``JobCompLoc``): one ``Key=Value …`` record per finished job.

Records are found and read by the daemon's own parsers (:mod:`rlsched.backends.slurm.parsers`:
``split_jobcomp_records`` and ``parse_jobcomp_record``, which refuses a record whose fixed field runs occur
more than once — a job name imitating them), so that no job name can forge one (issue 16):

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
from collections.abc import Iterable, Iterator

from rlsched.backends.slurm.errors import SlurmParseError
from rlsched.backends.slurm.parsers import parse_jobcomp_record, split_jobcomp_records
from rlsched.history.records import DropLog, HistoryJob


def read_jobcomp(lines: Iterable[str], source: str, log: DropLog) -> Iterator[HistoryJob]:
    """Jobs of a ``jobcomp/filetxt`` file; a bad record is ``log.bad`` (``FILE:LINE``)."""
    for chunk in split_jobcomp_records(lines):
        where = f"{source}:{chunk.line}"
        if chunk.problem is not None:
            log.bad(where, chunk.problem)
            continue
        try:
            record = parse_jobcomp_record(chunk.text, "")
        except SlurmParseError as exc:
            log.bad(where, exc.message)
            continue
        # A job cancelled while pending has StartTime = EndTime and no CPUs (docs/slurm.md).
        ran = record.procs > 0 and record.nodes > 0
        yield HistoryJob(
            job_id=str(record.job_id),
            raw_id=record.job_id,
            user=record.user,
            group=record.group,
            account=record.account,
            partition=record.partition,
            qos=record.qos,
            state=record.state,
            submit_s=record.submit_s,
            eligible_s=math.nan,
            start_s=record.start_s if ran else math.nan,
            end_s=record.end_s,
            time_limit_s=record.time_limit_s,
            cpus=record.procs,
            nodes=record.nodes,
            name=record.name,
        )
