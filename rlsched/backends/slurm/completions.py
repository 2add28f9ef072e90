"""The completion feed: jobs finished since the previous view, each delivered once (docs/slurm.md).

Three sources, chosen by configuration or auto-detected from ``scontrol show config``:

- ``sacct`` where accounting storage (slurmdbd) is configured — production sites; its records are read
  by the reader of ``rlsched history import`` (:func:`rlsched.history.sacct.read_sacct_text`), so one
  malformed record (an account named with a newline splits its line) is skipped and counted as
  ``parse_error``, never the whole answer (issue 24);
- the ``jobcomp/filetxt`` file (``JobCompLoc``) otherwise: read from where the previous read stopped
  (``sacct -c`` misreads its SubmitTime, so the file is parsed directly);
- ``squeue``: finished jobs stay in ``squeue --json`` for ``MinJobAge`` seconds, so a poll interval
  shorter than that sees every job end.

The feed's position is part of the backend's persistent record, so a restarted daemon neither repeats
nor (within the source's memory) loses completions.  A fresh feed starts at "now": history before rlsched
started is not replayed as rewards.
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar

from rlsched.backends.common.completions import CompletionFeedState
from rlsched.backends.common.runner import CommandExecutor, decode_output
from rlsched.backends.slurm.errors import SlurmError, SlurmParseError
from rlsched.backends.slurm.parsers import (
    FINISHED_STATES,
    JOBCOMP_FILE,
    SACCT,
    SACCT_FORMAT,
    CompletedJob,
    SlurmJob,
    jobcomp_chunk_job_id,
    parse_jobcomp_line,
    split_jobcomp_records,
)
from rlsched.history.records import DropLog

log = logging.getLogger(__name__)

#: sacct windows overlap by this much, so a job recorded late by slurmdbd is not missed (deduplicated).
SACCT_OVERLAP_S = 300.0
#: How long a finished job whose sacct record has no partition yet is left for a later poll (then delivered
#: as it is); well inside the overlap, so the later windows still read it.
SACCT_PARTITION_WAIT_S = 60.0
#: How long the jobcomp feed remembers what it delivered (a job's record and its squeue entry, both read).
JOBCOMP_MEMORY_S = 3600.0


def detect_source(config: Mapping[str, str], jobcomp_path: str | None = None) -> str:
    """``sacct`` if accounting storage is on, else ``jobcomp`` if the filetxt log is readable, else
    ``squeue``."""
    storage = config.get("AccountingStorageType", "accounting_storage/none")
    if storage and storage != "accounting_storage/none":
        return "sacct"
    path = jobcomp_path or config.get("JobCompLoc", "")
    if config.get("JobCompType") == "jobcomp/filetxt" and path and os.access(path, os.R_OK):
        return "jobcomp"
    return "squeue"


class RecordLog(DropLog):
    """A :class:`DropLog` that keeps every malformed record's reason (the feed counts each one once)."""

    def __init__(self) -> None:
        super().__init__()
        self.reasons: list[str] = []

    def bad(self, where: str, reason: str) -> None:
        super().bad(where, reason)
        self.reasons.append(reason)


def read_sacct_completions(text: str, log: DropLog) -> list[CompletedJob]:
    """``sacct -X -n -P --format=SACCT_FORMAT`` (``SLURM_TIME_FORMAT=%s``): the finished jobs that ran.

    Read by the history import's reader; a record it cannot read is ``log.bad`` and skipped."""
    # Imported here: rlsched.history.sacct reads Slurm's parsers, whose package imports this module.
    from rlsched.history.sacct import read_sacct_text

    jobs = []
    for job in read_sacct_text(text.split("\n"), SACCT, log, columns=SACCT_FORMAT.split(",")):
        if job.state not in FINISHED_STATES or job.cpus <= 0 or math.isnan(job.start_s) or math.isnan(job.end_s):
            continue  # still running, or never ran
        jobs.append(
            CompletedJob(
                job_id=job.raw_id,
                state=job.state,
                account=job.account,
                partition=job.partition,
                qos=job.qos,
                cpus=job.cpus,
                time_limit_s=job.time_limit_s,
                submit_s=job.submit_s,
                start_s=job.start_s,
                end_s=job.end_s,
            )
        )
    return jobs


def completed_from_squeue(job: SlurmJob) -> CompletedJob | None:
    """A finished job of ``squeue --json`` as a completion, or None when it never ran."""
    if not job.finished or job.cpus <= 0 or math.isnan(job.start_s) or math.isnan(job.end_s):
        return None
    return CompletedJob(
        job_id=job.job_id,
        state=job.state,
        account=job.account,
        partition=job.partition,
        qos=job.qos,
        cpus=job.cpus,
        time_limit_s=job.time_limit_s,
        submit_s=job.submit_s,
        start_s=job.start_s,
        end_s=job.end_s,
    )


class CompletionFeed(CompletionFeedState):
    """Delivers each finished job once, from one of the three sources."""

    sources = ("sacct", "jobcomp", "squeue")
    #: jobcomp: the byte offset the previous read stopped at, in the file of this inode.
    position_fields: ClassVar[dict[str, type]] = {"offset": int, "inode": int}
    memory_s = JOBCOMP_MEMORY_S
    offset: int | None
    inode: int | None

    def __init__(
        self,
        source: str,
        executor: CommandExecutor,
        sacct: str = "sacct",
        jobcomp_path: str | None = None,
        clock: Callable[[], float] = time.time,
        state: Mapping[str, Any] | None = None,
        wait_for_partition: bool = False,
    ) -> None:
        if source == "jobcomp" and not jobcomp_path:
            raise ValueError("the jobcomp completion source needs the file's path (JobCompLoc)")
        #: jobcomp: jobs of unreadable records that squeue listed as not finished yet, looked up again at each
        #: poll (set before the base class loads a saved state into it).
        self.unsettled: set[int] = set()
        super().__init__(source, executor, clock, state)
        self.sacct = sacct
        self.jobcomp_path = jobcomp_path
        #: sacct: hold back a young record with no partition yet (the daemon is scoped to partitions).
        self.wait_for_partition = wait_for_partition
        #: sacct: the malformed records already counted, by reason (each is re-read while in sacct's window).
        self.bad_seen: dict[str, float] = {}
        # sacct only: jobs that ended before the feed began are not delivered (its windows overlap the
        # previous poll, never this floor).  sacct counts whole seconds: a fresh feed skips its starting
        # second too (a job ended then may be an earlier one's), a resumed feed keeps it (it may be new).
        self.floor_s = float(math.floor(self.since_s)) + (0.0 if state else 1.0)

    def state(self) -> dict[str, Any]:
        return {**super().state(), "unsettled": sorted(self.unsettled)}

    def _load(self, state: Mapping[str, Any]) -> None:
        super()._load(state)
        if state.get("source") != self.source:
            return
        try:
            self.unsettled = {int(job_id) for job_id in state.get("unsettled", [])}
        except (TypeError, ValueError) as exc:
            log.warning("completion feed: ignoring a bad saved list of unsettled jobs (%s)", exc)

    # -- polling -----------------------------------------------------------------------------------------
    def poll(self, squeue_jobs: Iterable[SlurmJob]) -> list[CompletedJob]:
        """Jobs finished since the previous poll.  ``squeue_jobs`` is the view's own ``squeue --json``."""
        if self.source == "squeue":
            return self._from_squeue(squeue_jobs)
        if self.source == "jobcomp":
            return self._from_jobcomp(squeue_jobs)
        return self._from_sacct()

    def _from_squeue(self, squeue_jobs: Iterable[SlurmJob]) -> list[CompletedJob]:
        finished = FINISHED_STATES
        done = [c for j in squeue_jobs if j.state in finished and (c := completed_from_squeue(j)) is not None]
        fresh = [c for c in done if c.end_s >= self.since_s and (c.job_id, c.end_s) not in self.seen]
        # A job gone from squeue (older than MinJobAge) cannot come back: forget it, memory stays bounded.
        self.seen = {(c.job_id, c.end_s) for c in done if c.end_s >= self.since_s}
        return fresh

    def _from_sacct(self) -> list[CompletedJob]:
        now = self.clock()
        start = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(self.since_s - SACCT_OVERLAP_S))
        argv = [
            self.sacct,
            "-X",
            "-n",
            "-P",
            "-a",
            f"--format={SACCT_FORMAT}",
            "-S",
            start,
            "-E",
            "now",
            "-s",
            "CD,F,TO,CA,NF,OOM,PR,BF,DL",
        ]
        records = RecordLog()
        jobs = self.executor.run(argv, lambda r: read_sacct_completions(r.stdout, records))
        for reason in records.reasons:
            if reason not in self.bad_seen:
                # One bad record must not blind the loop: skipped, counted and logged once.
                self.bad_seen[reason] = now
                self.executor.count("parse_error")
                log.warning(
                    "sacct: skipping a malformed record (counted in rlsched_backend_errors_total"
                    '{kind="parse_error"}): %s',
                    reason,
                )
        fresh = []
        for job in jobs:  # the windows overlap: drop what an earlier poll delivered
            if job.end_s < self.floor_s:
                continue
            key = (job.job_id, job.end_s)
            if key in self.seen:
                continue
            if self.wait_for_partition and not job.partition and now - job.end_s < SACCT_PARTITION_WAIT_S:
                # slurmdbd can record a job's end before its partition (Slurm 22.05, seen on the test
                # cluster): a partition-scoped daemon would drop it.  The next window re-reads it.
                continue
            self.seen.add(key)
            fresh.append(job)
        # Keep the window (and the dedup memory) from growing: it always starts one overlap before `since`.
        self.since_s = now
        horizon = now - 2 * SACCT_OVERLAP_S
        self.seen = {key for key in self.seen if key[1] >= horizon}
        self.bad_seen = {reason: when for reason, when in self.bad_seen.items() if when >= horizon}
        return fresh

    def _from_jobcomp(self, squeue_jobs: Iterable[SlurmJob]) -> list[CompletedJob]:
        """New records of the jobcomp file, split so that no job name can forge or hide one (issue 16).

        A record the file leaves ambiguous (a newline or an imitated field run in a job name) is not read:
        the job ids it starts with are looked up in ``squeue`` instead, whose fields no name can shift.
        The position moves to the end of the last complete record; a record still being written is read
        whole next time.
        """
        assert self.jobcomp_path is not None
        data = self._jobcomp_bytes(self.jobcomp_path)
        out: list[CompletedJob] = []
        ambiguous: set[int] = set()
        if data is not None:
            out, ambiguous, self.offset = self._jobcomp_records(data, self.jobcomp_path)
        if ambiguous or self.unsettled:
            done, self.unsettled = self._completed_in_squeue(ambiguous, squeue_jobs)
            out += done
        return self._deliver_once(out)

    def _jobcomp_bytes(self, path: str) -> bytes | None:
        """The file's bytes from the position on; None on the first read (the feed starts at the end, no replay
        of history) and while the file does not exist.  A rotated or truncated file is read from 0."""
        try:
            with open(path, "rb") as fh:
                st = os.fstat(fh.fileno())
                if self.offset is None or self.inode != st.st_ino or st.st_size < self.offset:
                    fresh_start = self.offset is None
                    self.offset = st.st_size if fresh_start else 0
                    self.inode = st.st_ino
                    if fresh_start:
                        return None
                fh.seek(self.offset)
                return fh.read()
        except FileNotFoundError:
            return None  # nothing finished yet: slurmctld creates the file at the first completion
        except OSError as exc:
            self.executor.count("jobcomp_read")
            raise SlurmError(f"{JOBCOMP_FILE}: cannot read {path}: {exc}") from exc

    def _jobcomp_records(self, data: bytes, path: str) -> tuple[list[CompletedJob], set[int], int]:
        """The completions in ``data`` (read at :attr:`offset`), the job ids of the unreadable records, and the
        offset after the last complete record."""
        assert self.offset is not None
        end = data.rfind(b"\n") + 1  # a line still being written is read next time
        line_starts: list[int] = []
        texts: list[str] = []
        position = self.offset
        replacements = 0
        for raw in data[:end].split(b"\n")[:-1]:
            line_starts.append(position)
            position += len(raw) + 1
            text, bad = decode_output(raw)
            replacements += bad
            texts.append(text)
        if replacements:
            self.executor.count("decode_replacement", replacements)
            log.warning("%s: %d invalid UTF-8 sequence(s), replaced", path, replacements)
        new_offset = self.offset + end
        out: list[CompletedJob] = []
        ambiguous: set[int] = set()
        for chunk in split_jobcomp_records(texts):
            if chunk.unfinished:
                new_offset = line_starts[chunk.line - 1]  # the rest of it is not written yet
                break
            where = f"{path}, record at byte {line_starts[chunk.line - 1]}"
            try:
                if chunk.problem is not None:
                    raise SlurmParseError(JOBCOMP_FILE, where, chunk.problem)
                job = parse_jobcomp_line(chunk.text, where)
            except SlurmParseError as exc:
                # One bad record must not block every later completion: count it, log it, go on.
                self.executor.count("parse_error")
                log.warning("%s", exc)
                job_id = jobcomp_chunk_job_id(chunk.text)
                if job_id is not None:
                    ambiguous.add(job_id)
                continue
            if job is not None:
                out.append(job)
        return out, ambiguous, new_offset

    def _completed_in_squeue(
        self, job_ids: set[int], squeue_jobs: Iterable[SlurmJob]
    ) -> tuple[list[CompletedJob], set[int]]:
        """squeue's own fields (a JSON document) for the jobs of unreadable records, ``job_ids`` (new this poll)
        and :attr:`unsettled`; a job id taken from a forged line only finds a real job's real completion, if
        any.  Also the ids still to look up: a job squeue lists as not finished may have ended between the
        view's squeue and the read of the file (its record is written when it ends), so it is looked up again
        at each poll until squeue lists it finished or no more."""
        path = self.jobcomp_path
        by_id = {job.job_id: job for job in squeue_jobs}
        out = []
        unsettled = set()
        for job_id in sorted(job_ids | self.unsettled):
            found = by_id.get(job_id)
            done = completed_from_squeue(found) if found is not None else None
            if done is not None:
                out.append(done)
            elif found is None:
                log.warning("%s: job %d: its record is unreadable and squeue no longer has it", path, job_id)
            elif not found.finished:
                unsettled.add(job_id)
                if job_id in job_ids:  # said once, not at every poll it is looked up again
                    log.warning(
                        "%s: job %d: its record is unreadable and squeue lists the job as %s, not finished: "
                        "looked up again at each poll until it is",
                        path,
                        job_id,
                        found.state,
                    )
        return out, unsettled
