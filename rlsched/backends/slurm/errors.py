"""Errors of the Slurm backend.  All derive from :class:`SlurmError`, itself a
:class:`~rlsched.backends.common.runner.BackendError`, which the daemon catches, logs and counts (one bad
cycle never kills the loop: docs/daemon.md, "Failures")."""

from __future__ import annotations

from collections.abc import Sequence

from rlsched.backends.common.runner import BackendCommandError, BackendError, BackendParseError


class SlurmError(BackendError):
    """Anything the Slurm backend could not do; ``kind`` is the label of the error counter."""


class SlurmParseError(SlurmError, BackendParseError):
    """Output of a Slurm command that does not have the expected shape (see :class:`BackendParseError`)."""


class SlurmCommandError(SlurmError, BackendCommandError):
    """A Slurm command that failed (after retries when the failure was transient)."""


class VanishedJobError(SlurmCommandError):
    """The job named in an action is gone (finished, cancelled) or no longer in the state the action needs."""

    def __init__(self, argv: Sequence[str], job_id: int, detail: str) -> None:
        self.job_id = job_id
        super().__init__("vanished_job", argv, detail)
