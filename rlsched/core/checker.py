"""A checker any backend author can run, in the spirit of Gymnasium's ``check_env``.

``check_view(view)`` returns the problems found in one :class:`ClusterView` (an empty
list when it is consistent); ``check_backend(backend)`` takes a view from a live or
simulated backend and raises :class:`BackendCheckError` listing every problem.
``check_live_backend(backend)`` checks the whole :class:`~rlsched.core.live.LiveBackend`
contract by acting on the backend: run it against a real cluster when adding a batch system
(``tests/backends/test_contract.py`` runs it on the simulator and on the real Slurm).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from rlsched.core.errors import RlschedError
from rlsched.core.live import CHANGE_KINDS, LiveBackend
from rlsched.core.view import Backend, ClusterView, JobClass


class BackendCheckError(RlschedError, AssertionError):
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


@dataclass
class LiveCheckReport:
    """What :func:`check_live_backend` did: the jobs it acted on and the steps it passed."""

    boosted: tuple[int, ...] = ()
    held: int | None = None
    absent_job_id: int | None = None
    steps: list[str] = field(default_factory=list)


def _fail(backend: object, step: str, message: str) -> BackendCheckError:
    return BackendCheckError(f"{type(backend).__name__}: {step}: {message}")


def _checked_view(backend: LiveBackend, step: str) -> ClusterView:
    view = backend.view()
    if not isinstance(view, ClusterView):
        raise _fail(backend, step, f"view() returned {type(view).__name__}, not ClusterView")
    problems = check_view(view)
    if problems:
        raise _fail(backend, step, "; ".join(problems))
    return view


def _held_state(view: ClusterView, job_id: int) -> bool | None:
    """True/False: the job is pending and held/not held; None: it is not pending any more."""
    rows = np.nonzero(view.pending.job_id == job_id)[0]
    return bool(view.pending.held[rows[0]]) if len(rows) else None


def _check_counts(backend: LiveBackend, view: ClusterView, step: str) -> None:
    counts = backend.queue_counts()
    for key, n in counts.items():
        if not (isinstance(key, tuple) and len(key) == 4 and all(isinstance(k, str) for k in key)):
            raise _fail(backend, step, f"queue_counts key {key!r} is not (partition, account, class, state)")
        if key[2] not in ("batch", "interactive") or key[3] not in ("pending", "held", "running"):
            raise _fail(backend, step, f"queue_counts key {key!r}: unknown class or state")
        if not isinstance(n, int) or n < 1:
            raise _fail(backend, step, f"queue_counts[{key!r}] = {n!r}, not a positive count")
    by_state: Counter[str] = Counter()
    for key, n in counts.items():
        by_state[key[3]] += n
    held = int(view.pending.held.sum())
    expected = {"pending": len(view.pending) - held, "held": held, "running": len(view.running)}
    if dict(by_state) != {k: v for k, v in expected.items() if v}:
        raise _fail(backend, step, f"queue_counts by state {dict(by_state)} differ from the view's {expected}")


def check_live_backend(backend: LiveBackend, *, absent_job_id: int | None = None,
                       ended_job_id: int | None = None, gate_covers_pending: bool = False) -> LiveCheckReport:
    """Check the :class:`~rlsched.core.live.LiveBackend` contract by acting on ``backend``.

    The backend must have at least two pending, unheld jobs that cannot start during the check (a
    full machine, or a simulator between events); the check changes them and undoes every change.
    It checks that

    - the backend has every method and property of the protocol, its counters are ``Counter`` objects and
      ``heartbeat_fields`` is JSON;
    - every view is consistent (:func:`check_view`) and ``queue_counts`` agrees with it by state;
    - ``boost`` of two jobs is counted in ``actions`` and in ``changes()["boosted"]``;
    - ``hold`` of a known job shows as held in the next view (``actions["hold"]``, ``changes()["held"]``),
      ``release`` shows it unheld again;
    - ``undo`` after a boost and a hold reports the changes, leaves the job unheld and ``changes()`` all
      zero, and a second ``undo`` has nothing left to do;
    - ``release_gated`` releases a held job when ``gate_covers_pending`` (the gate scope covers the
      pending jobs);
    - ``hold``, ``release`` and ``boost`` of a job that never existed (``absent_job_id``, default far
      above every id in the view) and of ``ended_job_id`` (a job that has finished, when given) raise
      nothing and count ``errors["vanished_job"]`` for each hold and release.

    Raises :class:`BackendCheckError` naming the step and the problem; returns what it did.
    """
    report = LiveCheckReport()
    if not isinstance(backend, LiveBackend):
        raise BackendCheckError(f"{type(backend).__name__} lacks part of the LiveBackend interface")
    for name in ("errors", "actions"):
        if not isinstance(getattr(backend, name), Counter):
            raise _fail(backend, "counters", f"{name} is not a collections.Counter")
    try:
        json.dumps(backend.heartbeat_fields())
    except (TypeError, ValueError) as exc:
        raise _fail(backend, "heartbeat_fields", f"not JSON: {exc}") from None
    if not isinstance(backend.describe(), str) or not backend.describe():
        raise _fail(backend, "describe", "not a non-empty string")
    if set(backend.changes()) != set(CHANGE_KINDS):
        raise _fail(backend, "changes", f"kinds {sorted(backend.changes())}, expected {list(CHANGE_KINDS)}")
    if any(backend.changes().values()):
        raise _fail(backend, "changes", f"changes before the check: {backend.changes()} (undo them first)")
    report.steps.append("interface")

    view = _checked_view(backend, "first view")
    _check_counts(backend, view, "first view")
    free = view.pending.job_id[~view.pending.held].tolist()
    if len(free) < 2:
        raise _fail(backend, "setup", f"needs two pending, unheld jobs; the view has {len(free)}")
    first, second = int(free[0]), int(free[1])
    report.steps.append("view")

    actions = Counter(backend.actions)
    backend.boost([second, first])
    report.boosted = (second, first)
    view = _checked_view(backend, "view after boost")
    boosted = backend.changes()["boosted"]
    if boosted < 1 or boosted > 2:
        raise _fail(backend, "boost", f"changes()['boosted'] is {boosted} after boosting two jobs")
    if backend.actions.total() <= actions.total():
        raise _fail(backend, "boost", "no action counted")
    report.steps.append("boost")

    actions = Counter(backend.actions)
    backend.hold(first)
    report.held = first
    view = _checked_view(backend, "view after hold")
    _check_counts(backend, view, "view after hold")
    if _held_state(view, first) is not True:
        raise _fail(backend, "hold", f"job {first} is not shown held after hold()")
    if backend.changes()["held"] != 1 or backend.actions["hold"] != actions["hold"] + 1:
        raise _fail(backend, "hold", f"changes {backend.changes()}, actions {dict(backend.actions)}")
    backend.release(first)
    view = _checked_view(backend, "view after release")
    if _held_state(view, first) is not False:
        raise _fail(backend, "release", f"job {first} is not shown pending and unheld after release()")
    if backend.changes()["held"] != 0 or backend.actions["release"] != actions["release"] + 1:
        raise _fail(backend, "release", f"changes {backend.changes()}, actions {dict(backend.actions)}")
    report.steps.append("hold/release")

    backend.hold(first)
    undone = backend.undo()
    if undone < 2:
        raise _fail(backend, "undo", f"undid {undone} changes after a boost and a hold")
    view = _checked_view(backend, "view after undo")
    if _held_state(view, first) is not False:
        raise _fail(backend, "undo", f"job {first} is still held after undo()")
    if any(backend.changes().values()):
        raise _fail(backend, "undo", f"left {backend.changes()}")
    again = backend.undo()
    if again != 0:
        raise _fail(backend, "undo", f"a second undo() undid {again} more changes")
    report.steps.append("undo")

    if gate_covers_pending:
        backend.hold(first)
        released = backend.release_gated()
        view = _checked_view(backend, "view after release_gated")
        if released < 1 or _held_state(view, first) is not False:
            raise _fail(backend, "release_gated", f"released {released}; job {first} held: "
                                                  f"{_held_state(view, first)}")
        if any(backend.changes().values()):
            raise _fail(backend, "release_gated", f"left {backend.changes()}")
        report.steps.append("release_gated")

    ids = np.concatenate([view.pending.job_id, view.running.job_id, view.finished.job_id])
    absent = absent_job_id if absent_job_id is not None else int(ids.max(initial=0)) + 1_000_000
    report.absent_job_id = absent
    for job_id in (absent, ended_job_id):
        if job_id is None:
            continue
        vanished = backend.errors["vanished_job"]
        try:
            backend.hold(job_id)
            backend.release(job_id)
            backend.boost([job_id])
        except Exception as exc:
            raise _fail(backend, "vanished job", f"acting on job {job_id} raised {exc!r}") from None
        if backend.errors["vanished_job"] < vanished + 2:
            raise _fail(backend, "vanished job", f"hold and release of job {job_id} counted "
                                                 f"{backend.errors['vanished_job'] - vanished} vanished_job")
        backend.undo()
        if any(backend.changes().values()):
            raise _fail(backend, "vanished job", f"left {backend.changes()} after undo")
    _checked_view(backend, "last view")
    report.steps.append("vanished job")
    return report
