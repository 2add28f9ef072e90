"""What every backend's completion feed shares: where it is (its source, since when, what it has delivered)
as the part of the undo record that lets a restarted daemon neither repeat nor lose completions, and the
delivery of each finished job once.

A feed derives from :class:`CompletionFeedState` and declares the extra position fields its sources keep
(:attr:`~CompletionFeedState.position_fields`: a file's name, a byte offset, an inode) with their types.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, Protocol, TypeVar

from rlsched.backends.common.runner import CommandExecutor

log = logging.getLogger(__name__)


class FinishedJob(Protocol):
    @property
    def job_id(self) -> int: ...

    @property
    def end_s(self) -> float: ...


FinishedT = TypeVar("FinishedT", bound=FinishedJob)


class CompletionFeedState:
    """A completion feed's position and its memory of what it delivered (see the module docstring).

    ``state`` is what :meth:`state` returned in a previous run; it is used only when it was written for the
    same source (positions of another source mean nothing here) and ignored, with a warning, when bad.
    """

    #: The sources the feed can read, and those whose position the record keeps beside ``since_s``.
    sources: ClassVar[tuple[str, ...]] = ()
    position_fields: ClassVar[dict[str, type]] = {}
    #: How long :meth:`_deliver_once` remembers a delivered (job, end) pair.
    memory_s: ClassVar[float] = 3600.0

    def __init__(
        self,
        source: str,
        executor: CommandExecutor,
        clock: Callable[[], float] = time.time,
        state: Mapping[str, Any] | None = None,
    ) -> None:
        if source not in self.sources:
            names = f"{', '.join(self.sources[:-1])} or {self.sources[-1]}"
            raise ValueError(f"completion source must be {names}, got {source!r}")
        self.source = source
        self.executor = executor
        self.clock = clock
        self.since_s = clock()
        # (job id, end time): a requeued job that runs twice is two completions.
        self.seen: set[tuple[int, float]] = set()
        for name in self.position_fields:  # declared (typed) by the subclass
            setattr(self, name, None)
        if state:
            self._load(state)

    def state(self) -> dict[str, Any]:
        position = {name: getattr(self, name) for name in self.position_fields}
        return {
            "source": self.source,
            "since_s": self.since_s,
            **position,
            "seen": sorted([job_id, end] for job_id, end in self.seen),
        }

    def _load(self, state: Mapping[str, Any]) -> None:
        if state.get("source") != self.source:
            return
        try:
            since_s = float(state["since_s"])
            position = {
                name: None if state.get(name) is None else kind(state[name])
                for name, kind in self.position_fields.items()
            }
            seen = {(int(job_id), float(end)) for job_id, end in state.get("seen", [])}
        except (KeyError, TypeError, ValueError) as exc:
            log.warning("completion feed: ignoring a bad saved position (%s)", exc)
            return
        self.since_s, self.seen = since_s, seen
        for name, value in position.items():
            setattr(self, name, value)

    def _deliver_once(self, jobs: Sequence[FinishedT]) -> list[FinishedT]:
        """The jobs not delivered before (each (job, end) once); the memory keeps :attr:`memory_s`."""
        fresh = []
        for job in jobs:
            key = (job.job_id, job.end_s)
            if key not in self.seen:
                self.seen.add(key)
                fresh.append(job)
        horizon = self.clock() - self.memory_s
        self.seen = {key for key in self.seen if key[1] >= horizon}
        return fresh
