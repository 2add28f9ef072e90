"""Batch-system backends: each implements :class:`rlsched.core.view.Backend` (DESIGN.md §1).

- :mod:`rlsched.backends.slurm` — Slurm through its command-line tools (``squeue``/``sinfo --json``,
  ``scontrol``, ``sacct``), the default live backend (DESIGN.md §5).

The simulator (:mod:`rlsched.sim`) is the other implementation of the same protocol.
"""
