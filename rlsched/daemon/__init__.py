"""The rlsched daemon beside a batch system (Slurm by default): configuration, agents, the loop, its state files.

See ``docs/daemon.md``.  Entry points: ``rlsched daemon --config FILE`` and ``rlsched status --config FILE``.
"""

from rlsched.daemon.agents import AgentHandle, AgentStartError, build_agent, start_agent
from rlsched.daemon.config import AgentConfig, ConfigError, DaemonConfig, GateConfig, config_from_dict, load_config
from rlsched.daemon.loop import CycleReport, Daemon

__all__ = [
    "AgentConfig",
    "AgentHandle",
    "AgentStartError",
    "ConfigError",
    "CycleReport",
    "Daemon",
    "DaemonConfig",
    "GateConfig",
    "build_agent",
    "config_from_dict",
    "load_config",
    "start_agent",
]
