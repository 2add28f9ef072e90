"""What any batch system can tell at one instant, and the levers it offers.

This module is the seam of rlsched (docs/design.md, The seams): the Slurm and PBS backends and
the trace-driven simulator all build a :class:`ClusterView` and accept the same
five actions (:class:`Backend`).  The decision core reads views and returns
:class:`Decisions`; it never talks to a batch system, a clock or the simulator.

All per-job data is held as a struct of NumPy arrays (one row per job) so that an
agent can score thousands of pending jobs in one vectorised call.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

IntArray = NDArray[np.int64]
FloatArray = NDArray[np.float64]
BoolArray = NDArray[np.bool_]

#: P-grid §4.2: a job whose runtime is under 15 minutes counts as interactive.
INTERACTIVE_THRESHOLD_S = 900.0


class JobClass(IntEnum):
    """The two job classes of Perez et al. (P-grid §3.2)."""

    BATCH = 0
    INTERACTIVE = 1


def _empty_int() -> IntArray:
    return np.zeros(0, dtype=np.int64)


def _empty_float() -> FloatArray:
    return np.zeros(0, dtype=np.float64)


def _check_lengths(obj: object, names: Sequence[str]) -> None:
    first = len(getattr(obj, names[0]))
    for name in names:  # every view checks this: a plain loop, the message only on failure
        if len(getattr(obj, name)) != first:
            lengths = {name: len(getattr(obj, name)) for name in names}
            raise ValueError(f"{type(obj).__name__}: columns differ in length: {lengths}")


def _check_optional(obj: PendingJobs | RunningJobs, name: str) -> None:
    """An optional column is empty (unknown) or has one value per job."""
    if len(getattr(obj, name)) not in (0, len(obj.job_id)):
        raise ValueError(f"{type(obj).__name__}: {name} must be empty (unknown) or one per job")


#: The user id of a job whose user the view does not know.
UNKNOWN_USER = -1


def _known_or(column: IntArray, n: int, unknown: int) -> IntArray:
    """An optional column of ``n`` jobs: itself where it has one value per job, else ``unknown`` for each."""
    return column if len(column) == n else np.full(n, unknown, dtype=np.int64)


def users_of(jobs: PendingJobs | RunningJobs) -> IntArray:
    """The jobs' user ids, :data:`UNKNOWN_USER` for each when the view has no user column."""
    return _known_or(jobs.user, len(jobs.job_id), UNKNOWN_USER)


def user_id(name: str) -> int:
    """A live user's id from the name: CRC-32 of it, the same in every process and across restarts (a learned
    runtime predictor keeps its per-user history by this id)."""
    return zlib.crc32(name.encode("utf-8"))


#: The executable id of a job whose program (job name) the view does not know (SWF field 14's -1).
UNKNOWN_EXECUTABLE = -1


def executables_of(jobs: PendingJobs | RunningJobs) -> IntArray:
    """The jobs' executable ids, :data:`UNKNOWN_EXECUTABLE` for each when the view has no executable column."""
    return _known_or(jobs.executable, len(jobs.job_id), UNKNOWN_EXECUTABLE)


def executable_id(job_name: str) -> int:
    """A live job's executable id from its job name (Slurm ``JobName``, PBS ``Job_Name``): CRC-32 of the name,
    the same in every process and across restarts, as :func:`user_id`; :data:`UNKNOWN_EXECUTABLE` for an empty
    name.  A learned runtime predictor keeps a per-(user, executable) history by it: the same user running the
    same program again (SWF field 14, "executable (application) number", in a trace)."""
    name = job_name.strip()
    return zlib.crc32(name.encode("utf-8")) if name else UNKNOWN_EXECUTABLE


@dataclass(frozen=True)
class PendingJobs:
    """Jobs waiting in the queue, in the batch system's current order.

    ``oracle_run_s`` is the actual runtime; only a simulator knows it (it is NaN
    on a live backend).  ``held`` marks jobs that wait for an explicit release.
    ``user`` is the submitting user's id (:func:`user_id` of the name live, the SWF user in a replay); an
    empty column means unknown (:func:`users_of` reads it).  ``executable`` is the job's program id
    (:func:`executable_id` of the job name live, SWF field 14 in a replay, -1 where unknown); an empty column
    means unknown for every job (:func:`executables_of` reads it).
    """

    job_id: IntArray = field(default_factory=_empty_int)
    vo: IntArray = field(default_factory=_empty_int)
    job_class: IntArray = field(default_factory=_empty_int)
    cores: IntArray = field(default_factory=_empty_int)
    req_time_s: FloatArray = field(default_factory=_empty_float)
    submit_s: FloatArray = field(default_factory=_empty_float)
    oracle_run_s: FloatArray = field(default_factory=_empty_float)
    held: BoolArray = field(default_factory=lambda: np.zeros(0, dtype=np.bool_))
    user: IntArray = field(default_factory=_empty_int)
    executable: IntArray = field(default_factory=_empty_int)

    def __post_init__(self) -> None:
        _check_lengths(self, ("job_id", "vo", "job_class", "cores", "req_time_s", "submit_s", "oracle_run_s", "held"))
        _check_optional(self, "user")
        _check_optional(self, "executable")

    def __len__(self) -> int:
        return len(self.job_id)


@dataclass(frozen=True)
class RunningJobs:
    """Jobs holding cores now."""

    job_id: IntArray = field(default_factory=_empty_int)
    vo: IntArray = field(default_factory=_empty_int)
    job_class: IntArray = field(default_factory=_empty_int)
    cores: IntArray = field(default_factory=_empty_int)
    req_time_s: FloatArray = field(default_factory=_empty_float)
    submit_s: FloatArray = field(default_factory=_empty_float)
    start_s: FloatArray = field(default_factory=_empty_float)
    #: Actual runtime, known only to a simulator; NaN on a live backend (an empty array means unknown).
    oracle_run_s: FloatArray = field(default_factory=_empty_float)
    #: The submitting user's id, as in :class:`PendingJobs` (empty: unknown).
    user: IntArray = field(default_factory=_empty_int)
    #: The job's executable id, as in :class:`PendingJobs` (empty: unknown).
    executable: IntArray = field(default_factory=_empty_int)

    def __post_init__(self) -> None:
        _check_lengths(self, ("job_id", "vo", "job_class", "cores", "req_time_s", "submit_s", "start_s"))
        if len(self.oracle_run_s) not in (0, len(self.job_id)):
            raise ValueError("RunningJobs: oracle_run_s must be empty or one per job")
        _check_optional(self, "user")
        _check_optional(self, "executable")

    def __len__(self) -> int:
        return len(self.job_id)


@dataclass(frozen=True)
class FinishedJobs:
    """Jobs that ended since the previous view: what rewards are computed from."""

    job_id: IntArray = field(default_factory=_empty_int)
    vo: IntArray = field(default_factory=_empty_int)
    job_class: IntArray = field(default_factory=_empty_int)
    cores: IntArray = field(default_factory=_empty_int)
    submit_s: FloatArray = field(default_factory=_empty_float)
    start_s: FloatArray = field(default_factory=_empty_float)
    end_s: FloatArray = field(default_factory=_empty_float)

    def __post_init__(self) -> None:
        _check_lengths(self, ("job_id", "vo", "job_class", "cores", "submit_s", "start_s", "end_s"))

    def __len__(self) -> int:
        return len(self.job_id)

    @property
    def wait_s(self) -> FloatArray:
        return self.start_s - self.submit_s

    @property
    def run_s(self) -> FloatArray:
        return self.end_s - self.start_s


@dataclass(frozen=True)
class CloudState:
    """Leasable cloud nodes (docs/leasing-live.md): the cap and what is in use."""

    cap: int
    nodes_total: int
    nodes_powered: int
    nodes_busy: int
    cores_per_node: int = 1


@dataclass(frozen=True)
class ClusterView:
    """Everything a policy may know at ``time_s`` (seconds; epoch or trace-relative).

    ``vos`` names the VO (account) indices used in the job tables; ``vo_shares``
    gives their target shares when the site has configured them.  ``polled_s`` is when a live backend
    began reading the batch system for this view (``time_s`` is when it had read it all, later by the
    reads' duration): a job pending in the view had not started at ``polled_s``, but may have started
    before ``time_s``.  None where the view is a snapshot of one instant (the simulator).
    """

    time_s: float
    total_cores: int
    idle_cores: int
    pending: PendingJobs
    running: RunningJobs
    finished: FinishedJobs
    vos: tuple[str, ...] = ()
    vo_shares: tuple[float, ...] | None = None
    cloud: CloudState | None = None
    polled_s: float | None = None

    def __post_init__(self) -> None:
        if self.polled_s is not None and not self.polled_s <= self.time_s:
            raise ValueError(f"polled_s {self.polled_s} after time_s {self.time_s}")
        if self.idle_cores < 0 or self.idle_cores > self.total_cores:
            raise ValueError(f"idle_cores {self.idle_cores} outside 0..{self.total_cores}")
        if self.vo_shares is not None and len(self.vo_shares) != len(self.vos):
            raise ValueError("vo_shares and vos differ in length")


@dataclass(frozen=True)
class Decisions:
    """What an agent wants done; a backend applies it (decide is kept apart from act).

    - ``boost``: pending job ids that should start first, in this order (None: no change).
    - ``release``: held job ids to let go now, in this order.
    - ``hold``: pending job ids to hold.
    - ``lease_cap``: the cap V on leased cloud nodes for the next period (None: no change).
    """

    boost: tuple[int, ...] | None = None
    release: tuple[int, ...] = ()
    hold: tuple[int, ...] = ()
    lease_cap: int | None = None

    @property
    def empty(self) -> bool:
        return self.boost is None and not self.release and not self.hold and self.lease_cap is None


@runtime_checkable
class Backend(Protocol):
    """The five calls every batch system (and the simulator) offers to rlsched."""

    def view(self) -> ClusterView:
        """The current state, including the jobs finished since the previous call."""
        ...

    def boost(self, ranked_job_ids: Sequence[int]) -> None:
        """Make these pending jobs go first, in this order; replaces the previous boost."""
        ...

    def release(self, job_id: int) -> None:
        """Let a held job be scheduled."""
        ...

    def hold(self, job_id: int) -> None:
        """Keep a pending job from starting until it is released."""
        ...

    def set_lease_cap(self, n: int) -> None:
        """Allow at most ``n`` leased cloud nodes from now on."""
        ...


def apply(decisions: Decisions, backend: Backend) -> None:
    """Carry out ``decisions`` on ``backend``: holds first, then boost, releases, lease cap."""
    for job_id in decisions.hold:
        backend.hold(job_id)
    if decisions.boost is not None:
        backend.boost(decisions.boost)
    for job_id in decisions.release:
        backend.release(job_id)
    if decisions.lease_cap is not None:
        backend.set_lease_cap(decisions.lease_cap)


class Agent(Protocol):
    """A policy: a view in, decisions out.  Learning agents also read ``view.finished``."""

    def decide(self, view: ClusterView) -> Decisions: ...


@runtime_checkable
class ScoringAgent(Protocol):
    """Optional beside :class:`Agent`: how much the agent wants each pending job started now.

    ``pending_scores(view)[i]`` scores ``view.pending`` row ``i``; higher goes first, so sorting by
    descending score gives the agent's order.  It must not learn or change the agent (the daemon calls it
    after ``decide`` to log and show the ranking).
    """

    def pending_scores(self, view: ClusterView) -> FloatArray: ...
