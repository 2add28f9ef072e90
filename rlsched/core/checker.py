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
from rlsched.core.view import Backend, ClusterView, FinishedJobs, JobClass, PendingJobs, RunningJobs


class BackendCheckError(RlschedError, AssertionError):
    """A backend produced an inconsistent view."""


def _table_problems(label: str, table: PendingJobs | RunningJobs | FinishedJobs, vos: int) -> list[str]:
    """What is wrong with one job table of a view (``vos``: the number of VOs, 0 when the view names none)."""
    problems: list[str] = []
    ids = table.job_id
    if len(np.unique(ids)) != len(ids):
        problems.append(f"{label} job ids are not unique")
    if not len(table):
        return problems
    if (table.cores < 1).any():
        problems.append(f"{label} jobs with fewer than one core")
    if not set(np.unique(table.job_class).tolist()) <= {int(c) for c in JobClass}:
        problems.append(f"{label} jobs with an unknown class")
    if vos and ((table.vo < 0) | (table.vo >= vos)).any():
        problems.append(f"{label} jobs with a VO index outside 0..{vos - 1}")
    return problems


def _time_problems(view: ClusterView) -> list[str]:
    """Times out of order: starts in the future or before submission, ends before starts."""
    problems: list[str] = []
    running, pending, finished = view.running, view.pending, view.finished
    if len(running) and (running.start_s > view.time_s + 1e-6).any():
        problems.append("running jobs that start in the future")
    if len(running) and (running.start_s < running.submit_s - 1e-6).any():
        problems.append("running jobs that started before their submission")
    if len(pending) and (pending.submit_s > view.time_s + 1e-6).any():
        problems.append("pending jobs submitted in the future")
    if len(pending) and (pending.req_time_s <= 0).any():
        problems.append("pending jobs without a positive requested time")
    if (
        len(finished)
        and ((finished.start_s < finished.submit_s - 1e-6) | (finished.end_s < finished.start_s - 1e-6)).any()
    ):
        problems.append("finished jobs whose times are out of order (submit <= start <= end)")
    return problems


def check_view(view: ClusterView) -> list[str]:
    """Every inconsistency in ``view``, as one sentence each."""
    problems: list[str] = []
    if not np.isfinite(view.time_s):
        problems.append(f"time_s is {view.time_s}")
    if view.total_cores < 0:
        problems.append(f"total_cores is negative ({view.total_cores})")
    for label, table in (("pending", view.pending), ("running", view.running), ("finished", view.finished)):
        problems += _table_problems(label, table, len(view.vos))
    overlap = np.intersect1d(view.pending.job_id, view.running.job_id)
    if len(overlap):
        problems.append(f"jobs both pending and running: {overlap[:5].tolist()}")
    busy = int(view.running.cores.sum())
    if busy + view.idle_cores > view.total_cores:
        problems.append(f"running jobs hold {busy} cores and {view.idle_cores} are idle, of {view.total_cores}")
    problems += _time_problems(view)
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


def check_live_backend(
    backend: LiveBackend,
    *,
    absent_job_id: int | None = None,
    ended_job_id: int | None = None,
    gate_covers_pending: bool = False,
) -> LiveCheckReport:
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
    _check_interface(backend)
    report.steps.append("interface")
    view = _checked_view(backend, "first view")
    _check_counts(backend, view, "first view")
    free = view.pending.job_id[~view.pending.held].tolist()
    if len(free) < 2:
        raise _fail(backend, "setup", f"needs two pending, unheld jobs; the view has {len(free)}")
    first, second = int(free[0]), int(free[1])
    report.steps.append("view")
    _check_boost(backend, first, second)
    report.boosted = (second, first)
    report.steps.append("boost")
    _check_hold_release(backend, first)
    report.held = first
    report.steps.append("hold/release")
    view = _check_undo(backend, first)
    report.steps.append("undo")
    if gate_covers_pending:
        view = _check_release_gated(backend, first)
        report.steps.append("release_gated")
    ids = np.concatenate([view.pending.job_id, view.running.job_id, view.finished.job_id])
    report.absent_job_id = absent_job_id if absent_job_id is not None else int(ids.max(initial=0)) + 1_000_000
    for job_id in (report.absent_job_id, ended_job_id):
        if job_id is not None:
            _check_vanished(backend, job_id)
    _checked_view(backend, "last view")
    report.steps.append("vanished job")
    return report


def _check_interface(backend: LiveBackend) -> None:
    """Every method and property of the protocol, Counter counters, JSON heartbeat fields, no change yet."""
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


def _check_boost(backend: LiveBackend, first: int, second: int) -> None:
    actions = Counter(backend.actions)
    backend.boost([second, first])
    _checked_view(backend, "view after boost")
    boosted = backend.changes()["boosted"]
    if boosted < 1 or boosted > 2:
        raise _fail(backend, "boost", f"changes()['boosted'] is {boosted} after boosting two jobs")
    if backend.actions.total() <= actions.total():
        raise _fail(backend, "boost", "no action counted")


def _check_hold_release(backend: LiveBackend, job_id: int) -> None:
    actions = Counter(backend.actions)
    backend.hold(job_id)
    view = _checked_view(backend, "view after hold")
    _check_counts(backend, view, "view after hold")
    if _held_state(view, job_id) is not True:
        raise _fail(backend, "hold", f"job {job_id} is not shown held after hold()")
    if backend.changes()["held"] != 1 or backend.actions["hold"] != actions["hold"] + 1:
        raise _fail(backend, "hold", f"changes {backend.changes()}, actions {dict(backend.actions)}")
    backend.release(job_id)
    view = _checked_view(backend, "view after release")
    if _held_state(view, job_id) is not False:
        raise _fail(backend, "release", f"job {job_id} is not shown pending and unheld after release()")
    if backend.changes()["held"] != 0 or backend.actions["release"] != actions["release"] + 1:
        raise _fail(backend, "release", f"changes {backend.changes()}, actions {dict(backend.actions)}")


def _check_undo(backend: LiveBackend, job_id: int) -> ClusterView:
    """Undo after the boost and a hold of ``job_id``; returns the view after it."""
    backend.hold(job_id)
    undone = backend.undo()
    if undone < 2:
        raise _fail(backend, "undo", f"undid {undone} changes after a boost and a hold")
    view = _checked_view(backend, "view after undo")
    if _held_state(view, job_id) is not False:
        raise _fail(backend, "undo", f"job {job_id} is still held after undo()")
    if any(backend.changes().values()):
        raise _fail(backend, "undo", f"left {backend.changes()}")
    again = backend.undo()
    if again != 0:
        raise _fail(backend, "undo", f"a second undo() undid {again} more changes")
    return view


def _check_release_gated(backend: LiveBackend, job_id: int) -> ClusterView:
    backend.hold(job_id)
    released = backend.release_gated()
    view = _checked_view(backend, "view after release_gated")
    if released < 1 or _held_state(view, job_id) is not False:
        raise _fail(backend, "release_gated", f"released {released}; job {job_id} held: {_held_state(view, job_id)}")
    if any(backend.changes().values()):
        raise _fail(backend, "release_gated", f"left {backend.changes()}")
    return view


def _check_vanished(backend: LiveBackend, job_id: int) -> None:
    """Hold, release and boost of a job that is not there raise nothing and count ``vanished_job``."""
    vanished = backend.errors["vanished_job"]
    try:
        backend.hold(job_id)
        backend.release(job_id)
        backend.boost([job_id])
    except Exception as exc:
        raise _fail(backend, "vanished job", f"acting on job {job_id} raised {exc!r}") from None
    if backend.errors["vanished_job"] < vanished + 2:
        raise _fail(
            backend,
            "vanished job",
            f"hold and release of job {job_id} counted {backend.errors['vanished_job'] - vanished} vanished_job",
        )
    backend.undo()
    if any(backend.changes().values()):
        raise _fail(backend, "vanished job", f"left {backend.changes()} after undo")
