"""rlsched's trace-driven simulator, importable as ``rlsched.sim``.

The folder lives at the top of the repository (``sim/``) and is mapped under the
``rlsched`` namespace by the ``rlsched/sim`` link, so it never installs as a bare
``sim`` module.
"""
