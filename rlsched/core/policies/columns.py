"""What a static ranking key reads: the job columns known at submit, and the key's type.

Its own module so that :mod:`rlsched.core.policies.rules` (which builds keys) and
:mod:`rlsched.core.policies.registry` (which holds them) both import it, and not each other.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from rlsched.core.view import FloatArray, IntArray, PendingJobs

#: A static ranking key: the job columns in, the sort keys out, most significant first.
KeyFunction = Callable[["JobColumns"], tuple[np.ndarray, ...]]


class JobColumns:
    """What a static key may read: the columns known at submit (a :class:`PendingJobs` has them).

    The simulator builds one from a workload with the row index as ``job_id`` (its tie-break).
    """

    def __init__(
        self, job_id: IntArray, job_class: IntArray, submit_s: FloatArray, req_time_s: FloatArray, cores: IntArray
    ) -> None:
        self.job_id = job_id
        self.job_class = job_class
        self.submit_s = submit_s
        self.req_time_s = req_time_s
        self.cores = cores

    @classmethod
    def of(cls, jobs: PendingJobs) -> JobColumns:
        return cls(jobs.job_id, jobs.job_class, jobs.submit_s, jobs.req_time_s, jobs.cores)
