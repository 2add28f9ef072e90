"""The rlsched daemon beside Slurm: configuration, agents, the loop, its state files (DESIGN.md §1, §5, §7).

See ``docs/daemon.md``.  Entry points: ``rlsched daemon --config FILE`` and ``rlsched status --config FILE``.
"""

from rlsched.daemon.agents import AgentHandle, FixedPriorityAgent, build_agent
from rlsched.daemon.config import AgentConfig, ConfigError, DaemonConfig, GateConfig, config_from_dict, load_config
from rlsched.daemon.loop import CycleReport, Daemon, TrackingSlurmBackend

__all__ = [
    "AgentConfig",
    "AgentHandle",
    "ConfigError",
    "CycleReport",
    "Daemon",
    "DaemonConfig",
    "FixedPriorityAgent",
    "GateConfig",
    "TrackingSlurmBackend",
    "build_agent",
    "config_from_dict",
    "load_config",
]
