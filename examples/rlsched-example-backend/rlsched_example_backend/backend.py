"""The ``toyq`` backend: a toy batch system driven through its command line, built on rlsched's shared
backend base (:class:`rlsched.backends.common.base.CLIBackend`), as a site would write one for its own.

``toyq jobs --json`` prints ``{"time": T, "cores": N, "jobs": [{"id", "state", "cores", "limit_s",
"priority", "account", "queue", "user", "submit", "start", "end"}]}`` (``state``: queued, held, running,
done); ``toyq hold ID``, ``toyq release ID`` and ``toyq priority ID N`` act on one job and say
``unknown job ID`` (exit 1) for a job that is gone.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from rlsched.backends.common.base import CLIBackend, record_in_state_dir
from rlsched.backends.common.completions import CompletionFeedState
from rlsched.backends.common.config import BackendConfig
from rlsched.backends.common.fields import JsonFields, load_json_object
from rlsched.backends.common.record import UndoRecord
from rlsched.backends.common.runner import (
    BackendCommandError,
    BackendParseError,
    CommandExecutor,
    CommandRunner,
    RetryPolicy,
    SubprocessRunner,
)
from rlsched.config_schema import BACKEND_COMMON, STRING_SET, Key, Section
from rlsched.core.live import CHANGE_KINDS, QueueKey
from rlsched.core.view import ClusterView, FinishedJobs, JobClass, PendingJobs, RunningJobs, user_id

JOBS_JSON = "toyq jobs --json"


class ToyqParseError(BackendParseError):
    """``toyq jobs --json`` printed something else than the document above."""


class ToyqCommandError(BackendCommandError):
    """A toyq command that failed."""


#: The ``[backend]`` keys of ``kind = "toyq"``: every kind's (rlsched's schema) and the gated queues.
TOYQ = BACKEND_COMMON.extended(
    '`kind = "toyq"` (the example backend)',
    Key("queues", STRING_SET, frozenset(), "the queues rlsched schedules (gate mode holds and releases their jobs)"),
)


@dataclass(frozen=True)
class ToyqConfig(BackendConfig):
    """The ``[backend]`` table of ``kind = "toyq"``: rlsched's shared backend keys (read, checked and turned into
    one-line errors by :meth:`BackendConfig.from_table`) and the gated queues."""

    SECTION: ClassVar[Section] = TOYQ

    #: The gated queues (gate mode holds and releases their jobs).
    queues: frozenset[str] = frozenset()
    kind: str = field(default="toyq", init=False, repr=False)

    def gate_problem(self) -> tuple[str, str] | None:
        return None if self.queues else ("queues", "gate mode needs the gated queues")


@dataclass(frozen=True)
class ToyqJob:
    job_id: int
    state: str
    cores: int
    limit_s: float
    priority: int
    account: str
    queue: str
    user: str
    submit_s: float
    start_s: float
    end_s: float

    @property
    def pending(self) -> bool:
        return self.state in ("queued", "held")

    @property
    def held(self) -> bool:
        return self.state == "held"

    @property
    def active(self) -> bool:
        return self.state == "running"


def _time(value: int | None) -> float:
    return math.nan if value is None else float(value)


def parse_jobs(text: str | bytes) -> tuple[float, int, list[ToyqJob]]:
    """(time, total cores, jobs) of ``toyq jobs --json``."""
    doc = JsonFields(load_json_object(text, JOBS_JSON, ToyqParseError), JOBS_JSON, "", ToyqParseError)
    raw_jobs = doc.obj.get("jobs")
    if not isinstance(raw_jobs, list):
        raise doc.error("jobs", "expected a list")
    jobs = []
    for i, raw in enumerate(raw_jobs):
        f = JsonFields(raw, JOBS_JSON, f"jobs[{i}]", ToyqParseError)
        jobs.append(
            ToyqJob(
                f.req_int("id"),
                f.text("state"),
                f.req_int("cores"),
                float(f.req_int("limit_s")),
                f.opt_int("priority", 0) or 0,
                f.text("account", ""),
                f.text("queue", ""),
                f.text("user", ""),
                float(f.req_int("submit")),
                _time(f.opt_int("start")),
                _time(f.opt_int("end")),
            )
        )
    return float(doc.req_int("time")), doc.req_int("cores"), jobs


@dataclass
class ToyqUndoRecord(UndoRecord):
    batch_system: ClassVar[str] = "toyq"
    original_priority: dict[int, int] = field(default_factory=dict)
    applied_priority: dict[int, int] = field(default_factory=dict)

    def changes(self) -> dict[str, int]:
        return dict(zip(CHANGE_KINDS, (len(self.original_priority), len(self.held_by_rlsched), 0), strict=True))


class ToyqFeed(CompletionFeedState):
    """Jobs done since the feed began, each once (toyq keeps done jobs in its list)."""

    sources = ("jobs",)

    def poll(self, jobs: Sequence[ToyqJob]) -> list[ToyqJob]:
        return self._deliver_once([j for j in jobs if j.state == "done" and j.end_s >= self.since_s])


class ToyqBackend(CLIBackend[ToyqJob, ToyqUndoRecord]):
    vanished_messages = ("unknown job", "not pending")
    held_fields: ClassVar[dict[str, Any]] = {"state": "held"}
    released_fields: ClassVar[dict[str, Any]] = {"state": "queued"}
    boost_field = "priority"
    config: ToyqConfig

    def __init__(
        self, config: ToyqConfig, runner: CommandRunner | None = None, clock: Callable[[], float] = time.time
    ) -> None:
        self.config = config
        self.executor = CommandExecutor(
            runner or SubprocessRunner(), config.timeout_s, RetryPolicy(attempts=2), error_class=ToyqCommandError
        )
        self.clock = clock
        self.actions: Counter[str] = Counter()
        self._jobs: dict[int, ToyqJob] = {}
        self._polled: list[ToyqJob] = []
        self._time_s = 0.0
        self._cores = 0
        self.vo_mapping = config.vo_mapping()
        self._open_record(ToyqUndoRecord)
        self._feed: ToyqFeed | None = None

    # -- hooks of CLIBackend
    def _replace_job(self, job: ToyqJob, changes: dict[str, Any]) -> ToyqJob:
        return ToyqJob(**{**job.__dict__, **changes})

    def _hold_argv(self, job_id: int) -> list[str]:
        return [self._cmd("toyq"), "hold", str(job_id)]

    def _release_argv(self, job_id: int) -> list[str]:
        return [self._cmd("toyq"), "release", str(job_id)]

    def _set_boost(self, job_id: int, value: int, kind: str) -> bool:
        return self._job_action(job_id, [self._cmd("toyq"), "priority", str(job_id), str(value)], kind)

    def _boost_record(self) -> tuple[dict[int, int], dict[int, int]]:
        return self.record.original_priority, self.record.applied_priority

    def boost(self, ranked_job_ids: Sequence[int]) -> None:
        """Priorities 1000, 999, … for the first ``max_boosted`` pending jobs of the ranking (recorded first,
        restored when they leave it: :meth:`CLIBackend._apply_boosts`)."""
        ranked = self._ranked_pending(ranked_job_ids)
        self._apply_boosts({job_id: 1000 - rank for rank, job_id in enumerate(ranked)})

    # -- the view
    def poll(self) -> tuple[list[ToyqJob], list[Any]]:
        self._time_s, self._cores, jobs = self.executor.run(
            [self._cmd("toyq"), "jobs", "--json"], lambda r: parse_jobs(r.stdout_bytes)
        )
        self._polled = jobs
        self._jobs = {job.job_id: job for job in jobs}
        return jobs, []

    def view(self) -> ClusterView:
        jobs, _ = self.poll()
        if self._feed is None:
            self._feed = ToyqFeed("jobs", self.executor, lambda: self._time_s, self.record.completion_feed)
        finished = self._feed.poll(jobs)
        self._try_save_record()
        pending = [j for j in jobs if j.pending]
        running = [j for j in jobs if j.active]

        def common(items: Sequence[ToyqJob]) -> dict[str, np.ndarray]:
            return {
                "job_id": np.array([j.job_id for j in items], dtype=np.int64),
                "vo": np.array([self.vo_mapping.index(j.account) for j in items], dtype=np.int64),
                "job_class": np.array(
                    [self.config.class_rule.classify("", j.queue, j.limit_s) for j in items], dtype=np.int64
                ),
                "cores": np.array([j.cores for j in items], dtype=np.int64),
                "submit_s": np.array([j.submit_s for j in items], dtype=np.float64),
            }

        busy = sum(j.cores for j in running)
        return ClusterView(
            time_s=self._time_s,
            total_cores=self._cores,
            idle_cores=max(self._cores - busy, 0),
            pending=PendingJobs(
                **common(pending),
                req_time_s=np.array([j.limit_s for j in pending]),
                oracle_run_s=np.full(len(pending), np.nan),
                held=np.array([j.held for j in pending], dtype=np.bool_),
                user=np.array([user_id(j.user) for j in pending], dtype=np.int64),
            ),
            running=RunningJobs(
                **common(running),
                req_time_s=np.array([j.limit_s for j in running]),
                start_s=np.array([j.start_s for j in running]),
                user=np.array([user_id(j.user) for j in running], dtype=np.int64),
            ),
            finished=FinishedJobs(
                **common(finished),
                start_s=np.array([j.start_s for j in finished]),
                end_s=np.array([j.end_s for j in finished]),
            ),
            vos=self.vo_mapping.names,
            vo_shares=self.vo_mapping.shares,
        )

    # -- the daemon's questions
    def queue_counts(self) -> dict[QueueKey, int]:
        counts: Counter[QueueKey] = Counter()
        for job in self._polled:
            if job.pending or job.active:
                state = "running" if job.active else "held" if job.held else "pending"
                job_class = JobClass(self.config.class_rule.classify("", job.queue, job.limit_s))
                counts[(job.queue, job.account, job_class.name.lower(), state)] += 1
        return dict(counts)

    def job_labels(self) -> dict[int, tuple[str, str]]:
        return {job.job_id: (job.queue, job.account) for job in self._polled}

    def release_gated(self) -> int:
        jobs, _ = self.poll()
        gated = [j.job_id for j in jobs if j.held and j.queue in self.config.queues]
        for job_id in gated:
            self.release(job_id)
        return len(gated)

    def heartbeat_fields(self) -> dict[str, object]:
        return {"batch_system": "toyq", "queues": sorted(self.config.queues), "undo_record": self.config.state_file}

    def describe(self) -> str:
        return f"toyq (undo record {self.config.state_file or 'memory only'})"

    def set_lease_cap(self, n: int) -> None:
        """toyq has no cloud nodes."""

    def undo(self) -> int:
        try:
            return self._undo_jobs()
        finally:
            self._save_record()


def build_toyq_backend(config: ToyqConfig, state_dir: str | Path | None) -> ToyqBackend:
    """The registry's factory: the undo record goes to ``<state_dir>/toyq-record.json``."""
    return ToyqBackend(record_in_state_dir(config, state_dir, "toyq-record.json"))
