"""A workload: the jobs a simulation replays, as a struct of NumPy arrays.

Both the SWF reader (:mod:`rlsched.sim.traces.swf`) and the synthetic generators
(:mod:`rlsched.sim.workloads`) produce a :class:`Workload`.  Jobs are sorted by
submit time (stable, so ties keep trace order).  Times are seconds relative to
the start of the workload.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from rlsched.core.classify import ClassRule
from rlsched.core.prediction import JobHistory
from rlsched.core.runtime import usable_requested
from rlsched.core.view import INTERACTIVE_THRESHOLD_S, BoolArray, FloatArray, IntArray, JobClass

#: The per-job columns, in the order they are printed and saved.
JOB_COLUMNS = (
    "job_id",
    "submit",
    "run",
    "req_time",
    "procs",
    "user",
    "group",
    "queue",
    "partition",
    "executable",
    "recorded_wait",
    "vo",
    "job_class",
)


@dataclass(frozen=True)
class Workload:
    """Jobs plus the machine they were recorded on.

    Columns (one row per job):
      ``job_id`` SWF job number; ``submit`` submit time (s); ``run`` actual runtime (s);
      ``req_time`` requested runtime (s); ``procs`` cores; ``user``/``group``/``queue``/
      ``partition`` SWF ids (-1 unknown); ``executable`` the SWF executable (application) id, what a
      live scheduler knows as the job's name or script (-1 unknown); ``recorded_wait`` the wait the trace recorded
      (NaN unknown: synthetic workloads); ``vo`` index into ``vo_names``; ``job_class``
      :class:`JobClass` value.

    ``dropped`` counts jobs removed by reason, ``fixed`` counts fields repaired by rule
    (both documented in docs/traces.md); ``header`` holds the trace header fields.
    """

    name: str
    max_procs: int
    job_id: IntArray
    submit: FloatArray
    run: FloatArray
    req_time: FloatArray
    procs: IntArray
    user: IntArray
    group: IntArray
    queue: IntArray
    partition: IntArray
    executable: IntArray
    recorded_wait: FloatArray
    vo: IntArray
    job_class: IntArray
    vo_names: tuple[str, ...] = ()
    vo_shares: tuple[float, ...] | None = None
    dropped: dict[str, int] = field(default_factory=dict)
    fixed: dict[str, int] = field(default_factory=dict)
    header: dict[str, str] = field(default_factory=dict)
    unix_start_time: int | None = None
    synthetic: bool = False
    #: The names behind the SWF integer ids, by column (``"user"``, ``"queue"``, ``"partition"``: id → name),
    #: where the trace has them (a ``rlsched history import`` sidecar); they survive :meth:`select`.
    id_names: dict[str, dict[int, str]] = field(default_factory=dict)
    #: The class rule the trace's ``job_class`` was derived with (a ``ClassRule.to_dict()``), where recorded.
    class_rule: dict[str, Any] | None = None
    #: The jobs that ran before these (:meth:`window`): a replay's runtime predictors learn them first, as a
    #: daemon running since then would have (:func:`rlsched.core.prediction.learn_history`).  Kept by
    #: :meth:`jittered` and ``replace``; :meth:`select` and :meth:`cut` drop it (the rows before a selection
    #: are not known to have run before it).
    past: JobHistory | None = None
    #: Whether the replayed policies may read ``executable`` (the learned runtime predictor keeps each user's
    #: runtimes per program): True for a ``rlsched history import`` trace, whose ids are the job names' as the
    #: daemon reads them live; False for a public trace unless asked (``rlsched learning --job-names``), so
    #: that a table says what its policies knew.  :attr:`known_executables` applies it.
    programs_known: bool = False

    def __post_init__(self) -> None:
        n = len(self.job_id)
        for name in JOB_COLUMNS:
            if len(getattr(self, name)) != n:
                raise ValueError(
                    f"workload {self.name!r}: column {name} has {len(getattr(self, name))} rows, expected {n}"
                )
        if n and np.any(np.diff(self.submit) < 0):
            raise ValueError(f"workload {self.name!r}: jobs are not sorted by submit time")
        if n and int(self.procs.max()) > self.max_procs:
            raise ValueError(
                f"workload {self.name!r}: a job asks {int(self.procs.max())} cores, machine has {self.max_procs}"
            )
        if n and len(self.vo_names) and int(self.vo.max()) >= len(self.vo_names):
            raise ValueError(f"workload {self.name!r}: vo index beyond vo_names")

    def __len__(self) -> int:
        return len(self.job_id)

    @property
    def has_recorded_waits(self) -> bool:
        return len(self) > 0 and bool(np.isfinite(self.recorded_wait).any())

    @property
    def interactive(self) -> BoolArray:
        return np.asarray(self.job_class == JobClass.INTERACTIVE)

    def names_of(self, column: str) -> list[str]:
        """The per-job names of an id column (``"queue"``, ``"partition"``, ``"user"``): the recorded name where
        :attr:`id_names` has one, else the id as text (``-1`` for unknown)."""
        ids: IntArray = getattr(self, column)
        names = self.id_names.get(column, {})
        return [names.get(i, str(i)) for i in ids.tolist()]

    def select(self, mask_or_index: Any, name: str | None = None) -> Workload:
        """A workload with only the selected rows (boolean mask or sorted index array)."""
        columns = {c: getattr(self, c)[mask_or_index] for c in JOB_COLUMNS}
        return replace(self, name=name or self.name, past=None, **columns)

    @property
    def known_executables(self) -> IntArray:
        """``executable`` where the policies may read it (:attr:`programs_known`), else -1 (unknown) for every job."""
        if self.programs_known:
            return self.executable
        return np.full(len(self.executable), -1, dtype=np.int64)

    def window(self, lo: int, hi: int, name: str | None = None) -> Workload:
        """Jobs ``lo`` … ``hi - 1`` (in submit order) as a window of this workload: its :attr:`past` is every job
        before it, this workload's past included, so the window's replay starts from what they taught."""
        return replace(self.select(np.arange(lo, hi), name), past=self.jobs_before(lo))

    def jobs_before(self, row: int) -> JobHistory:
        """:attr:`past` and this workload's jobs before ``row``, as finished jobs: each ends at submit + recorded
        wait + run (the wait taken as 0 where the trace records none); the request where it is usable, else
        the job class's prior (as every replay reads it)."""
        head = slice(0, row)
        submit = self.submit[head].astype(np.float64)
        run = self.run[head].astype(np.float64)
        wait = np.nan_to_num(self.recorded_wait[head].astype(np.float64), nan=0.0)
        own = JobHistory(
            user=self.user[head],
            vo=self.vo[head],
            cores=self.procs[head],
            request_s=usable_requested(self.req_time[head].astype(np.float64), self.job_class[head]),
            submit_s=submit,
            run_s=run,
            end_s=submit + np.maximum(wait, 0.0) + run,
            executable=self.known_executables[head],
        )
        return own if self.past is None else self.past + own

    def cut(self, start_s: float, end_s: float, name: str | None = None) -> Workload:
        """Jobs submitted in ``[start_s, end_s)``, with submit times shifted to start at 0."""
        w = self.select((self.submit >= start_s) & (self.submit < end_s), name)
        return replace(w, submit=w.submit - start_s)

    def jittered(self, seed: int, spread_s: float, name: str | None = None) -> Workload:
        """The same jobs, each submitted up to ``spread_s`` seconds earlier or later (uniform, from
        ``seed``; never before 0), in submit order: a replay of the trace that differs only by chance,
        to measure how much a result owes to the exact second each job arrived."""
        if spread_s < 0:
            raise ValueError("spread_s must be >= 0")
        rng = np.random.default_rng(seed)
        submit = np.maximum(self.submit + rng.uniform(-spread_s, spread_s, size=len(self)), 0.0)
        order = np.argsort(submit, kind="stable")
        columns = {c: getattr(self, c)[order] for c in JOB_COLUMNS}
        columns["submit"] = submit[order]
        return replace(self, name=name or self.name, **columns)

    def with_max_procs(self, max_procs: int) -> Workload:
        """The same jobs on a machine of another size (jobs larger than it are dropped and counted)."""
        too_big = self.procs > max_procs
        w = self.select(~too_big)
        dropped = dict(self.dropped)
        if too_big.any():
            dropped["procs_exceed_machine"] = dropped.get("procs_exceed_machine", 0) + int(too_big.sum())
        return replace(w, max_procs=max_procs, dropped=dropped)

    def summary(self) -> dict[str, Any]:
        """Job statistics as a JSON-ready dict (what ``rlsched trace info`` prints)."""
        n = len(self)
        out: dict[str, Any] = {
            "name": self.name,
            "jobs": n,
            "max_procs": self.max_procs,
            "synthetic": self.synthetic,
            "dropped": dict(self.dropped),
            "fixed": dict(self.fixed),
        }
        if n == 0:
            return out
        span = float(self.submit[-1] - self.submit[0])
        work = float(np.sum(self.run * self.procs))
        end = float(np.max(self.submit + self.run))
        out.update(
            {
                "span_days": span / 86400.0,
                "interactive_jobs": int(self.interactive.sum()),
                "batch_jobs": int(n - self.interactive.sum()),
                "mean_run_s": float(self.run.mean()),
                "median_run_s": float(np.median(self.run)),
                "mean_procs": float(self.procs.mean()),
                "max_job_procs": int(self.procs.max()),
                "serial_jobs": int((self.procs == 1).sum()),
                "runtime_exceeds_request": int((self.run > self.req_time).sum()),
                "offered_load": work / (self.max_procs * max(end - float(self.submit[0]), 1.0)),
                "vos": len(self.vo_names),
                "has_recorded_waits": self.has_recorded_waits,
            }
        )
        return out


def classify_by_runtime(run: FloatArray, threshold_s: float = INTERACTIVE_THRESHOLD_S) -> IntArray:
    """P-grid §4.2 class rule for traces that carry no class: interactive iff runtime < 15 min."""
    return np.where(run < threshold_s, JobClass.INTERACTIVE, JobClass.BATCH).astype(np.int64)


def make_workload(
    submit: Any,
    run: Any,
    procs: Any,
    *,
    req_time: Any = None,
    max_procs: int,
    vo: Any = None,
    vo_names: tuple[str, ...] = ("default",),
    job_class: Any = None,
    name: str = "custom",
) -> Workload:
    """A workload from plain sequences (hand-built tests, programmatic studies).

    Jobs are numbered 1..n in the given order and sorted (stably) by submit time;
    ``req_time`` defaults to the runtime (perfect estimates), ``job_class`` to the
    runtime rule of P-grid §4.2.
    """
    sub = np.asarray(submit, dtype=np.float64)
    n = len(sub)
    run_a = np.asarray(run, dtype=np.float64)
    req = run_a.copy() if req_time is None else np.asarray(req_time, dtype=np.float64)
    vo_a = np.zeros(n, dtype=np.int64) if vo is None else np.asarray(vo, dtype=np.int64)
    cls = classify_by_runtime(run_a) if job_class is None else np.asarray(job_class, dtype=np.int64)
    order = np.argsort(sub, kind="stable")
    minus_one = np.full(n, -1, dtype=np.int64)
    return Workload(
        name=name,
        max_procs=max_procs,
        job_id=(order + 1).astype(np.int64),
        submit=sub[order],
        run=run_a[order],
        req_time=req[order],
        procs=np.asarray(procs, dtype=np.int64)[order],
        user=minus_one,
        group=minus_one.copy(),
        queue=minus_one.copy(),
        partition=minus_one.copy(),
        executable=minus_one.copy(),
        recorded_wait=np.full(n, np.nan),
        vo=vo_a[order],
        job_class=cls[order],
        vo_names=vo_names,
    )


def classify_by_rule(
    workload: Workload, rule: ClassRule, *, qos: Sequence[str] | None = None, partition: Sequence[str] | None = None
) -> np.ndarray:
    """The class of every job by ``rule`` from its time limit (requested time), QOS and partition."""
    n = len(workload)
    # A sidecar trace names its QOS (the SWF queue column) and partitions; a plain SWF has neither name.
    qos_s = list(qos) if qos is not None else (workload.names_of("queue") if "queue" in workload.id_names else [""] * n)
    part_s = list(partition) if partition is not None else workload.names_of("partition")
    if len(qos_s) != n or len(part_s) != n:
        raise ValueError(f"workload {workload.name!r}: {len(qos_s)} QOS / {len(part_s)} partition values for {n} jobs")
    limits = workload.req_time.tolist()
    # One call per distinct (qos, partition, limit): traces repeat them a lot.
    cache: dict[tuple[str, str, float], int] = {}
    out = np.empty(n, dtype=np.int64)
    for i, key in enumerate(zip(qos_s, part_s, limits, strict=True)):
        found = cache.get(key)
        if found is None:
            found = cache[key] = int(rule.classify(*key))
        out[i] = found
    return out


def with_class_rule(workload: Workload, rule: ClassRule) -> Workload:
    """``workload`` with its classes by ``rule`` (its VOs unchanged): what a trace without a config gets."""
    return replace(workload, job_class=classify_by_rule(workload, rule))
