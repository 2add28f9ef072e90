"""State and action features of the scheduling MDP (P-grid §3.2, P-fqi §3.3).

State (real-valued), from a :class:`ClusterView` and a runtime model:

1. the total workload of running jobs (remaining core-seconds, per core of the pool);
2. the time before a resource becomes available (0 when a core is idle);
3. the backlog: the work of the queued jobs (core-seconds, per core of the pool);
4. the number of idle cores (as a fraction of the pool);
5. the proportion of queued jobs of each VO (one column per configured VO);
6. (``include_class_queue``, on by default; beyond the papers) the queued jobs of each
   class, ``n / (n + pool cores)``: 0 for none, 1/2 for as many as the pool has cores.

Why 6: the papers' state describes the queue by VO and by work, never by class, yet the
responsiveness the queue loses while it waits is almost all interactive (an interactive
job's W halves within a few minutes of waiting, a batch job's hardly moves).  Without it,
the value of a state cannot tell "interactive jobs are waiting" from "batch jobs are
waiting", and a regression of the rewards on (state, action) confounds the effect of the
chosen job's class with the queue it was chosen from (interactive jobs are elected exactly
when interactive jobs queue and lose W).  Measured on tuning seeds with
``benchmarks/diag_perez_learning.py``: see :class:`rlsched.core.agents.SchedulingAgent`.

Action: one pending job, described by its class (batch/interactive, one-hot), its VO
(one-hot over the configured VOs) and its execution time under the runtime model.
Two optional descriptors go beyond the papers and are off by default: the time the
job has already waited, and its size (cores / pool) for multi-core traces.

Normalisation.  Times and work span six decades (seconds to weeks, P-grid Table 1),
so every time-like column is ``log1p(t / time_unit) / log1p(time_ref / time_unit)``:
0 for nothing, 1 for ``time_ref`` (a week by default), about 0.5 for an hour.  The
other columns are already fractions.  The transform is fixed by :class:`FeatureConfig`
rather than fitted to data on purpose: the learners store encoded rows (for the ESN,
reservoir states driven by these inputs), which a later re-fit of the normalisation
would silently invalidate.  The config is saved with the model.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from rlsched.core.runtime import RuntimeModel
from rlsched.core.view import ClusterView, FloatArray, JobClass, PendingJobs


@dataclass(frozen=True)
class FeatureConfig:
    """What the features contain and how they are scaled (saved with every model)."""

    n_vos: int
    time_unit_s: float = 60.0
    time_ref_s: float = 7 * 86400.0
    include_wait: bool = False
    include_cores: bool = False
    include_class_queue: bool = True

    def __post_init__(self) -> None:
        if self.n_vos < 1:
            raise ValueError(f"feature config: n_vos must be ≥ 1, got {self.n_vos}")
        if not 0 < self.time_unit_s < self.time_ref_s:
            raise ValueError(
                f"feature config: need 0 < time_unit_s < time_ref_s, got {self.time_unit_s}, {self.time_ref_s}"
            )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FeatureConfig:
        known = set(cls.__dataclass_fields__)
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"feature config: unknown key(s) {sorted(unknown)}")
        # Models saved before the class-queue columns existed were trained without them.
        return cls(**{"include_class_queue": False, **data})


@dataclass
class StateAggregates:
    """The raw quantities behind the state vector, updatable as jobs are started one by one.

    ``running_remaining_s`` holds the believed remaining time of each running job (one
    entry per job, repeated per core is unnecessary: ``running_cores`` weights it).
    """

    total_cores: int
    idle_cores: int
    running_remaining_s: FloatArray
    running_cores: FloatArray
    backlog_core_s: float
    vo_counts: FloatArray
    n_pending: int
    class_counts: FloatArray = field(default_factory=lambda: np.zeros(len(JobClass)))

    def start(self, cores: int, run_s: float, vo: int, job_class: int = -1) -> None:
        """Account for starting one pending job (used between successive picks of one view)."""
        self.idle_cores -= cores
        self.running_remaining_s = np.append(self.running_remaining_s, run_s)
        self.running_cores = np.append(self.running_cores, float(cores))
        self.backlog_core_s = max(self.backlog_core_s - run_s * cores, 0.0)
        if 0 <= vo < self.vo_counts.size:
            self.vo_counts[vo] -= 1.0
        if 0 <= job_class < self.class_counts.size:
            self.class_counts[job_class] -= 1.0
        self.n_pending -= 1

    def time_to_free_s(self) -> float:
        if self.idle_cores > 0 or self.running_remaining_s.size == 0:
            return 0.0
        return float(np.min(self.running_remaining_s))


class FeatureEncoder:
    """Turns views into normalised state vectors and pending jobs into action rows."""

    def __init__(self, config: FeatureConfig) -> None:
        self.config = config
        self._log_ref = float(np.log1p(config.time_ref_s / config.time_unit_s))
        #: The names of ``_names_of``'s config (an agent asks for the action width at every decision, and a
        #: trace's VOs can be hundreds: the names are made once per config).
        self._names_of: FeatureConfig | None = None
        self._names: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())

    # -- names and sizes ----------------------------------------------------------------
    def _state_and_action_names(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        config = self.config
        if self._names_of is not config:
            vos = tuple(f"queue_share_vo{k}" for k in range(config.n_vos))
            by_class = ("queued_batch", "queued_interactive") if config.include_class_queue else ()
            state = ("running_work", "time_to_free", "backlog", "idle_fraction", *vos, *by_class)
            action = ["class_batch", "class_interactive", *(f"vo{k}" for k in range(config.n_vos)), "runtime"]
            if config.include_wait:
                action.append("waited")
            if config.include_cores:
                action.append("cores_fraction")
            self._names, self._names_of = (state, tuple(action)), config
        return self._names

    @property
    def state_names(self) -> tuple[str, ...]:
        return self._state_and_action_names()[0]

    @property
    def action_names(self) -> tuple[str, ...]:
        return self._state_and_action_names()[1]

    @property
    def state_dim(self) -> int:
        return len(self.state_names)

    @property
    def action_dim(self) -> int:
        return len(self.action_names)

    # -- transforms -----------------------------------------------------------------------
    def log_time(self, seconds: FloatArray | float) -> FloatArray:
        """``log1p(t / time_unit) / log1p(time_ref / time_unit)``; negative times count as 0."""
        t = np.maximum(np.asarray(seconds, dtype=np.float64), 0.0)
        return np.log1p(t / self.config.time_unit_s) / self._log_ref

    # -- state ----------------------------------------------------------------------------
    def aggregates(
        self, view: ClusterView, runtime: RuntimeModel, pending_run_s: FloatArray | None = None
    ) -> StateAggregates:
        """Raw state quantities of ``view`` (``pending_run_s``: the runtimes, if already computed)."""
        run = view.running
        believed = runtime.running(run)
        remaining = np.maximum(run.start_s + believed - view.time_s, 0.0)
        pend = view.pending
        pend_run = runtime.pending(pend) if pending_run_s is None else pending_run_s
        n_vos = self.config.n_vos
        valid = (pend.vo >= 0) & (pend.vo < n_vos)
        vo_counts = np.bincount(pend.vo[valid], minlength=n_vos).astype(np.float64)
        known = (pend.job_class >= 0) & (pend.job_class < len(JobClass))
        class_counts = np.bincount(pend.job_class[known], minlength=len(JobClass)).astype(np.float64)
        return StateAggregates(
            total_cores=view.total_cores,
            idle_cores=view.idle_cores,
            running_remaining_s=remaining,
            running_cores=run.cores.astype(np.float64),
            backlog_core_s=float(np.dot(pend_run, pend.cores)),
            vo_counts=vo_counts,
            n_pending=len(pend),
            class_counts=class_counts,
        )

    def state_vector(self, agg: StateAggregates) -> FloatArray:
        per_core = float(max(agg.total_cores, 1))
        running_work = float(np.dot(agg.running_remaining_s, agg.running_cores))
        head = np.array(
            [
                self.log_time(running_work / per_core),
                self.log_time(agg.time_to_free_s()),
                self.log_time(agg.backlog_core_s / per_core),
                agg.idle_cores / per_core,
            ]
        )
        shares = agg.vo_counts / agg.n_pending if agg.n_pending > 0 else np.zeros_like(agg.vo_counts)
        if not self.config.include_class_queue:
            return np.concatenate([head, shares])
        queued = agg.class_counts[[int(JobClass.BATCH), int(JobClass.INTERACTIVE)]]
        return np.concatenate([head, shares, queued / (queued + per_core)])

    def state(self, view: ClusterView, runtime: RuntimeModel) -> FloatArray:
        """The normalised state vector of ``view``."""
        return self.state_vector(self.aggregates(view, runtime))

    # -- actions --------------------------------------------------------------------------
    def actions(self, jobs: PendingJobs, run_s: FloatArray, now_s: float, total_cores: int) -> FloatArray:
        """One normalised action row per pending job (``run_s``: runtimes under the runtime model)."""
        n = len(jobs)
        n_vos = self.config.n_vos
        out = np.zeros((n, self.action_dim), dtype=np.float64)
        rows = np.arange(n)
        cls = jobs.job_class
        out[rows[cls == int(JobClass.BATCH)], 0] = 1.0
        out[rows[cls == int(JobClass.INTERACTIVE)], 1] = 1.0
        valid = (jobs.vo >= 0) & (jobs.vo < n_vos)
        out[rows[valid], 2 + jobs.vo[valid]] = 1.0  # unknown VOs: all zeros
        col = 2 + n_vos
        out[:, col] = self.log_time(run_s)
        if self.config.include_wait:
            col += 1
            out[:, col] = self.log_time(now_s - jobs.submit_s)
        if self.config.include_cores:
            col += 1
            out[:, col] = jobs.cores / float(max(total_cores, 1))
        return out

    def null_action(self) -> FloatArray:
        """The row of "no job" (all descriptors zero), used for pool-only decisions."""
        return np.zeros(self.action_dim, dtype=np.float64)
