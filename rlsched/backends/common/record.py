"""The undo record a backend keeps on disk: what it changed in the batch system (priorities, holds, drains),
written atomically *before* each change so that a crash never leaves a change nobody can undo.

:class:`UndoRecord` is its content (each backend declares its own fields in a subclass),
:class:`UndoRecordWriter` writes it.

World-readable (0644) and free of secrets: the gate watchdog, which may run as a non-root SlurmUser, reads
the holds in it.  When the state dir is read-only, full or gone, :meth:`UndoRecordWriter.try_save` says so
(counted as ``state_write_failed``, logged once until writes work again) and the backend makes no new change
that it could not record; views and releases go on (issue 16).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, ClassVar, Self

import msgspec

from rlsched.backends.common.runner import CommandExecutor
from rlsched.core.atomic import PUBLIC, write_json_atomic
from rlsched.core.live import CHANGE_KINDS
from rlsched.errors import RlschedError

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
                log.error("undo record %s cannot be written (no new hold or boost until it can): %s", self.path, exc)
            self.failing = True
            return False
        if self.failing:
            log.warning("undo record %s: writes work again", self.path)
        self.failing = False
        return True


class UndoRecordError(RlschedError, ValueError):
    """An undo record on disk that cannot be read (the message names the file)."""


@dataclass
class UndoRecord:
    """The undo record's content: what a backend changed, as it is written to ``state_file``.

    The fields every backend has are here; a backend declares its own as a dataclass that derives from this
    one (Slurm: the original Nice of each boosted job, the nodes it drained).  On disk it is a JSON object with
    the field names as keys (sets as sorted lists, integer keys as strings) and a ``version``; a field absent
    from the file takes its default, so a record written by an older release still loads.
    """

    #: How the record names its batch system in messages (``"Slurm"``).
    batch_system: ClassVar[str] = "batch-system"
    version: ClassVar[int] = 1

    #: Jobs rlsched held (the gate watchdog and the next start release them).
    held_by_rlsched: set[int] = field(default_factory=set)
    #: The completion feed's position (:meth:`rlsched.backends.common.completions.CompletionFeedState.state`).
    completion_feed: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"version": self.version}
        for item in fields(self):
            value = getattr(self, item.name)
            if isinstance(value, set):
                value = sorted(value)
            elif isinstance(value, dict) and item.name != "completion_feed":
                value = {str(key): value[key] for key in sorted(value)}
            out[item.name] = value
        return out

    @classmethod
    def load(cls, path: str | None) -> Self:
        """The record in ``path`` (an empty one when there is none); :class:`UndoRecordError` when the file
        cannot be read or its fields have the wrong types."""
        if not path or not Path(path).exists():
            return cls()
        try:
            data = json.loads(Path(path).read_text())
            if isinstance(data, dict) and not isinstance(data.get("completion_feed"), dict):
                data["completion_feed"] = None  # a bad feed position only costs a fresh start
            return msgspec.convert(data, cls, strict=False)
        except (OSError, ValueError, msgspec.ValidationError) as exc:
            message = " ".join(str(exc).split())
            raise UndoRecordError(f"{path}: unreadable rlsched {cls.batch_system} record: {message}") from None

    def changes(self) -> dict[str, int]:
        """How many changes of each kind (:data:`rlsched.core.live.CHANGE_KINDS`) the record lists; a backend
        whose record has boosts or drains counts them too."""
        return dict(zip(CHANGE_KINDS, (0, len(self.held_by_rlsched), 0), strict=True))
