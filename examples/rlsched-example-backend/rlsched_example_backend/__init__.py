"""rlsched's example plugin: the ``toyq`` backend and the ``largest-first`` policy.

Only names are given here (the entry points load this module when rlsched first consults its registries);
the backend's modules are imported when a config names ``kind = "toyq"``.
"""

from rlsched.backends import BackendKind
from rlsched_example_backend.policy import LARGEST_FIRST

BACKEND = BackendKind(
    "toyq",
    config="rlsched_example_backend.backend:ToyqConfig",
    factory="rlsched_example_backend.backend:build_toyq_backend",
)
POLICIES = (LARGEST_FIRST,)
