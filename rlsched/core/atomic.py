"""Atomic file writes: nothing rlsched learns or records is lost to a crash (docs/design.md, Reliability).

Write a temporary file in the target's folder, fsync it, rename it over the target, fsync the
folder.  A kill -9 at any instant leaves either the previous version or the new one, never a
torn file.  The core's model checkpoints, the daemon's counters, heartbeat and runtime predictor state,
and the Slurm backend's record of what it changed all go through :func:`atomic_write`.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

#: Files other programs read (the heartbeat, the lease permit, the undo record: read by the hooks and the
#: watchdog, which may run as a non-root SlurmUser) are world-readable; they hold no secret.
PUBLIC = 0o644


def atomic_write(path: str | os.PathLike[str], write: Callable[[IO[bytes]], object], mode: int = 0o600) -> None:
    """Replace ``path`` with what ``write(handle)`` writes to a binary handle, atomically; the file gets
    ``mode`` (owner-only by default, :data:`PUBLIC` for what other programs read)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        if mode != 0o600:  # mkstemp's mode
            os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    dir_fd = os.open(target.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def write_json_atomic(path: str | os.PathLike[str], data: Any, mode: int = 0o600) -> None:
    """Write ``data`` as JSON (sorted keys) to ``path``, atomically, with ``mode``."""
    encoded = json.dumps(data, sort_keys=True).encode()
    atomic_write(path, lambda handle: handle.write(encoded), mode)
