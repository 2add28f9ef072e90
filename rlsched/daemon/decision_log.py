"""The decision log: one JSON line per daemon cycle with the agent's ranking (``[shadow]``, docs/daemon.md).

``rlsched report shadow`` (:mod:`rlsched.report.shadow`) joins it with the start times Slurm recorded.

- **Record** (:func:`decision_record`, version :data:`RECORD_VERSION`): ``time`` (the view's time, epoch
  seconds), ``polled`` (when the backend began reading the batch system for the view: a job ranked pending
  had not started then; absent where the view has no such time), ``mode``, ``policy`` and ``model_sha256``,
  ``vos``, ``pending`` (how many jobs were pending), ``idle_cores``/``total_cores``, ``state`` (the P-grid
  §3.2 state vector by name), ``ranked`` (best first, at most ``max_jobs`` rows of ``[job_id, score, cores,
  vo index, class]``, score null when not finite) and ``would`` (``top``: the first job of the boost order
  the agent chose this cycle — a learning agent may explore another than its best-scored — else the first
  ranked job; ``release``/``hold``: what the agent decided this cycle — what gate mode would do).
- **Crash-safe appends**: each record is one ``write`` of one line on an ``O_APPEND`` descriptor, then
  ``fsync``.  A kill in the middle of a write can leave a torn last line; before the next append a missing
  final newline is written first, so the torn line stays a line of its own, and the reader skips and
  counts it (:class:`LogRead`).
- **Bounded, rotated**: when the next line would take the file past ``max_bytes``, ``decisions.jsonl.N`` are
  shifted up by one (``os.replace``, atomic each), the oldest beyond ``keep`` is removed, the live file
  becomes ``.1`` and a new one starts; the directory is fsynced.  At most ``(keep + 1) × max_bytes`` on disk.
- A write that fails (disk full, unwritable) raises :class:`OSError` to the daemon, which logs and counts it
  (``rlsched_decision_log_lines_total{outcome="failed"}``) and goes on scheduling.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlsched.core.view import ClusterView, Decisions, FloatArray, IntArray

RECORD_VERSION = 1
DEFAULT_MAX_BYTES = 64 * 1024 * 1024
DEFAULT_KEEP = 4
DEFAULT_MAX_JOBS = 1000
DEFAULT_LOG_NAME = "decisions.jsonl"


@dataclass(frozen=True)
class DecisionLogConfig:
    """``[shadow]``: where and how much of the decision log to keep (see the module docstring).

    - ``decision_log``: the file (default ``<state dir>/decisions.jsonl``; ``"off"`` turns the log off);
    - ``max_bytes``: the size at which the file is rotated; ``keep``: how many rotated files stay;
    - ``max_jobs``: how many of the ranked pending jobs a record lists (the best ones);
    - ``modes``: the daemon modes that log (default shadow only; boost and gate may log too).
    """

    decision_log: str | None = None
    enabled: bool = True
    max_bytes: int = DEFAULT_MAX_BYTES
    keep: int = DEFAULT_KEEP
    max_jobs: int = DEFAULT_MAX_JOBS
    modes: tuple[str, ...] = ("shadow",)

    def path(self, state_dir: str | Path) -> Path:
        return Path(self.decision_log) if self.decision_log else Path(state_dir) / DEFAULT_LOG_NAME


def rotated_paths(path: Path, keep: int) -> list[Path]:
    """The rotated files of ``path``, oldest first (``.keep`` … ``.1``), whether they exist or not."""
    return [path.with_name(f"{path.name}.{k}") for k in range(keep, 0, -1)]


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class DecisionLog:
    """Appends records to the log file, rotating it (see the module docstring)."""

    def __init__(self, path: Path, max_bytes: int = DEFAULT_MAX_BYTES, keep: int = DEFAULT_KEEP) -> None:
        if max_bytes < 1 or keep < 0:
            raise ValueError("decision log: max_bytes must be >= 1 and keep >= 0")
        self.path = Path(path)
        self.max_bytes = max_bytes
        self.keep = keep
        self.rotations = 0

    def append(self, record: Mapping[str, Any]) -> int:
        """Write ``record`` as one line; returns the bytes written.  Raises :class:`OSError` on failure."""
        line = (json.dumps(record, separators=(",", ":"), allow_nan=False) + "\n").encode()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        size = self._size()
        if size > 0 and size + len(line) > self.max_bytes:
            self.rotate()
            size = 0
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            if size > 0 and not self._ends_with_newline(fd, size):
                line = b"\n" + line  # isolate a torn last line left by a crash
            written = os.write(fd, line)
            if written != len(line):  # a short write (disk full): the rest would tear the line
                raise OSError(f"short write to {self.path}: {written} of {len(line)} bytes")
            os.fsync(fd)
        finally:
            os.close(fd)
        if size == 0:
            _fsync_dir(self.path.parent)  # a new file: make its name durable too
        return len(line)

    def _size(self) -> int:
        try:
            return self.path.stat().st_size
        except FileNotFoundError:
            return 0

    @staticmethod
    def _ends_with_newline(fd: int, size: int) -> bool:
        return os.pread(fd, 1, size - 1) == b"\n"

    def rotate(self) -> None:
        """Shift ``.k`` to ``.k+1`` (dropping the oldest), the live file to ``.1``; each step atomic."""
        older = rotated_paths(self.path, self.keep)  # oldest first
        if self.keep == 0:
            self.path.unlink(missing_ok=True)
        else:
            older[0].unlink(missing_ok=True)
            for src, dst in zip(older[1:], older[:-1], strict=True):
                if src.exists():
                    os.replace(src, dst)
            if self.path.exists():
                os.replace(self.path, older[-1])
        _fsync_dir(self.path.parent)
        self.rotations += 1


# ---------------------------------------------------------------------------------------------- records
def _score(x: float) -> float | None:
    return round(x, 6) if math.isfinite(x) else None


def decision_record(
    view: ClusterView,
    order: IntArray,
    scores: FloatArray,
    state: Sequence[float],
    state_names: Sequence[str],
    decisions: Decisions | None,
    mode: str,
    policy: Mapping[str, Any],
    max_jobs: int,
) -> dict[str, Any]:
    """One line of the log (see the module docstring) from a view and the agent's ranking of it."""
    pend = view.pending
    top = order[:max_jobs]
    ranked = [
        [int(pend.job_id[i]), _score(float(scores[i])), int(pend.cores[i]), int(pend.vo[i]), int(pend.job_class[i])]
        for i in top.tolist()
    ]
    d = decisions if decisions is not None else Decisions()
    record: dict[str, Any] = {
        "v": RECORD_VERSION,
        "time": float(view.time_s),
        "mode": mode,
        "policy": policy.get("policy"),
        "model_sha256": policy.get("model_sha256"),
        "vos": list(view.vos),
        "pending": len(pend),
        "idle_cores": int(view.idle_cores),
        "total_cores": int(view.total_cores),
        "state": {name: _score(float(v)) for name, v in zip(state_names, state, strict=True)},
        "ranked": ranked,
        # The top of the order the agent chose to apply where it chose one (boost): a learning agent explores
        # its top pick now and then, and the log says what Slurm was (or would have been) told.
        "would": {
            "top": int(d.boost[0]) if d.boost else (ranked[0][0] if ranked else None),
            "release": [int(j) for j in d.release],
            "hold": [int(j) for j in d.hold],
        },
    }
    if view.polled_s is not None:
        record["polled"] = float(view.polled_s)
    return record


# ---------------------------------------------------------------------------------------------- reading
@dataclass
class LogRead:
    """Records read from a log and its rotated files, and what could not be read."""

    records: list[dict[str, Any]] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)
    #: Lines that are not a whole record (torn by a crash, or damaged): skipped.
    skipped: int = 0
    #: Where the first skipped line was (``file:line``), for the report.
    first_skipped: str | None = None


def log_files(path: Path, keep: int) -> list[Path]:
    """The existing files of the log, oldest first (rotated ones, then the live one)."""
    return [p for p in [*rotated_paths(path, keep), path] if p.is_file()]


def _lines(path: Path) -> Iterator[tuple[int, bytes]]:
    with open(path, "rb") as fh:
        yield from enumerate(fh, 1)


def read_decision_log(
    path: Path, keep: int = DEFAULT_KEEP, since_s: float = -math.inf, until_s: float = math.inf
) -> LogRead:
    """Every record with ``since_s <= time < until_s``, oldest first; torn or damaged lines are counted."""
    out = LogRead(files=log_files(path, keep))
    for file in out.files:
        for lineno, raw in _lines(file):
            if not raw.strip():
                continue
            try:
                record = json.loads(raw)
                ok = (
                    isinstance(record, dict)
                    and record.get("v") == RECORD_VERSION
                    and isinstance(record.get("time"), int | float)
                    and isinstance(record.get("ranked"), list)
                )
            except ValueError:
                ok = False
            if not ok:
                out.skipped += 1
                if out.first_skipped is None:
                    out.first_skipped = f"{file}:{lineno}"
                continue
            if since_s <= record["time"] < until_s:
                out.records.append(record)
    out.records.sort(key=lambda r: float(r["time"]))
    return out
