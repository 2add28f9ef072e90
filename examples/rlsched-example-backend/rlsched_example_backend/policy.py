"""``largest-first``: the widest pending job first (then by submit time), a static rule that runs on the
simulator's native path and live alike."""

from __future__ import annotations

import numpy as np

from rlsched.core.policies.registry import BuildContext, JobColumns, PolicyEntry, StaticKeyAgent
from rlsched.core.policies.spec import PolicySpec
from rlsched.core.view import Agent


def largest_first_key(jobs: JobColumns) -> tuple[np.ndarray, ...]:
    return (-jobs.cores,)


def _build(spec: PolicySpec, ctx: BuildContext) -> Agent:
    return StaticKeyAgent(largest_first_key, ctx.mode)


LARGEST_FIRST = PolicyEntry(
    "largest-first",
    "rule",
    "the job asking for the most cores first (an example plugin)",
    (),
    _build,
    lambda params: largest_first_key,
    lambda params: False,
)
