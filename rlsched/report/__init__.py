"""Reports on what a deployed policy did or would have done (``rlsched report``).

- :mod:`rlsched.report.shadow`: the decision log joined with Slurm's start times (pure);
- :mod:`rlsched.report.starts`: Slurm's start times from sacct, the jobcomp file or squeue;
- :mod:`rlsched.report.shadow_report`: the markdown, JSON and PNG outputs;
- :mod:`rlsched.report.times`: ``--since``/``--until`` values.
"""
