"""rlsched: a learning scheduler for Slurm/PBS, with a trace-driven simulator."""

__version__ = "0.1.0"
