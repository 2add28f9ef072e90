"""What the Slurm and PBS backends share: one action on one job, holds recorded before they are made, the
undo record.

A backend keeps an *undo record* (:mod:`.record`) of every change it makes to the batch system and writes it
*before* the change, so that a crash never strands a change nobody can undo: the gate watchdog and the next
start release the holds it lists, and :meth:`undo` reverses everything on a clean stop.  The batch-system
specific parts are small hooks: the commands (:meth:`_hold_argv`, :meth:`_release_argv`), how a job record
is updated (:meth:`_replace_job`), what an action's failure means (:meth:`_vanished_error`), and what else a
held job must be remembered by (:meth:`_remember_hold`, :meth:`_forget_hold`).
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from rlsched.backends.common.record import UndoRecordWriter
from rlsched.backends.common.runner import BackendError, CommandExecutor, CommandResult

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


JobT = TypeVar("JobT", bound=BackendJob)


class CLIBackend(ABC, Generic[JobT]):
    """The batch system through its command line, with an undo record (see the module docstring).

    Subclasses set :attr:`config`, :attr:`executor`, :attr:`actions`, :attr:`held_by_rlsched`, ``_jobs`` and
    ``_record_writer`` in ``__init__`` and implement the hooks.
    """

    config: BackendConfig
    executor: CommandExecutor
    actions: Counter[str]
    held_by_rlsched: set[int]
    _jobs: dict[int, JobT]
    _record_writer: UndoRecordWriter
    #: Substrings of an action's output that mean the job is gone or past the state the action needs.
    vanished_messages: tuple[str, ...] = ()
    #: What the last poll's copy of a job becomes when rlsched holds or releases it.
    held_fields: ClassVar[dict[str, Any]] = {}
    released_fields: ClassVar[dict[str, Any]] = {}

    # ------------------------------------------------------------------------------------------ hooks
    @abstractmethod
    def _vanished_error(self, argv: Sequence[str], job_id: int, detail: str) -> BackendError:
        """The backend's "vanished job" error for an action on ``job_id``."""

    @abstractmethod
    def _replace_job(self, job: JobT, changes: dict[str, Any]) -> JobT:
        """A copy of ``job`` with ``changes``."""

    @abstractmethod
    def _hold_argv(self, job_id: int) -> list[str]: ...

    @abstractmethod
    def _release_argv(self, job_id: int) -> list[str]: ...

    @abstractmethod
    def _record(self) -> dict[str, Any]:
        """The undo record as written to ``state_file``."""

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
                return self._vanished_error(argv, job_id, message.splitlines()[0] if message else "")
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
            return                      # already held, or running: holding a running job is meaningless
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
        if job_id in self.held_by_rlsched:       # released, or vanished: either way not held any more
            self._forget_hold(job_id)
            self._try_save_record()     # a stale entry only makes a later release repeat this one

    # ------------------------------------------------------------------------------------------ record
    def _save_record(self) -> None:
        """Write the undo record atomically (a crash never tears it); an ``OSError`` propagates."""
        self._record_writer.save(self.config.state_file, self._record())

    def _try_save_record(self) -> bool:
        """Write the undo record; False (counted as ``state_write_failed``) when the state dir is read-only,
        full or gone."""
        return self._record_writer.try_save(self.config.state_file, self._record())
