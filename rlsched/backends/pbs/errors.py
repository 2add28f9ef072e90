"""Errors of the PBS backend: the shared backend errors (:mod:`rlsched.backends.common.runner`) under PBS's
name, so that a caller can tell a PBS failure from another backend's; the daemon catches, logs and counts
them.  A vanished job is the shared :class:`~rlsched.backends.common.runner.VanishedJobError`."""

from __future__ import annotations

from rlsched.backends.common.runner import BackendCommandError, BackendError, BackendParseError


class PBSError(BackendError):
    """Anything the PBS backend could not do; ``kind`` is the label of the error counter."""


class PBSParseError(PBSError, BackendParseError):
    """Output of a PBS command (or a line of an accounting log) that does not have the expected shape
    (see :class:`BackendParseError`)."""


class PBSCommandError(PBSError, BackendCommandError):
    """A PBS command that failed (after retries when the failure was transient)."""
