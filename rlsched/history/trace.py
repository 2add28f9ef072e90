"""From history records to a trace the simulator replays: SWF plus a sidecar (docs/history.md).

``NAME.swf`` has the 18 standard fields (times relative to the earliest submit, whose epoch is the
``UnixStartTime`` header; wait = start − submit; run = end − start; requested time = the time limit;
processors = allocated CPUs; executable (field 14) = :func:`rlsched.core.view.executable_id` of the job name, the
id the daemon computes live, -1 where the source has no name — the name itself is written nowhere).  SWF has no
field for a Slurm account, QOS or class, so beside it:

- ``NAME.jobs.csv``: one row per SWF job (:data:`SIDECAR_COLUMNS`): the Slurm job id, user, group, account,
  VO, partition, QOS, class, CPUs, nodes, time limit, state and the epoch times;
- ``NAME.meta.json``: where the records came from, the window, the VO list and class rule used, the drop
  counts, the SWF id mappings, the rlsched version.

The class comes from the daemon config's class rule applied to what Slurm knew at submit time (time limit,
QOS, partition — never the runtime); the VO from its account → VO mapping.  The SWF group id is the VO's
(index + 1), so even a reader without the sidecar groups jobs by VO.
"""

from __future__ import annotations

import csv
import io
import json
import math
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import numpy as np

from rlsched import __version__
from rlsched.core.atomic import atomic_write
from rlsched.core.classify import ClassRule, VOMapping
from rlsched.core.view import JobClass, executable_id
from rlsched.history.records import DropLog, HistoryJob, drop_reason
from rlsched.sim.traces.sidecar import META_FORMAT, SIDECAR_COLUMNS, sidecar_paths

#: Requested time written for a job without a time limit (the daemon's ``unlimited_time_s`` default).
DEFAULT_UNLIMITED_TIME_S = 7 * 86400.0
#: SWF status (field 11) by Slurm state: 1 completed, 0 failed, 5 cancelled; -1 otherwise.
_SWF_STATUS = {
    "COMPLETED": 1,
    "CANCELLED": 5,
    "FAILED": 0,
    "TIMEOUT": 0,
    "NODE_FAIL": 0,
    "OUT_OF_MEMORY": 0,
    "BOOT_FAIL": 0,
    "DEADLINE": 0,
    "PREEMPTED": 0,
}
_CLASS_NAMES = {int(JobClass.INTERACTIVE): "interactive", int(JobClass.BATCH): "batch"}


@dataclass
class HistoryTrace:
    """The kept jobs, in SWF order (by submit time, then raw id), with their class and VO."""

    jobs: list[HistoryJob]
    job_class: list[int]
    vo: list[int]
    vo_names: tuple[str, ...]
    log: DropLog
    max_procs: int
    max_procs_from: str
    unix_start_time: int
    window: tuple[float, float] | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.jobs)

    def vo_counts(self) -> dict[str, int]:
        counts = Counter(self.vo)
        return {name: counts[i] for i, name in enumerate(self.vo_names)}

    def class_counts(self) -> dict[str, int]:
        counts = Counter(self.job_class)
        return {name: counts[value] for value, name in _CLASS_NAMES.items()}


def peak_allocation(jobs: list[HistoryJob]) -> int:
    """The most CPUs the recorded schedule had allocated at once (a lower bound of the machine's size)."""
    if not jobs:
        return 1
    times = np.array([j.start_s for j in jobs] + [j.end_s for j in jobs])
    cpus = np.array([j.cpus for j in jobs] + [-j.cpus for j in jobs], dtype=np.int64)
    order = np.lexsort((cpus, times))  # at one instant, ends (negative) before starts
    return max(1, int(np.cumsum(cpus[order]).max()))


def build_trace(
    records: Iterable[HistoryJob],
    log: DropLog,
    *,
    class_rule: ClassRule | None = None,
    vo_mapping: VOMapping | None = None,
    window: tuple[float, float] | None = None,
    cores: int | None = None,
) -> HistoryTrace:
    """Screen ``records`` (the drop rules of :mod:`rlsched.history.records`, the window, duplicates),
    order the kept jobs by submit time and give each its class and VO.

    ``window``: (start, end) epoch seconds; jobs submitted outside ``[start, end)`` are dropped
    (``outside_window``).  ``cores``: the machine size (default: the peak allocation of the records).
    """
    rule = class_rule or ClassRule()
    mapping = vo_mapping or VOMapping()
    kept: list[HistoryJob] = []
    seen: set[tuple[int, str, float]] = set()
    w0, w1 = window if window is not None else (-math.inf, math.inf)
    for job in records:
        reason = drop_reason(job)
        if reason is None and not w0 <= job.submit_s < w1:
            reason = "outside_window"
        if reason is None:
            key = (job.raw_id, job.job_id, job.start_s)
            if key in seen:
                reason = "duplicate"
            else:
                seen.add(key)
        if reason is not None:
            log.drop(reason)
            continue
        kept.append(job)
    kept.sort(key=lambda j: (j.submit_s, j.raw_id))
    classes: dict[tuple[str, str, float], int] = {}
    job_class = []
    for job in kept:
        rule_key = (job.qos, job.partition, job.time_limit_s)
        value = classes.get(rule_key)
        if value is None:
            value = classes[rule_key] = int(rule.classify(job.qos, job.partition, job.time_limit_s))
        job_class.append(value)
    vo = [mapping.index(job.account) for job in kept]
    if cores is not None:
        max_procs, source = cores, "--cores"
    else:
        max_procs, source = peak_allocation(kept), "peak allocation of the records"
    t0 = math.floor(kept[0].submit_s) if kept else 0
    return HistoryTrace(
        jobs=kept,
        job_class=job_class,
        vo=vo,
        vo_names=mapping.names,
        log=log,
        max_procs=max_procs,
        max_procs_from=source,
        unix_start_time=t0,
        window=window,
    )


def _ids(values: Iterable[str]) -> dict[str, int]:
    """SWF ids 1, 2, … in order of first appearance."""
    ids: dict[str, int] = {}
    for value in values:
        if value not in ids:
            ids[value] = len(ids) + 1
    return ids


def _epoch(value: float) -> str:
    return "" if math.isnan(value) else str(round(value))


def _write_text(path: Path, fill: Any) -> None:
    """Atomically write what ``fill(text_handle)`` writes (UTF-8, ``\\n`` line ends)."""

    def write(handle: IO[bytes]) -> None:
        text = io.TextIOWrapper(handle, encoding="utf-8", newline="")
        fill(text)
        text.flush()
        text.detach()

    atomic_write(path, write)


def write_trace(
    trace: HistoryTrace, out: str | Path, *, meta: Mapping[str, Any], unlimited_time_s: float = DEFAULT_UNLIMITED_TIME_S
) -> tuple[Path, Path, Path]:
    """Write ``out`` (SWF), its ``.jobs.csv`` and ``.meta.json``, each atomically; returns the three paths.

    ``meta``: what to record beside the counts (source, command or file, config, class rule, VO
    mapping…).  A job without a time limit gets ``unlimited_time_s`` as its SWF requested time.
    """
    swf_path = Path(out)
    csv_path, meta_path = sidecar_paths(swf_path)
    jobs = trace.jobs
    t0 = trace.unix_start_time
    users = _ids(j.user for j in jobs)
    queues = _ids(j.qos for j in jobs)
    partitions = _ids(j.partition for j in jobs)
    # SWF field 14: the learned runtime predictor keeps each user's runtimes per program, keyed live by this id
    # of the job name; the name stays out of the trace (it may say more than the program, and needs no keeping).
    executables = {name: executable_id(name) for name in {j.name for j in jobs}}

    def sidecar(handle: IO[str]) -> None:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(SIDECAR_COLUMNS)
        writer.writerows(
            (
                n,
                j.job_id,
                j.raw_id,
                j.user,
                j.group,
                j.account,
                trace.vo_names[vo],
                j.partition,
                j.qos,
                _CLASS_NAMES[cls],
                j.cpus,
                j.req_cpus,
                j.nodes,
                "inf" if math.isinf(j.time_limit_s) else f"{j.time_limit_s:g}",
                j.state,
                _epoch(j.submit_s),
                _epoch(j.eligible_s),
                _epoch(j.start_s),
                _epoch(j.end_s),
            )
            for n, (j, cls, vo) in enumerate(zip(jobs, trace.job_class, trace.vo, strict=True), 1)
        )

    def swf(handle: IO[str]) -> None:
        handle.write(_swf_header(trace, meta, len(users), len(queues), len(partitions)))
        line = "%d %d %d %d %d -1 -1 %d %d -1 %d %d %d %d %d %d -1 -1\n"
        handle.writelines(
            line
            % (
                n,
                round(j.submit_s) - t0,
                round(j.start_s - j.submit_s),
                round(j.end_s - j.start_s),
                j.cpus,
                j.req_cpus,
                round(unlimited_time_s if math.isinf(j.time_limit_s) else j.time_limit_s),
                _SWF_STATUS.get(j.state, -1),
                users[j.user],
                vo + 1,
                executables[j.name],
                queues[j.qos],
                partitions[j.partition],
            )
            for n, (j, vo) in enumerate(zip(jobs, trace.vo, strict=True), 1)
        )

    full_meta = _trace_meta(trace, meta, users, queues, partitions, swf_path, csv_path, unlimited_time_s)
    encoded = (json.dumps(full_meta, indent=2, sort_keys=False, default=_json_default) + "\n").encode()
    _write_text(csv_path, sidecar)
    atomic_write(meta_path, lambda handle: handle.write(encoded))
    _write_text(swf_path, swf)
    trace.meta = full_meta
    return swf_path, csv_path, meta_path


def _trace_meta(
    trace: HistoryTrace,
    meta: Mapping[str, Any],
    users: dict[str, int],
    queues: dict[str, int],
    partitions: dict[str, int],
    swf_path: Path,
    csv_path: Path,
    unlimited_time_s: float,
) -> dict[str, Any]:
    """Build the trace's ``.meta.json`` content: ``meta`` with the counts, SWF ids, file names and version."""
    return {
        "format": META_FORMAT,
        **meta,
        "jobs": len(trace.jobs),
        "dropped": trace.log.as_dict(),
        "malformed_examples": list(trace.log.examples),
        "vos": list(trace.vo_names),
        "vo_jobs": trace.vo_counts(),
        "class_jobs": trace.class_counts(),
        "max_procs": trace.max_procs,
        "max_procs_from": trace.max_procs_from,
        "unix_start_time": trace.unix_start_time,
        "window": None if trace.window is None else {"start_epoch": trace.window[0], "end_epoch": trace.window[1]},
        "unlimited_time_s": unlimited_time_s,
        "swf_ids": {
            "user": users,
            "group (VO)": {name: i + 1 for i, name in enumerate(trace.vo_names)},
            "queue (QOS)": queues,
            "partition": partitions,
        },
        "files": {"swf": swf_path.name, "jobs": csv_path.name},
        "rlsched_version": __version__,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def _json_default(value: Any) -> Any:
    if isinstance(value, frozenset | set | tuple):
        return sorted(value) if isinstance(value, frozenset | set) else list(value)
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    raise TypeError(f"not JSON: {type(value).__name__}")


def _swf_header(trace: HistoryTrace, meta: Mapping[str, Any], n_users: int, n_queues: int, n_partitions: int) -> str:
    t0 = trace.unix_start_time
    end = max((j.end_s for j in trace.jobs), default=float(t0))
    zone = time.strftime("%Z")
    lines = [
        "Version: 2.2",
        f"Computer: {meta.get('cluster') or 'Slurm cluster'}",
        f"Installation: records imported by `rlsched history import --from {meta.get('source', '?')}`",
        f"Conversion: rlsched {__version__}, {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}",
        "Information: docs/history.md of rlsched; Slurm fields of each job in the .jobs.csv sidecar",
        f"UnixStartTime: {t0}",
        f"TimeZoneString: {zone}",
        f"StartTime: {datetime.fromtimestamp(t0, UTC).strftime('%a %b %d %H:%M:%S UTC %Y')}",
        f"EndTime: {datetime.fromtimestamp(int(end), UTC).strftime('%a %b %d %H:%M:%S UTC %Y')}",
        f"MaxJobs: {len(trace.jobs)}",
        f"MaxRecords: {len(trace.jobs)}",
        f"MaxProcs: {trace.max_procs}",
        f"MaxUsers: {n_users}",
        f"MaxGroups: {len(trace.vo_names)}",
        f"MaxQueues: {n_queues}",
        f"MaxPartitions: {n_partitions}",
        "Note: group = VO (account -> VO mapping of the daemon config), queue = QOS; names in the .meta.json",
        "Note: executable = CRC-32 of the job name as the daemon keys it live (-1: no name); names not kept",
        f"Note: MaxProcs from the {trace.max_procs_from}",
    ]
    return "".join(f"; {line}\n" for line in lines)
