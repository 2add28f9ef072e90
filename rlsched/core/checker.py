"""A checker any backend author can run, in the spirit of Gymnasium's ``check_env``.

``check_view(view)`` returns the problems found in one :class:`ClusterView` (an empty
list when it is consistent); ``check_backend(backend)`` takes a view from a live or
simulated backend and raises :class:`BackendCheckError` listing every problem.  The
simulator's tests and the Slurm backend's integration tests both run it.
"""

from __future__ import annotations

import numpy as np

from rlsched.core.view import Backend, ClusterView, JobClass


class BackendCheckError(AssertionError):
    """A backend produced an inconsistent view."""


def check_view(view: ClusterView) -> list[str]:
    """Every inconsistency in ``view``, as one sentence each."""
    problems: list[str] = []
    if not np.isfinite(view.time_s):
        problems.append(f"time_s is {view.time_s}")
    if view.total_cores < 0:
        problems.append(f"total_cores is negative ({view.total_cores})")
    classes = {int(c) for c in JobClass}
    for label, table in (("pending", view.pending), ("running", view.running), ("finished", view.finished)):
        ids = table.job_id
        if len(np.unique(ids)) != len(ids):
            problems.append(f"{label} job ids are not unique")
        if len(table) and (table.cores < 1).any():
            problems.append(f"{label} jobs with fewer than one core")
        if len(table) and not set(np.unique(table.job_class).tolist()) <= classes:
            problems.append(f"{label} jobs with an unknown class")
        if len(table) and view.vos and ((table.vo < 0) | (table.vo >= len(view.vos))).any():
            problems.append(f"{label} jobs with a VO index outside 0..{len(view.vos) - 1}")
    overlap = np.intersect1d(view.pending.job_id, view.running.job_id)
    if len(overlap):
        problems.append(f"jobs both pending and running: {overlap[:5].tolist()}")
    busy = int(view.running.cores.sum())
    if busy + view.idle_cores > view.total_cores:
        problems.append(f"running jobs hold {busy} cores and {view.idle_cores} are idle, of {view.total_cores}")
    if len(view.running) and (view.running.start_s > view.time_s + 1e-6).any():
        problems.append("running jobs that start in the future")
    if len(view.running) and (view.running.start_s < view.running.submit_s - 1e-6).any():
        problems.append("running jobs that started before their submission")
    if len(view.pending) and (view.pending.submit_s > view.time_s + 1e-6).any():
        problems.append("pending jobs submitted in the future")
    if len(view.pending) and (view.pending.req_time_s <= 0).any():
        problems.append("pending jobs without a positive requested time")
    f = view.finished
    if len(f) and ((f.start_s < f.submit_s - 1e-6) | (f.end_s < f.start_s - 1e-6)).any():
        problems.append("finished jobs whose times are out of order (submit <= start <= end)")
    if view.vo_shares is not None and abs(sum(view.vo_shares) - 1.0) > 1e-6:
        problems.append(f"vo_shares sum to {sum(view.vo_shares)}, not 1")
    return problems


def check_backend(backend: Backend) -> ClusterView:
    """Take one view from ``backend`` and check it; returns the view for further use."""
    if not isinstance(backend, Backend):
        raise BackendCheckError(f"{type(backend).__name__} lacks part of the Backend interface")
    view = backend.view()
    if not isinstance(view, ClusterView):
        raise BackendCheckError(f"view() returned {type(view).__name__}, not ClusterView")
    problems = check_view(view)
    if problems:
        raise BackendCheckError(f"{type(backend).__name__}: " + "; ".join(problems))
    return view
