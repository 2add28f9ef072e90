"""Slurm backend: :class:`SlurmBackend` implements :class:`rlsched.core.view.Backend` through the Slurm
command-line tools (DESIGN.md §5).  See ``docs/slurm.md``.

Modules: :mod:`.runner` (commands, timeouts, retries, error counters), :mod:`.parsers` (pure parsers of
``squeue``/``sinfo --json``, ``scontrol``, ``sacct``, the jobcomp file), :mod:`.config` (class rule, VO
mapping), :mod:`.completions` (the completion feed), :mod:`.backend` (view building and actions).
"""

from rlsched.backends.slurm.backend import SlurmBackend
from rlsched.backends.slurm.config import ClassRule, SlurmBackendConfig, VOMapping
from rlsched.backends.slurm.errors import SlurmCommandError, SlurmError, SlurmParseError, VanishedJobError
from rlsched.backends.slurm.runner import CommandExecutor, CommandResult, RetryPolicy, SubprocessRunner

__all__ = [
    "ClassRule",
    "CommandExecutor",
    "CommandResult",
    "RetryPolicy",
    "SlurmBackend",
    "SlurmBackendConfig",
    "SlurmCommandError",
    "SlurmError",
    "SlurmParseError",
    "SubprocessRunner",
    "VOMapping",
    "VanishedJobError",
]
