"""Errors of the PBS backend.  All derive from :class:`PBSError`, a
:class:`~rlsched.backends.common.runner.BackendError`, which the daemon catches, logs and counts."""

from __future__ import annotations

from collections.abc import Sequence

from rlsched.backends.common.runner import BackendCommandError, BackendError, BackendParseError


class PBSError(BackendError):
    """Anything the PBS backend could not do; ``kind`` is the label of the error counter."""


class PBSParseError(PBSError, BackendParseError):
    """Output of a PBS command (or a line of an accounting log) that does not have the expected shape
    (see :class:`BackendParseError`)."""


class PBSCommandError(PBSError, BackendCommandError):
    """A PBS command that failed (after retries when the failure was transient)."""


class VanishedJobError(PBSCommandError):
    """The job named in an action is gone (finished, deleted) or no longer in a state the action applies to."""

    def __init__(self, argv: Sequence[str], job_id: str, detail: str) -> None:
        self.job_id = job_id
        super().__init__("vanished_job", argv, detail)
