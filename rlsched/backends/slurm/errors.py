"""Errors of the Slurm backend: the shared backend errors (:mod:`rlsched.backends.common.runner`) under
Slurm's name, so that a caller can tell a Slurm failure from another backend's.  The daemon catches, logs and
counts them (one bad cycle never kills the loop: docs/daemon.md, "Failures"); a vanished job is the shared
:class:`~rlsched.backends.common.runner.VanishedJobError`, counted and never raised out of the backend."""

from __future__ import annotations

from rlsched.backends.common.runner import BackendCommandError, BackendError, BackendParseError


class SlurmError(BackendError):
    """Anything the Slurm backend could not do; ``kind`` is the label of the error counter."""


class SlurmParseError(SlurmError, BackendParseError):
    """Output of a Slurm command that does not have the expected shape (see :class:`BackendParseError`)."""


class SlurmCommandError(SlurmError, BackendCommandError):
    """A Slurm command that failed (after retries when the failure was transient)."""
