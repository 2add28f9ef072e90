"""Configuration of the Slurm backend: commands, timeouts, levers, scope, and its class rule and VO mapping
(:mod:`rlsched.core.classify`).

The daemon reads these from its TOML file (``[backend]`` table, see ``docs/slurm.md``) through
:meth:`SlurmBackendConfig.from_table` (:meth:`BackendConfig.from_table` with the schema section
:data:`rlsched.config_schema.SLURM`), which rejects bad keys with a one-line error naming the key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from rlsched.backends.common.config import BackendConfig
from rlsched.config_schema import SLURM, Section


@dataclass(frozen=True)
class SlurmBackendConfig(BackendConfig):
    """Everything the Slurm backend needs to know about the site, beyond the keys every backend shares
    (:class:`~rlsched.backends.common.config.BackendConfig`).

    - ``slurm_conf``: passed to the commands as ``SLURM_CONF`` (None: inherit the environment).
    - ``bin_dir``: where squeue, sinfo, scontrol and sacct are (None: PATH).
    - ``partitions``: the partitions rlsched schedules (empty: all).
    - ``completion_source``: ``auto`` (sacct when accounting storage is configured, else the
      ``jobcomp/filetxt`` file, else squeue within MinJobAge), or one of them by name.
    - ``max_boosted``: how many top-ranked jobs get a Nice offset (each one costs an ``scontrol`` call
      whenever its rank changes).
    - ``unlimited_time_s``: the requested time given to jobs without a time limit.
    - ``state_file``: where the record of what rlsched changed in Slurm is kept (Nice values, holds,
      drained cloud nodes, the completion feed's position), so that a restarted daemon can undo it.
    """

    SECTION: ClassVar[Section] = SLURM
    RULE_KEYS: ClassVar[Mapping[str, str]] = {
        key: key for key in ("interactive_qos", "interactive_partitions", "interactive_max_time_s")
    }

    slurm_conf: str | None = None
    partitions: frozenset[str] = frozenset()
    completion_source: str = "auto"
    jobcomp_path: str | None = None
    cloud_feature: str = "cloud"
    #: The registry name (``[backend] kind``; see :mod:`rlsched.backends`).
    kind: str = field(default="slurm", init=False, repr=False)

    def gate_problem(self) -> tuple[str, str] | None:
        """Gate mode needs the gated partitions: in them a held job waits for rlsched."""
        if not self.partitions:
            return "partitions", (
                "gate mode needs the gated partitions: in them a held job waits for rlsched (see docs/daemon.md)"
            )
        return None
