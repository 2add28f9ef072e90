"""Runtime models: what a policy believes a job's execution time to be.

P-grid §3.2 ("Workload Descriptors") and P-fqi §3.3 compare two models:

- ``oracle``: the actual runtime, known at submission.  Only a simulator knows it
  (:attr:`PendingJobs.oracle_run_s`); it is the upper bound of the RL schedulers.
- ``estimated``: "a very crude estimate of the execution time by the median of the
  execution times for the batch and interactive jobs, respectively, along an extended
  time window".  Here the window is the last ``window`` finished jobs of each class,
  fed from ``view.finished``.

A live backend can also use ``requested``: the user's time limit (``req_time_s``), and the
predictors of :mod:`rlsched.core.prediction` (:class:`PredictedRuntime`): ``user-last2``
(EASY++: the mean of the user's last two runtimes) and ``learned`` (an online regression).

Every model answers for pending jobs and for running jobs (the state descriptors of
P-grid §3.2 need the remaining work of running jobs).  Running jobs carry no oracle
runtime in :class:`RunningJobs`, so the oracle model remembers the runtimes it saw
while the jobs were pending and falls back to the estimated model for jobs it never
saw pending (a job submitted and started between two views).
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from typing import Any, Literal, Protocol

import numpy as np

from rlsched.core.prediction import RuntimePredictor, make_predictor, predictor_from_state, raise_outlived
from rlsched.core.view import (
    INTERACTIVE_THRESHOLD_S,
    ClusterView,
    FloatArray,
    IntArray,
    JobClass,
    PendingJobs,
    RunningJobs,
    executables_of,
    users_of,
)

RuntimeModelName = Literal["oracle", "estimated", "requested", "user-last2", "learned"]
RUNTIME_MODELS: tuple[RuntimeModelName, ...] = ("oracle", "estimated", "requested", "user-last2", "learned")

#: Before any job of a class has finished and without a usable requested time, the
#: estimate is this prior: half the 900-s interactive bound of P-grid §4.2 for
#: interactive jobs, and the bound itself (the shortest possible batch job) for batch.
CLASS_PRIOR_S: dict[int, float] = {
    int(JobClass.BATCH): INTERACTIVE_THRESHOLD_S,
    int(JobClass.INTERACTIVE): INTERACTIVE_THRESHOLD_S / 2.0,
}

#: Default sliding window: the last 1000 finished jobs of each class.  P-grid only
#: says "an extended time window"; 1000 jobs is about a week of the LAL trace
#: (9,500 jobs in 7 weeks, P-grid Table 1).
DEFAULT_WINDOW_JOBS = 1000


class RuntimeModel(Protocol):
    """Runtime beliefs for pending and running jobs (seconds, finite, > 0)."""

    name: RuntimeModelName

    def observe(self, view: ClusterView) -> None:
        """Learn from a view (finished jobs, pending oracle runtimes); call once per view."""
        ...

    def pending(self, jobs: PendingJobs) -> FloatArray:
        """Believed execution time of each pending job."""
        ...

    def running(self, jobs: RunningJobs) -> FloatArray:
        """Believed total execution time of each running job (not the remainder)."""
        ...


def _class_prior(job_class: IntArray) -> FloatArray:
    return np.where(
        job_class == int(JobClass.INTERACTIVE),
        CLASS_PRIOR_S[int(JobClass.INTERACTIVE)],
        CLASS_PRIOR_S[int(JobClass.BATCH)],
    )


def _usable_requested(req_time_s: FloatArray, job_class: IntArray) -> FloatArray:
    """Requested times, with missing (NaN, ≤ 0, inf) ones replaced by the class prior."""
    ok = np.isfinite(req_time_s) & (req_time_s > 0)
    if ok.all():  # every request usable (most views): no prior to compute
        return np.array(req_time_s, dtype=np.float64)
    return np.where(ok, req_time_s, _class_prior(job_class))


#: Public name of the requested-time rule (the static EDF key of :mod:`rlsched.core.policies` uses it).
usable_requested = _usable_requested


class RequestedRuntime:
    """The user's requested time (wall-clock limit) as the runtime."""

    name: RuntimeModelName = "requested"

    def observe(self, view: ClusterView) -> None:
        """Nothing to learn: the requested time is a property of the job."""

    def pending(self, jobs: PendingJobs) -> FloatArray:
        return _usable_requested(jobs.req_time_s, jobs.job_class)

    def running(self, jobs: RunningJobs) -> FloatArray:
        return _usable_requested(jobs.req_time_s, jobs.job_class)


def _sorted_median(values: list[float]) -> float:
    """``np.median`` of a sorted, non-empty list (the same arithmetic: the two middle values' mean)."""
    half = len(values) // 2
    if len(values) % 2:
        return values[half]
    return (values[half - 1] + values[half]) / 2


class EstimatedRuntime:
    """Median runtime of the job's class over the last ``window`` finished jobs of that class.

    P-grid §3.2 and P-fqi §3.3 (the ``estimated``/EST model).  Until a class has a
    finished job, the requested time stands in (or the class prior when there is none).
    """

    name: RuntimeModelName = "estimated"

    def __init__(self, window: int = DEFAULT_WINDOW_JOBS) -> None:
        if window < 1:
            raise ValueError(f"estimated runtime model: window must be ≥ 1, got {window}")
        self.window = window
        n_classes = len(JobClass)
        self._ring = np.zeros((n_classes, window), dtype=np.float64)
        self._count = np.zeros(n_classes, dtype=np.int64)  # total ever seen per class
        self._median = np.full(n_classes, np.nan)
        # Each window's runtimes, kept sorted: a finished job costs a binary search, not a median.
        self._sorted: list[list[float]] = [[] for _ in range(n_classes)]

    def observe(self, view: ClusterView) -> None:
        self.observe_finished(view.finished.job_class, view.finished.run_s)

    def observe_finished(self, job_class: IntArray, run_s: FloatArray) -> None:
        """Add finished jobs (in completion order) to the per-class windows."""
        if run_s.size == 0:  # most views: nothing finished since the last one
            return
        for cls in range(len(JobClass)):
            runs = run_s[(job_class == cls) & np.isfinite(run_s)]
            if runs.size == 0:
                continue
            window = self._sorted[cls]
            for run in runs[-self.window :].tolist():  # older ones would be overwritten anyway
                slot = int(self._count[cls]) % self.window
                if self._count[cls] >= self.window:
                    del window[bisect.bisect_left(window, float(self._ring[cls, slot]))]
                bisect.insort(window, run)
                self._ring[cls, slot] = run
                self._count[cls] += 1
            self._median[cls] = _sorted_median(window)

    def class_medians(self) -> FloatArray:
        """Current median per class (NaN where no job of that class has finished)."""
        return self._median.copy()

    def _estimate(self, job_class: IntArray, req_time_s: FloatArray) -> FloatArray:
        median = np.take(self._median, job_class, mode="clip")
        if self._count.all():  # every class has a median: the requested times are not needed
            return median
        return np.where(np.isnan(median), _usable_requested(req_time_s, job_class), median)

    def pending(self, jobs: PendingJobs) -> FloatArray:
        return self._estimate(jobs.job_class, jobs.req_time_s)

    def running(self, jobs: RunningJobs) -> FloatArray:
        return self._estimate(jobs.job_class, jobs.req_time_s)

    def state_arrays(self) -> dict[str, np.ndarray]:
        """The window contents, for checkpoints."""
        return {"ring": self._ring.copy(), "count": self._count.copy(), "median": self._median.copy()}

    def load_state_arrays(self, arrays: dict[str, np.ndarray]) -> None:
        if arrays["ring"].shape != self._ring.shape:
            raise ValueError(
                f"estimated runtime state: window {arrays['ring'].shape[1]} does not match this model's {self.window}"
            )
        self._ring = arrays["ring"].astype(np.float64)
        self._count = arrays["count"].astype(np.int64)
        self._median = arrays["median"].astype(np.float64)
        self._sorted = [
            sorted(self._ring[cls, : min(int(self._count[cls]), self.window)].tolist()) for cls in range(len(JobClass))
        ]


class OracleRuntime:
    """The actual runtime (simulation only), P-grid §3.2 ``oracle`` model.

    Pending jobs: :attr:`PendingJobs.oracle_run_s`.  Running jobs: the value seen
    while the job was pending; jobs never seen pending (or with NaN oracle runtime,
    as on a live backend) fall back to the :class:`EstimatedRuntime` it also maintains.
    """

    name: RuntimeModelName = "oracle"

    def __init__(self, window: int = DEFAULT_WINDOW_JOBS) -> None:
        self.fallback = EstimatedRuntime(window)
        self._last_pending_ids: IntArray = np.zeros(0, dtype=np.int64)
        self._last_pending_run: FloatArray = np.zeros(0, dtype=np.float64)
        self._running_run: dict[int, float] = {}

    def observe(self, view: ClusterView) -> None:
        self.fallback.observe(view)
        running_ids = view.running.job_id
        # Jobs that started since the previous view: look their runtime up among the
        # jobs that were pending then (one sorted search, no per-pending-job Python work).
        unknown = np.array([jid not in self._running_run for jid in running_ids.tolist()], dtype=bool)
        if unknown.any() and self._last_pending_ids.size:
            order = np.argsort(self._last_pending_ids, kind="stable")
            sorted_ids = self._last_pending_ids[order]
            wanted = running_ids[unknown]
            pos = np.clip(np.searchsorted(sorted_ids, wanted), 0, sorted_ids.size - 1)
            hit = sorted_ids[pos] == wanted
            runs = self._last_pending_run[order[pos]]
            for jid, run, ok in zip(wanted.tolist(), runs.tolist(), hit.tolist(), strict=True):
                if ok and np.isfinite(run):
                    self._running_run[jid] = run
        alive = set(running_ids.tolist())
        for jid in [j for j in self._running_run if j not in alive]:
            del self._running_run[jid]
        self._last_pending_ids = view.pending.job_id
        self._last_pending_run = view.pending.oracle_run_s

    def pending(self, jobs: PendingJobs) -> FloatArray:
        oracle = jobs.oracle_run_s
        ok = np.isfinite(oracle) & (oracle > 0)
        if ok.all():
            return oracle.astype(np.float64, copy=True)
        return np.where(ok, oracle, self.fallback.pending(jobs))

    def running(self, jobs: RunningJobs) -> FloatArray:
        known = np.array([self._running_run.get(jid, np.nan) for jid in jobs.job_id.tolist()], dtype=np.float64)
        return np.where(np.isnan(known), self.fallback.running(jobs), known)


class PredictedRuntime:
    """A :class:`rlsched.core.prediction.RuntimePredictor` as a runtime model (``user-last2``, ``learned``).

    :meth:`observe` feeds the predictor the jobs finished since the previous view (the completion feed live,
    the replay's ends in the simulator), then predicts the jobs it sees for the first time, in that order —
    the order in which the simulator's rule priority (:mod:`rlsched.sim.rules`) feeds the same predictor.
    Pending jobs keep the prediction made when they were first seen; a running job that outlives its
    prediction gets it raised (:func:`rlsched.core.prediction.raise_outlived`), never past its request.

    The predictor keys a VO by its name's position in :attr:`vo_names`, not by the view's VO index: without a
    fixed VO list a live view numbers VOs as it meets them, so one VO may have another index after a restart,
    or live than in the history the predictor was warmed on.  A view with VO names maps each to its key (a new
    name gets the next one); a view without names is keyed by index.  In a replay the view's names are the
    workload's, in index order, so the keys are the indices.
    """

    def __init__(self, predictor: RuntimePredictor) -> None:
        self._predictor = predictor
        self.name: RuntimeModelName = predictor.name
        self._now = -np.inf
        #: The jobs of the last view (pending, running): the only remembered ones that can still finish.
        self._live: tuple[IntArray, IntArray] | None = None
        #: Whether the predictor is still as built: it has seen no view and was restored from no state.
        self.fresh = True
        #: The VO names the predictor's VO keys stand for (key k: ``vo_names[k]``), kept in the state.
        self.vo_names: list[str] = []
        self._view_vos: tuple[str, ...] = ()
        self._vo_keys: IntArray = np.zeros(0, dtype=np.int64)  # the last view's VO index → key
        #: Per table ("pending", "running"): the last jobs object predicted, its predictions and usable requests.
        #: A view's tables are predicted in observe and again by the policy, and a replay hands over the previous
        #: view's objects while no job came or went; a job's prediction is made once and kept until the job
        #: finishes, and a finished job is in no table, so the same object has the same predictions.
        self._memo: dict[str, tuple[PendingJobs | RunningJobs, FloatArray, FloatArray]] = {}
        #: The predictions of the last view's jobs (pending and running), by job id in increasing order: a table
        #: asks the predictor only for the jobs it has not seen (most of a view's jobs were in the one before),
        #: which gives the same predictions, as the predictor keeps each job's until the job finishes.
        self._seen_ids: IntArray = np.zeros(0, dtype=np.int64)
        self._seen_pred: FloatArray = np.zeros(0)

    @property
    def predictor(self) -> RuntimePredictor:
        return self._predictor

    @predictor.setter
    def predictor(self, predictor: RuntimePredictor) -> None:
        """Another predictor (warmed on a window's past, restored) predicts anew: the kept predictions go."""
        self._predictor = predictor
        self._forget_seen()

    def state(self) -> dict[str, Any]:
        """The predictor's learned state (:meth:`rlsched.core.prediction.RuntimePredictor.state`), for the
        daemon to keep across restarts.  Of the jobs predicted but not finished, only those of the last view are
        kept: the others were cancelled or left the view (jobs cancelled while pending are remembered until
        :data:`~rlsched.core.prediction.MAX_REMEMBERED_JOBS` push them out, which would make the file large).
        Before any view, all are kept."""
        keep = None if self._live is None else set(np.concatenate(self._live).tolist())
        return {**self.predictor.state(keep), "vo_names": list(self.vo_names)}

    def restore(self, data: Mapping[str, Any]) -> None:
        """Go on from a state :meth:`state` wrote (ValueError naming the bad key, or another predictor's).  A
        state without ``vo_names`` (written before they were kept) keys VOs by the views' indices, as it did."""
        predictor = predictor_from_state(data)
        if predictor.name != self.name:
            raise ValueError(f"runtime predictor state: key 'predictor': {predictor.name!r}, not {self.name!r}")
        names = data.get("vo_names", [])
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names) or len(set(names)) < len(names):
            raise ValueError("runtime predictor state: key 'vo_names': expected a list of distinct names")
        self.predictor = predictor
        self.key_vos(names)
        self.fresh = False

    def key_vos(self, names: Sequence[str]) -> None:
        """Key the VOs ``names`` by their positions (before the predictor learns a history keyed so)."""
        self.vo_names = list(names)
        self._view_vos = ()
        self._vo_keys = np.zeros(0, dtype=np.int64)
        self._forget_seen()

    def _forget_seen(self) -> None:
        """Forget the predictions of the jobs seen (another predictor, or VOs keyed anew, would predict others)."""
        self._memo.clear()
        self._seen_ids = np.zeros(0, dtype=np.int64)
        self._seen_pred = np.zeros(0)

    def _map_vos(self, view_vos: tuple[str, ...]) -> None:
        """The view's VO index → key, each name at its position in :attr:`vo_names` (appended when new)."""
        position = {name: k for k, name in enumerate(self.vo_names)}
        for name in view_vos:
            if name not in position:
                position[name] = len(self.vo_names)
                self.vo_names.append(name)
        self._view_vos = view_vos
        keys = np.array([position[name] for name in view_vos], dtype=np.int64)
        # Keys equal to the indices (a replay, a fixed VO list) need no translation.
        self._vo_keys = np.zeros(0, dtype=np.int64) if np.array_equal(keys, np.arange(len(keys))) else keys

    def _keys_of(self, vo: IntArray) -> IntArray:
        """The predictor's keys of the view's VO indices (the index itself beyond the view's names)."""
        keys = self._vo_keys
        if not len(keys) or not len(vo):
            return vo
        inside = (vo >= 0) & (vo < len(keys))
        return np.where(inside, keys[np.clip(vo, 0, len(keys) - 1)], vo)

    def observe(self, view: ClusterView) -> None:
        self.fresh = False
        self._now = view.time_s
        if view.vos != self._view_vos:
            self._map_vos(tuple(view.vos))
        self._live = (view.pending.job_id, view.running.job_id)
        done = view.finished
        for job_id, run in zip(done.job_id.tolist(), done.run_s.tolist(), strict=True):
            self.predictor.finished(job_id, run)
        pending = self._predicted("pending", view.pending)[0]
        running = self._predicted("running", view.running)[0]
        ids = np.concatenate([view.pending.job_id, view.running.job_id])
        order = np.argsort(ids, kind="stable")
        self._seen_ids, self._seen_pred = ids[order], np.concatenate([pending, running])[order]

    def _predict(
        self,
        job_id: IntArray,
        user: IntArray,
        vo: IntArray,
        cores: IntArray,
        request: FloatArray,
        submit_s: FloatArray,
        executable: IntArray,
    ) -> FloatArray:
        predict = self.predictor.predict
        vo = self._keys_of(vo)
        return np.array(
            [
                predict(j, u, v, c, r, s, e)
                for j, u, v, c, r, s, e in zip(
                    job_id.tolist(),
                    user.tolist(),
                    vo.tolist(),
                    cores.tolist(),
                    request.tolist(),
                    submit_s.tolist(),
                    executable.tolist(),
                    strict=True,
                )
            ],
            dtype=np.float64,
        )

    def _predicted(self, table: str, jobs: PendingJobs | RunningJobs) -> tuple[FloatArray, FloatArray]:
        """The predictions of ``jobs`` (made now for the jobs seen for the first time) and their usable requests,
        remembered for the same object (:attr:`_memo`)."""
        memo = self._memo.get(table)
        if memo is not None and memo[0] is jobs:
            return memo[1], memo[2]
        request = _usable_requested(jobs.req_time_s, jobs.job_class)
        ids = jobs.job_id
        predicted = np.empty(len(ids))
        seen = np.zeros(len(ids), dtype=bool)
        if len(self._seen_ids):
            at = np.minimum(np.searchsorted(self._seen_ids, ids), len(self._seen_ids) - 1)
            seen = self._seen_ids[at] == ids
            predicted[seen] = self._seen_pred[at[seen]]
        new = np.flatnonzero(~seen)  # in the table's order, as the predictor would have met them
        if len(new):
            users, executables = users_of(jobs), executables_of(jobs)
            predicted[new] = self._predict(
                ids[new], users[new], jobs.vo[new], jobs.cores[new], request[new], jobs.submit_s[new], executables[new]
            )
        self._memo[table] = (jobs, predicted, request)
        return predicted, request

    def pending(self, jobs: PendingJobs) -> FloatArray:
        return self._predicted("pending", jobs)[0].copy()

    def running(self, jobs: RunningJobs) -> FloatArray:
        predicted, request = self._predicted("running", jobs)
        elapsed = np.maximum(self._now - jobs.start_s, 0.0) if np.isfinite(self._now) else np.zeros(len(jobs))
        return raise_outlived(predicted, elapsed, request)


def make_runtime_model(name: str, window: int = DEFAULT_WINDOW_JOBS) -> RuntimeModel:
    """Build a runtime model by name: ``oracle``, ``estimated``, ``requested``, ``user-last2`` or ``learned``."""
    if name in ("user-last2", "learned"):
        return PredictedRuntime(make_predictor(name))
    if name == "oracle":
        return OracleRuntime(window)
    if name == "estimated":
        return EstimatedRuntime(window)
    if name == "requested":
        return RequestedRuntime()
    raise ValueError(f"unknown runtime model {name!r}; expected one of {', '.join(RUNTIME_MODELS)}")
