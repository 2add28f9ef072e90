"""The PBS completion feed: jobs finished since the previous view, each delivered once (docs/pbs.md).

Two sources:

- ``history``: finished jobs stay in ``qstat -x`` (state F, subjobs X) for ``job_history_duration`` once the
  server has ``job_history_enable = True``.  The view's own ``qstat -x -f -t -F json`` is read, so this
  costs no extra command.
- ``accounting``: the server's accounting log (``server_priv/accounting/YYYYMMDD``), its ``E`` records read
  from where the previous read stopped, on to the next day's file.  The daemon must see that folder as
  a local file system (it runs on the server host, or the folder is shared).

The position is part of the backend's record, so a restarted daemon neither repeats nor loses completions
(within the history's duration).  A fresh feed starts at "now": what ended before rlsched started is not
replayed as rewards.
"""

from __future__ import annotations

import logging
import os
import re
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, ClassVar

from rlsched.backends.common.completions import CompletionFeedState
from rlsched.backends.common.runner import CommandExecutor, decode_output
from rlsched.backends.pbs.errors import PBSError
from rlsched.backends.pbs.parsers import ACCOUNTING, PBSJob, read_accounting

log = logging.getLogger(__name__)

_DAY_FILE = re.compile(r"^\d{8}$")
#: How long the accounting feed remembers what it delivered (a record read twice after a rotation).
ACCOUNTING_MEMORY_S = 3600.0


class CompletionFeed(CompletionFeedState):
    """Delivers each finished job once (``history`` or ``accounting``)."""

    sources = ("history", "accounting")
    #: accounting: the day file and the byte offset the previous read stopped at.
    position_fields: ClassVar[dict[str, type]] = {"file": str, "offset": int}
    memory_s = ACCOUNTING_MEMORY_S
    file: str | None
    offset: int | None

    def __init__(
        self,
        source: str,
        executor: CommandExecutor,
        accounting_dir: str | None = None,
        clock: Callable[[], float] = time.time,
        state: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(source, executor, clock, state)
        self.accounting_dir = accounting_dir

    def poll(self, jobs: Iterable[PBSJob]) -> list[PBSJob]:
        """Jobs finished since the previous poll; ``jobs`` is the view's ``qstat -x`` (history source)."""
        if self.source == "history":
            return self._from_history(jobs)
        return self._from_accounting()

    def _from_history(self, jobs: Iterable[PBSJob]) -> list[PBSJob]:
        # Whole seconds: a job ended in the second the feed began may be an earlier one's; it is skipped.
        done = [j for j in jobs if j.ran and j.end_s >= int(self.since_s) + 1]
        fresh = [j for j in done if (j.job_id, j.end_s) not in self.seen]
        # A job gone from the history cannot come back: forget it, memory stays bounded.
        self.seen = {(j.job_id, j.end_s) for j in done}
        return fresh

    # -- accounting --------------------------------------------------------------------------------------
    def _day_files(self) -> list[str]:
        assert self.accounting_dir is not None
        try:
            return sorted(n for n in os.listdir(self.accounting_dir) if _DAY_FILE.match(n))
        except FileNotFoundError:
            return []
        except OSError as exc:
            self.executor.count("accounting_read")
            raise PBSError(f"{ACCOUNTING}: cannot list {self.accounting_dir}: {exc}") from exc

    def _read_from(self, name: str, offset: int) -> tuple[list[str], int]:
        """Complete lines of ``name`` from ``offset``; the offset after the last complete line."""
        assert self.accounting_dir is not None
        path = Path(self.accounting_dir) / name
        try:
            with path.open("rb") as fh:
                size = os.fstat(fh.fileno()).st_size
                if size < offset:
                    offset = 0  # truncated: read it again (delivered jobs are deduplicated)
                fh.seek(offset)
                data = fh.read()
        except FileNotFoundError:
            return [], offset
        except OSError as exc:
            self.executor.count("accounting_read")
            raise PBSError(f"{ACCOUNTING}: cannot read {path}: {exc}") from exc
        end = data.rfind(b"\n") + 1
        text, bad = decode_output(data[:end])
        if bad:
            self.executor.count("decode_replacement", bad)
        return text.split("\n")[:-1], offset + end

    def _from_accounting(self) -> list[PBSJob]:
        files = self._day_files()
        if not files:
            return []
        if self.file is None or self.offset is None:
            # First read: start at the end of the newest file (no replay of history).
            self.file = files[-1]
            self.offset = (Path(self.accounting_dir or ".") / self.file).stat().st_size
            return []
        out: list[PBSJob] = []
        todo = [self.file] + [name for name in files if name > self.file]
        for k, name in enumerate(todo):
            lines, offset = self._read_from(name, self.offset if k == 0 else 0)
            out.extend(self._ended(lines, name))
            self.file, self.offset = name, offset
        return self._deliver_once(out)

    def _ended(self, lines: list[str], name: str) -> list[PBSJob]:
        def bad(where: str, reason: str) -> None:
            self.executor.count("parse_error")
            log.warning("%s: %s: %s", ACCOUNTING, where, reason)

        return [job for _, job in read_accounting(lines, name, bad) if job.ran]
