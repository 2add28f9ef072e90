"""Slurm backend: :class:`SlurmBackend` implements :class:`rlsched.core.live.LiveBackend` and
:class:`rlsched.core.live.NodeControl` through the Slurm command-line tools.  See ``docs/slurm.md``.

Modules: :mod:`.parsers` (pure parsers of ``squeue``/``sinfo --json``, ``scontrol``, ``sacct``, the jobcomp
file), :mod:`.config` (:class:`SlurmBackendConfig`), :mod:`.completions` (the completion feed),
:mod:`.backend` (view building, actions, the undo record).  What is not Slurm's — the command runner, the
hostlist helper, the class rule and the VO mapping — is in :mod:`rlsched.backends.common`.
"""

from rlsched.backends.slurm.backend import SlurmBackend, build_slurm_backend
from rlsched.backends.slurm.config import SlurmBackendConfig
from rlsched.backends.slurm.errors import SlurmCommandError, SlurmError, SlurmParseError

__all__ = [
    "SlurmBackend",
    "SlurmBackendConfig",
    "SlurmCommandError",
    "SlurmError",
    "SlurmParseError",
    "build_slurm_backend",
]
