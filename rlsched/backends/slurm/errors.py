"""Errors of the Slurm backend.  All derive from :class:`SlurmError`, itself a
:class:`~rlsched.backends.common.runner.BackendError`, which the daemon catches, logs and counts (one bad
cycle never kills the loop: docs/daemon.md, "Failures")."""

from __future__ import annotations

from collections.abc import Sequence

from rlsched.backends.common.runner import BackendCommandError, BackendError


class SlurmError(BackendError):
    """Anything the Slurm backend could not do; ``kind`` is the label of the error counter."""


class SlurmParseError(SlurmError, ValueError):
    """Output of a Slurm command that does not have the expected shape.

    ``command`` names the command (``"squeue --json"``), ``where`` the place in its output
    (``"jobs[3].job_id"``, ``"line 12"``) and the message says what was wrong.
    """

    kind = "parse_error"

    def __init__(self, command: str, where: str, message: str) -> None:
        self.command = command
        self.where = where
        self.message = message
        location = f" at {where}" if where else ""
        super().__init__(f"{command}: bad output{location}: {message}")


class SlurmCommandError(SlurmError, BackendCommandError):
    """A Slurm command that failed (after retries when the failure was transient)."""


class VanishedJobError(SlurmCommandError):
    """The job named in an action is gone (finished, cancelled) or no longer in the state the action needs."""

    def __init__(self, argv: Sequence[str], job_id: int, detail: str) -> None:
        self.job_id = job_id
        super().__init__("vanished_job", argv, detail)
