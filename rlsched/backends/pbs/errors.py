"""Errors of the PBS backend.  All derive from :class:`PBSError`, a
:class:`~rlsched.backends.common.runner.BackendError`, which the daemon catches, logs and counts."""

from __future__ import annotations

from collections.abc import Sequence

from rlsched.backends.common.runner import BackendCommandError, BackendError


class PBSError(BackendError):
    """Anything the PBS backend could not do; ``kind`` is the label of the error counter."""


class PBSParseError(PBSError, ValueError):
    """Output of a PBS command (or a line of an accounting log) that does not have the expected shape.

    ``command`` names the source (``"qstat -f -F json"``), ``where`` the place in it (``Jobs["12.srv"].queue``,
    ``"line 3"``) and the message says what was wrong.
    """

    kind = "parse_error"

    def __init__(self, command: str, where: str, message: str) -> None:
        self.command = command
        self.where = where
        self.message = message
        location = f" at {where}" if where else ""
        super().__init__(f"{command}: bad output{location}: {message}")


class PBSCommandError(PBSError, BackendCommandError):
    """A PBS command that failed (after retries when the failure was transient)."""


class VanishedJobError(PBSCommandError):
    """The job named in an action is gone (finished, deleted) or no longer in a state the action applies to."""

    def __init__(self, argv: Sequence[str], job_id: str, detail: str) -> None:
        self.job_id = job_id
        super().__init__("vanished_job", argv, detail)
