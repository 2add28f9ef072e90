"""Logging a fault that persists: once when it starts, then a reminder at a bounded rate, and once when it ends.

A daemon meets the same fault every cycle while it lasts (a checkpoint that cannot be written, a queued job
whose name is not UTF-8): logging it every cycle buried everything else (issue 24: 18 errors and 25
tracebacks in 20 s).  :class:`FaultLog` logs the first occurrence as it is (with its traceback when asked),
then at most one reminder every ``remind_every_s`` saying how often it recurred, and the recovery once.
Counting is the metrics' job, not this one's: callers count every occurrence as before.

Used by the daemon loop (its phases, the decision log), the live backends' command runner (invalid UTF-8
in every answer) and the Slurm backend's view (a job skipped by every view); it depends on nothing else of
rlsched.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

#: How often a fault that goes on is logged again (a reminder, without traceback).
DEFAULT_REMIND_EVERY_S = 600.0
#: The most faults remembered at once (each key is one; the oldest go first): keys may name jobs.
MAX_FAULTS = 1024


@dataclass
class _Fault:
    since: float
    logged: float
    seen: float
    repeats: int = 0  # occurrences since the last line logged


class FaultLog:
    """Rate-limited logging of persistent faults, by key (see the module docstring)."""

    def __init__(
        self,
        logger: logging.Logger,
        remind_every_s: float = DEFAULT_REMIND_EVERY_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.logger = logger
        self.remind_every_s = remind_every_s
        self.clock = clock
        self._faults: dict[str, _Fault] = {}

    def failed(self, key: str, level: int, message: str, *args: object, exc_info: bool = False) -> bool:
        """Log ``message % args`` if the fault ``key`` is new, or as a reminder when ``remind_every_s`` has
        passed since it was last logged; True when a line was logged.  A traceback goes with the first line
        only."""
        now = self.clock()
        fault = self._faults.get(key)
        # Not seen for a whole reminder period: it had ended (no one said so), this is a new one.
        if fault is None or now - fault.seen > self.remind_every_s:
            self._faults.pop(key, None)
            if len(self._faults) >= MAX_FAULTS:
                del self._faults[next(iter(self._faults))]
            self._faults[key] = _Fault(since=now, logged=now, seen=now)
            self.logger.log(level, message, *args, exc_info=exc_info)
            return True
        fault.seen = now
        fault.repeats += 1
        if now - fault.logged < self.remind_every_s:
            return False
        self.logger.log(
            level,
            message + " (still so: %d more times in the last %.0f s, first %.0f s ago)",
            *args,
            fault.repeats,
            now - fault.logged,
            now - fault.since,
        )
        fault.logged = now
        fault.repeats = 0
        return True

    def recovered(self, key: str, message: str, *args: object, level: int = logging.WARNING) -> bool:
        """Log ``message % args`` once if the fault ``key`` was going on; it is then forgotten."""
        fault = self._faults.pop(key, None)
        if fault is None:
            return False
        self.logger.log(level, message + " (after %.0f s)", *args, self.clock() - fault.since)
        return True
