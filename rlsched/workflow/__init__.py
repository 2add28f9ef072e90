"""From a site's history to a deployed policy: train a model on a trace, judge policies on it.

- :mod:`rlsched.workflow.site`: a trace seen through a daemon config (class rule, VO list).
- :mod:`rlsched.workflow.train`: ``rlsched train`` (seeds, checkpoints, local pool or Dask).
- :mod:`rlsched.workflow.evaluate`: ``rlsched evaluate`` (tables per class and VO, figures, report).
"""
