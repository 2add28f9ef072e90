"""PBS accounting logs (``server_priv/accounting/YYYYMMDD``): one ``E`` (end) record per job that ran.

The records are read by the PBS backend's own parser (:func:`rlsched.backends.pbs.parsers.parse_accounting_line`);
a line that cannot be read is ``log.bad`` with ``FILE:LINE``, records of other types (Q, S, D, A, ...) are
skipped.  Times in the records are epoch seconds (no time zone to guess); ``--input`` is one day's file or the
accounting folder (every ``YYYYMMDD`` file, in order).  The VO comes from ``Account_Name``, ``project`` or
``group``, as the config's ``vo_from`` says (``project`` without a config).  An array job's subjobs are jobs of
their own (``13[2]``); the ``13[]`` record of the array itself is left out (``array_placeholder``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

from rlsched.backends.pbs.parsers import end_records
from rlsched.history.records import DropLog, HistoryJob

_DAY_FILE = re.compile(r"^\d{8}$")


def accounting_files(path: Path) -> list[Path]:
    """``path`` itself, or the ``YYYYMMDD`` files of a folder in date order."""
    if path.is_dir():
        return sorted(p for p in path.iterdir() if _DAY_FILE.match(p.name) and p.is_file())
    return [path]


def read_pbs_accounting(
    lines: Iterable[str], source: str, log: DropLog, vo_from: str = "project"
) -> Iterator[HistoryJob]:
    """The jobs of the ``E`` records of an accounting log; a bad line is ``log.bad`` (``FILE:LINE``)."""
    for _, record, job in end_records(lines, source, log.bad):
        if job.array:
            log.dropped["array_placeholder"] += 1
            continue
        fields = record.fields
        nodect = fields.get("Resource_List.nodect", "")
        etime = fields.get("etime", "")
        short_id = job.pbs_id.split(".", 1)[0]
        yield HistoryJob(
            job_id=short_id,
            raw_id=job.job_id,
            user=job.user,
            group=job.group,
            account=job.vo_key(vo_from),
            partition=job.queue,
            qos="",
            state="COMPLETED" if job.exit_status == 0 else "FAILED",
            submit_s=job.submit_s,
            eligible_s=float(etime) if etime.isdecimal() else math.nan,
            start_s=job.start_s,
            end_s=job.end_s,
            time_limit_s=job.walltime_s,
            cpus=job.cpus,
            nodes=int(nodect) if nodect.isdecimal() else 1,
            req_cpus=job.cpus,
            name=job.name,
        )
