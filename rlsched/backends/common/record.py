"""The undo record a backend keeps on disk: what it changed in the batch system (priorities, holds, drains),
written atomically *before* each change so that a crash never leaves a change nobody can undo.

World-readable (0644) and free of secrets: the gate watchdog, which may run as a non-root SlurmUser, reads
the holds in it.  When the state dir is read-only, full or gone, :meth:`UndoRecordWriter.try_save` says so
(counted as ``state_write_failed``, logged once until writes work again) and the backend makes no new change
that it could not record; views and releases go on (issue 16).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from rlsched.backends.common.runner import CommandExecutor
from rlsched.core.atomic import PUBLIC, write_json_atomic

log = logging.getLogger(__name__)


class UndoRecordWriter:
    """Writes a backend's undo record to its ``state_file`` (None: kept in memory only), reporting failures
    to the executor's error counters.  The path is given at each write: it is the backend's config's."""

    def __init__(self, executor: CommandExecutor) -> None:
        self.executor = executor
        self.failing = False
        self.path: str | None = None

    def save(self, path: str | None, record: dict[str, Any]) -> None:
        """Write the record atomically; an ``OSError`` propagates (undo and shutdown paths want to know)."""
        self.path = path
        if path:
            write_json_atomic(Path(path), record, mode=PUBLIC)

    def try_save(self, path: str | None, record: dict[str, Any]) -> bool:
        """Write the record; False (counted, logged once until it works again) when it cannot be written."""
        try:
            self.save(path, record)
        except OSError as exc:
            self.executor.count("state_write_failed")
            if not self.failing:
                log.error("undo record %s cannot be written (no new hold or boost until it can): %s",
                          self.path, exc)
            self.failing = True
            return False
        if self.failing:
            log.warning("undo record %s: writes work again", self.path)
        self.failing = False
        return True
