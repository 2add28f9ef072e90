"""Traces with a sidecar: an SWF file plus what SWF has no field for (docs/history.md).

``rlsched history import`` writes ``NAME.swf`` with ``NAME.jobs.csv`` (one row per SWF job: the Slurm job
id, account, VO, partition, QOS, class…) and ``NAME.meta.json`` (the VO list, the class rule, the drop
counts…).  :func:`read_trace` reads the SWF and, when the sidecar is there, takes each job's VO and class
from it — the class the daemon config's rule gives at submit time (time limit, QOS, partition), not the
runtime rule :func:`~rlsched.sim.traces.swf.read_swf` applies to archive traces — and the VO list (in the
config's order, so a model trained on the trace fits the daemon) and shares from the meta file.  Without a
sidecar it is :func:`read_swf`.  ``rlsched sim run --workload``, ``train`` and ``evaluate`` load traces
through it (:func:`rlsched.cli._common.load_workload`).
"""

from __future__ import annotations

import csv
import json
import math
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from rlsched.core.view import INTERACTIVE_THRESHOLD_S, JobClass
from rlsched.sim.traces.swf import SwfFormatError, read_swf
from rlsched.sim.workload import Workload

#: Columns of ``NAME.jobs.csv``, in order.
SIDECAR_COLUMNS = (
    "swf_job",
    "slurm_job_id",
    "raw_id",
    "user",
    "group",
    "account",
    "vo",
    "partition",
    "qos",
    "job_class",
    "cpus",
    "req_cpus",
    "nodes",
    "time_limit_s",
    "state",
    "submit_epoch",
    "eligible_epoch",
    "start_epoch",
    "end_epoch",
)
#: ``format`` of ``NAME.meta.json``.
META_FORMAT = "rlsched-history-trace/1"
#: ``job_class`` values of the sidecar.
CLASS_NAMES = {"interactive": int(JobClass.INTERACTIVE), "batch": int(JobClass.BATCH)}


def sidecar_paths(swf_path: str | os.PathLike[str]) -> tuple[Path, Path]:
    """``NAME.swf`` (or ``NAME.swf.gz``) → (``NAME.jobs.csv``, ``NAME.meta.json``) in the same folder."""
    path = Path(swf_path)
    stem = path.name
    for suffix in (".swf.gz", ".swf", ".gz"):
        if stem.endswith(suffix):
            stem = stem[: -len(suffix)]
            break
    return path.with_name(f"{stem}.jobs.csv"), path.with_name(f"{stem}.meta.json")


def _read_meta(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SwfFormatError(f"{path}: not a readable meta file: {str(exc)[:120]}") from None
    if not isinstance(meta, dict):
        raise SwfFormatError(f"{path}: not a JSON object")
    return meta


def read_sidecar(csv_path: Path) -> tuple[dict[int, tuple[str, int]], list[str]]:
    """SWF job number → (VO name, class) from ``NAME.jobs.csv``, and the VO names in order of appearance.

    A bad row is a :class:`SwfFormatError` naming the file and the line.
    """
    rows: dict[int, tuple[str, int]] = {}
    seen_vos: dict[str, None] = {}
    with csv_path.open(encoding="utf-8", newline="") as handle:
        reader = csv.reader(handle)
        header = next(reader, None)
        if header is None:
            raise SwfFormatError(f"{csv_path}:1: empty sidecar (no header line)")
        try:
            i_job, i_vo, i_class = (header.index(name) for name in ("swf_job", "vo", "job_class"))
        except ValueError:
            raise SwfFormatError(
                f"{csv_path}:1: the header lacks swf_job, vo or job_class: {','.join(header)[:120]}"
            ) from None
        width = len(header)
        for row in reader:
            line = reader.line_num
            if len(row) != width:
                raise SwfFormatError(f"{csv_path}:{line}: {len(row)} fields, the header has {width}")
            job_text, vo, cls_name = row[i_job], row[i_vo], row[i_class]
            if not job_text.isdecimal():
                raise SwfFormatError(f"{csv_path}:{line}: swf_job is not a job number: {job_text[:40]!r}")
            cls = CLASS_NAMES.get(cls_name)
            if cls is None:
                raise SwfFormatError(
                    f"{csv_path}:{line}: job_class must be interactive or batch, got {cls_name[:40]!r}"
                )
            job = int(job_text)
            if job in rows:
                raise SwfFormatError(f"{csv_path}:{line}: SWF job {job} appears twice")
            rows[job] = (vo, cls)
            seen_vos.setdefault(vo, None)
    return rows, list(seen_vos)


def read_trace(
    path: str | os.PathLike[str],
    *,
    name: str | None = None,
    max_procs: int | None = None,
    interactive_threshold_s: float = INTERACTIVE_THRESHOLD_S,
) -> Workload:
    """Read an SWF trace and, when ``NAME.jobs.csv`` is beside it, its jobs' VOs and classes from there.

    With a sidecar: ``vo_names`` is the meta file's ``vos`` (the daemon config's list, in its order) or the
    sidecar's VOs in order of appearance; ``vo`` and ``job_class`` come from the sidecar rows;
    ``vo_shares`` from the meta file when it has one per VO; ``header`` gains the meta file's ``source``;
    the executable ids (job names) are the policies' to read (:attr:`Workload.programs_known`).  Every job
    the SWF keeps must have its row (a sidecar of another trace is refused in one line).
    Without one: :func:`~rlsched.sim.traces.swf.read_swf` (class by runtime, VO by SWF group).
    """
    workload = read_swf(path, name=name, max_procs=max_procs, interactive_threshold_s=interactive_threshold_s)
    csv_path, meta_path = sidecar_paths(path)
    if not csv_path.is_file():
        return workload
    meta = _read_meta(meta_path)
    rows, seen_vos = read_sidecar(csv_path)
    names = meta.get("vos")
    vo_names: list[str] = (
        list(names) if isinstance(names, list) and all(isinstance(v, str) for v in names) else seen_vos
    )
    index = {vo: i for i, vo in enumerate(vo_names)}
    for name_seen in seen_vos:
        if name_seen not in index:
            raise SwfFormatError(f"{csv_path}: VO {name_seen!r} is not in the vos of {meta_path.name}")
    n = len(workload)
    vo_index = np.empty(n, dtype=np.int64)
    job_class = np.empty(n, dtype=np.int64)
    for k, job in enumerate(workload.job_id.tolist()):
        row = rows.get(job)
        if row is None:
            raise SwfFormatError(
                f"{csv_path}: no row for SWF job {job} of {Path(path).name} (a sidecar of another trace?)"
            )
        vo_index[k] = index[row[0]]
        job_class[k] = row[1]
    shares = meta.get("vo_shares")
    vo_shares = None
    if (
        isinstance(shares, list)
        and len(shares) == len(vo_names)
        and all(isinstance(s, int | float) and not isinstance(s, bool) and math.isfinite(s) and s >= 0 for s in shares)
    ):
        vo_shares = tuple(float(s) for s in shares)
    header = dict(workload.header)
    if isinstance(meta.get("source"), str):
        header["rlsched_source"] = meta["source"]
    rule = meta.get("class_rule")
    return replace(
        workload,
        vo=vo_index,
        job_class=job_class,
        vo_names=tuple(vo_names),
        vo_shares=vo_shares,
        header=header,
        id_names=_id_names(meta),
        class_rule=rule if isinstance(rule, dict) else None,
        # The import writes each job name's id as the daemon computes it live (rlsched.core.view.executable_id),
        # so the replayed policies know what the deployed one will (-1 where the source had no name).
        programs_known=True,
    )


#: The meta file's ``swf_ids`` tables → :attr:`Workload.id_names` columns.
_ID_TABLES = {"user": "user", "queue (QOS)": "queue", "partition": "partition"}


def _id_names(meta: dict[str, Any]) -> dict[str, dict[int, str]]:
    """id → name per SWF column from the meta file's ``swf_ids`` (name → id); malformed tables are ignored."""
    tables = meta.get("swf_ids")
    out: dict[str, dict[int, str]] = {}
    if not isinstance(tables, dict):
        return out
    for key, column in _ID_TABLES.items():
        table = tables.get(key)
        if isinstance(table, dict):
            out[column] = {i: name for name, i in table.items() if isinstance(i, int) and not isinstance(i, bool)}
    return out
