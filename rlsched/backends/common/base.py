"""What the Slurm and PBS backends share: one action on one job, holds recorded before they are made, the
undo record.

A backend keeps an *undo record* (:class:`~.record.UndoRecord`, whose fields each backend declares in a
subclass) of every change it makes to the batch system and writes it *before* the change, so that a crash
never strands a change nobody can undo: the gate watchdog and the next start release the holds it lists, and
:meth:`undo` reverses everything on a clean stop.  The batch-system specific parts are small hooks: the
commands (:meth:`_hold_argv`, :meth:`_release_argv`), how a job record is updated (:meth:`_replace_job`), how
a job is named in a message (:meth:`_job_name`), and what else a held job must be remembered by
(:meth:`_remember_hold`, :meth:`_forget_hold`).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from rlsched.backends.common.completions import CompletionFeedState
from rlsched.backends.common.record import UndoRecord, UndoRecordWriter
from rlsched.backends.common.runner import (
    BackendCommandError,
    BackendError,
    CommandExecutor,
    CommandResult,
    CommandRunner,
    RetryPolicy,
    SubprocessRunner,
    VanishedJobError,
)
from rlsched.core.classify import VOMapping
from rlsched.core.view import CloudState, ClusterView, FinishedJobs, PendingJobs, RunningJobs

log = logging.getLogger(__name__)


class BackendJob(Protocol):
    """The job states the shared plumbing reads."""

    @property
    def pending(self) -> bool: ...

    @property
    def held(self) -> bool: ...

    @property
    def active(self) -> bool: ...


class BackendConfig(Protocol):
    """The config keys the shared plumbing reads (both backends' configs have them)."""

    @property
    def bin_dir(self) -> str | None: ...

    @property
    def max_boosted(self) -> int: ...

    @property
    def state_file(self) -> str | None: ...

    @property
    def timeout_s(self) -> float: ...

    @property
    def retry(self) -> RetryPolicy: ...

    def vo_mapping(self) -> VOMapping: ...


JobT = TypeVar("JobT", bound=BackendJob)
ConfigT = TypeVar("ConfigT", bound=BackendConfig)
RecordT = TypeVar("RecordT", bound=UndoRecord)


class CLIBackend(ABC, Generic[JobT, RecordT]):
    """The batch system through its command line, with an undo record (see the module docstring).

    Subclasses set :attr:`config`, :attr:`executor`, :attr:`actions` and ``_jobs`` in ``__init__``, then call
    :meth:`_open_record` with their record's class, and implement the hooks.
    """

    config: BackendConfig
    executor: CommandExecutor
    actions: Counter[str]
    #: The VOs of the view (the config's mapping of accounts to VOs).
    vo_mapping: VOMapping
    #: What rlsched changed and has not undone (written to ``state_file`` before each change).
    record: RecordT
    _jobs: dict[int, JobT]
    _record_writer: UndoRecordWriter
    #: The completion feed once the first view has built it (its position is part of the record).
    _feed: CompletionFeedState | None = None
    #: Substrings of an action's output that mean the job is gone or past the state the action needs.
    vanished_messages: tuple[str, ...] = ()
    #: What the last poll's copy of a job becomes when rlsched holds or releases it.
    held_fields: ClassVar[dict[str, Any]] = {}
    released_fields: ClassVar[dict[str, Any]] = {}
    #: The job attribute the boost lever sets (Slurm: ``nice``, PBS: ``priority``).
    boost_field: ClassVar[str]

    #: Each backend's config class (built with its defaults when none is given), undo record and command error.
    config_class: ClassVar[type[Any]]
    record_class: ClassVar[type[UndoRecord]]
    command_error: ClassVar[type[BackendCommandError]]

    def __init__(
        self,
        config: Any = None,
        runner: CommandRunner | None = None,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        """The batch system's commands through ``runner`` (default: subprocesses, :meth:`_runner`) with the config's
        time limit and retries, ``clock`` for the view's time; then :meth:`_setup` and the undo record."""
        self.config = config if config is not None else self.config_class()
        self.executor = CommandExecutor(
            self._runner(runner), self.config.timeout_s, self.config.retry, sleep, error_class=self.command_error
        )
        self.clock = clock
        self.vo_mapping = self.config.vo_mapping()
        self.actions = Counter()
        self._jobs = {}
        self._polled: list[JobT] = []
        self._nodes: list[Any] = []
        self._feed = None
        self._setup()
        self._open_record(self.record_class)  # type: ignore[arg-type]  # each backend's own record class

    def _runner(self, runner: CommandRunner | None) -> CommandRunner:
        """The runner of the batch system's commands: ``runner``, or subprocesses."""
        return runner or SubprocessRunner()

    def _setup(self) -> None:
        """A backend's own state, set before the undo record is read."""

    def _cluster_view(
        self,
        now: float,
        total: int,
        idle: int,
        jobs: tuple[PendingJobs, RunningJobs, FinishedJobs],
        cloud: CloudState | None = None,
        polled: float | None = None,
    ) -> ClusterView:
        """The view of ``jobs`` (pending, running, finished) on ``total`` cores, ``idle`` of them free, with the
        config's VOs: what every backend's :meth:`view` returns once it has its job tables.  ``polled``: when
        the backend began reading the batch system for it (kept no later than ``now``: a wall clock can step
        back)."""
        pending, running, finished = jobs
        return ClusterView(
            time_s=now,
            total_cores=total,
            idle_cores=min(idle, total),
            pending=pending,
            running=running,
            finished=finished,
            vos=self.vo_mapping.names,
            vo_shares=self.vo_mapping.shares,
            cloud=cloud,
            polled_s=None if polled is None else min(polled, now),
        )

    # ------------------------------------------------------------------------------------------ hooks
    @abstractmethod
    def poll(self) -> tuple[list[JobT], list[Any]]:
        """The batch system's jobs and nodes now (this also refreshes ``_jobs``)."""

    def _job_name(self, job_id: int) -> str:
        """The job as the batch system names it (PBS: ``13[2].host``)."""
        return str(job_id)

    @abstractmethod
    def _replace_job(self, job: JobT, changes: dict[str, Any]) -> JobT:
        """A copy of ``job`` with ``changes``."""

    @abstractmethod
    def _hold_argv(self, job_id: int) -> list[str]: ...

    @abstractmethod
    def _release_argv(self, job_id: int) -> list[str]: ...

    @abstractmethod
    def _set_boost(self, job_id: int, value: int, kind: str) -> bool:
        """Set the boost lever of one job (:meth:`_job_action`: False when the job has vanished)."""

    @abstractmethod
    def _boost_record(self) -> tuple[dict[int, int], dict[int, int]]:
        """The record's boosted jobs: their values before rlsched changed them, and the values it set."""

    def _restorable(self, original: int) -> int:
        """The value an original is restored as (Slurm: the nearest inside its Nice range)."""
        return original

    def _remember_boost(self, job_id: int) -> None:
        """Whatever else a boost must be recorded with (PBS: the job's full id)."""

    def _forget_boost(self, job_id: int) -> None:
        original, applied = self._boost_record()
        original.pop(job_id, None)
        applied.pop(job_id, None)

    def _remember_hold(self, job_id: int) -> None:
        """Whatever else a hold must be recorded with (PBS: the job's full id)."""
        self.held_by_rlsched.add(job_id)

    def _forget_hold(self, job_id: int) -> None:
        self.held_by_rlsched.discard(job_id)

    # ------------------------------------------------------------------------------------------ commands
    def _cmd(self, name: str) -> str:
        return str(Path(self.config.bin_dir) / name) if self.config.bin_dir else name

    @property
    def errors(self) -> Counter[str]:
        """Failures by kind (``timeout``, ``nonzero_exit``, ``parse_error``, ``vanished_job``, …)."""
        return self.executor.errors

    @property
    def boost_limit(self) -> int:
        return self.config.max_boosted

    def _job_action(self, job_id: int, argv: list[str], kind: str) -> bool:
        """Run one action on one job; False (logged, counted) when the job has vanished."""

        def vanished(result: CommandResult) -> BackendError | None:
            message = (result.stderr + result.stdout).strip()
            if any(m.lower() in message.lower() for m in self.vanished_messages):
                return VanishedJobError(argv, self._job_name(job_id), message.splitlines()[0] if message else "")
            return None

        try:
            self.executor.run(argv, lambda r: None, permanent=vanished)
        except BackendError as exc:
            if exc.kind != "vanished_job":
                raise
            log.info("%s", exc)
            self._jobs.pop(job_id, None)
            return False
        self.actions[kind] += 1
        return True

    def _update_cached(self, job_id: int, **changes: Any) -> None:
        """Keep the last poll's copy of a job in step with what rlsched just did to it."""
        job = self._jobs.get(job_id)
        if job is not None:
            self._jobs[job_id] = self._replace_job(job, changes)

    # ------------------------------------------------------------------------------------------ boost
    def _ranked_pending(self, ranked_job_ids: Sequence[int]) -> list[int]:
        """The first ``max_boosted`` distinct pending jobs of a ranking (the last poll's)."""
        if not self._jobs:
            self.poll()
        ranked: list[int] = []
        for job_id in ranked_job_ids:
            job = self._jobs.get(int(job_id))
            if job is not None and job.pending and int(job_id) not in ranked:
                ranked.append(int(job_id))
            if len(ranked) == self.config.max_boosted:
                break
        return ranked

    def _apply_boosts(self, wanted: dict[int, int]) -> None:
        """Give the ``wanted`` jobs their boost values and the jobs boosted before and not now their original
        values back.  Each new job's original is recorded before its value changes: a value whose original
        cannot be written could never be undone, so it is not set."""
        original, applied = self._boost_record()
        try:
            for job_id in [j for j in original if j not in wanted]:
                self._restore_boost(job_id)
            to_set: dict[int, int] = {}
            new: list[int] = []
            for job_id, value in wanted.items():
                job = self._jobs.get(job_id)
                current = getattr(job, self.boost_field) if job is not None else 0
                if applied.get(job_id) == value and (job is None or current == value):
                    continue  # already so
                to_set[job_id] = value
                if job_id not in original:
                    original[job_id] = current
                    self._remember_boost(job_id)
                    new.append(job_id)
            if new and not self._try_save_record():
                for job_id in new:
                    self._forget_boost(job_id)
                    del to_set[job_id]
            for job_id, value in to_set.items():
                if self._set_boost(job_id, value, "nice_set"):
                    applied[job_id] = value
                    self._update_cached(job_id, **{self.boost_field: value})
                else:
                    self._forget_boost(job_id)
        finally:
            self._try_save_record()

    def _restore_boost(self, job_id: int) -> None:
        # A vanished job needs no restoring; a failure raises and keeps the record for the next try.
        value = self._restorable(self._boost_record()[0][job_id])
        if self._set_boost(job_id, value, "nice_restored"):
            self._update_cached(job_id, **{self.boost_field: value})
        self._forget_boost(job_id)

    def _undo_jobs(self) -> int:
        """Restore every boosted job's value and release every job rlsched held; how many."""
        undone = 0
        for job_id in list(self._boost_record()[0]):
            self._restore_boost(job_id)
            undone += 1
        for job_id in sorted(self.held_by_rlsched):
            self.release(job_id)
            undone += 1
        return undone

    # ------------------------------------------------------------------------------------------ hold/release
    def hold(self, job_id: int) -> None:
        """Hold a pending job, recorded first: no record, no hold (nothing could release it after a crash)."""
        job_id = int(job_id)
        argv = self._hold_argv(job_id)
        job = self._jobs.get(job_id)
        if job is not None and not job.pending and not job.active:
            log.info("%s: vanished_job: the job has ended", " ".join(argv))
            self.executor.count("vanished_job")
            return
        if job is not None and (job.held or not job.pending):
            return  # already held, or running: holding a running job is meaningless
        # Recorded before the hold: a crash between the two leaves a record whose undo releases a job that was
        # never held (a counted no-op), never a held job nobody releases.
        self._remember_hold(job_id)
        if not self._try_save_record():
            self._forget_hold(job_id)
            log.warning("%s: not held, the undo record cannot be written", " ".join(argv))
            return
        # A failure (a timeout may come after the batch system held the job) raises and keeps the record: undo
        # will release it.  A vanished job is forgotten.
        if self._job_action(job_id, argv, "hold"):
            self._update_cached(job_id, **self.held_fields)
        else:
            self._forget_hold(job_id)
            self._try_save_record()

    def release(self, job_id: int) -> None:
        job_id = int(job_id)
        if self._job_action(job_id, self._release_argv(job_id), "release"):
            self._update_cached(job_id, **self.released_fields)
        if job_id in self.held_by_rlsched:  # released, or vanished: either way not held any more
            self._forget_hold(job_id)
            self._try_save_record()  # a stale entry only makes a later release repeat this one

    # ------------------------------------------------------------------------------------------ record
    @property
    def held_by_rlsched(self) -> set[int]:
        """The jobs rlsched held and has not released (part of :attr:`record`)."""
        return self.record.held_by_rlsched

    def changes(self) -> dict[str, int]:
        return self.record.changes()

    def _open_record(self, record_class: type[RecordT]) -> None:
        """Read the undo record a previous run left in ``state_file`` (an empty one when there is none)."""
        self._record_writer = UndoRecordWriter(self.executor)
        self.record = record_class.load(self.config.state_file)
        left = {kind: n for kind, n in self.record.changes().items() if n}
        if left:
            log.warning(
                "%s: %s left by a previous run",
                self.config.state_file,
                ", ".join(f"{n} {kind}" for kind, n in left.items()),
            )

    def _record(self) -> dict[str, Any]:
        """The undo record as written to ``state_file``, with the completion feed's latest position."""
        if self._feed is not None:
            self.record.completion_feed = self._feed.state()
        return self.record.to_json()

    def _save_record(self) -> None:
        """Write the undo record atomically (a crash never tears it); an ``OSError`` propagates."""
        self._record_writer.save(self.config.state_file, self._record())

    def _try_save_record(self) -> bool:
        """Write the undo record; False (counted as ``state_write_failed``) when the state dir is read-only,
        full or gone."""
        return self._record_writer.try_save(self.config.state_file, self._record())


def record_in_state_dir(config: ConfigT, state_dir: str | Path | None, file_name: str) -> ConfigT:
    """A registry factory's config (:mod:`rlsched.backends`): the undo record goes to
    ``<state_dir>/<file_name>`` unless ``state_file`` names another place; ``state_dir`` None keeps no record
    (a read-only backend: ``rlsched status``)."""
    if state_dir is None:
        return dataclasses.replace(config, state_file=None)  # type: ignore[type-var]
    if config.state_file is None:
        return dataclasses.replace(config, state_file=str(Path(state_dir) / file_name))  # type: ignore[type-var]
    return config
