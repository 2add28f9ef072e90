"""Shadow-mode agreement: the daemon's decision log joined with the start times Slurm recorded (pure).

The metric (docs/workflow.md, ``## report shadow``, says the same for users):

- **Cycles.**  Each log record is one daemon cycle ``c`` at time ``t_c`` with rlsched's ranking ``R_c`` of
  the jobs pending then.  Its *window* runs to the next logged cycle, at most ``max_window_s`` (by default
  three times the median gap between cycles, so a daemon that was down does not stretch a window over hours).
- **Slurm's next start.**  Among the jobs of ``R_c`` that started in the window (start ``S_j`` in
  ``[p_c − clock_slack_s, t_c + window)``, where ``p_c ≤ t_c`` is when the daemon began reading the queue:
  a job can start while ``squeue`` and ``sinfo`` run), the earliest start and every job that started within
  ``same_pass_s`` of it (one scheduling pass starts several jobs in the same second) form ``N_c``.  A cycle
  whose window saw none of its jobs start is *quiet*: nothing to agree with.  Using only the window keeps
  each Slurm start compared with the freshest ranking before it, and long waits without starts do not
  repeat the same comparison hundreds of times.
- **Agreement** (over *decisive* cycles — a start in the window — with at least two jobs pending, where
  there was a choice): top-1 = rlsched's first job is in ``N_c``; top-k = some job of ``N_c`` is among
  rlsched's first ``k``.  Beside each, the *chance* level: what a random order would score on the same
  cycles (``m/n`` and ``1 − C(n−m, k)/C(n, k)`` for ``m = |N_c|`` of ``n`` pending jobs).
- **Would have started earlier.**  A throughput-matched replay, not a simulation: in each window rlsched
  gets the cores Slurm actually filled with jobs of ``R_c`` and fills them in its own order, greedily
  (a job that does not fit is skipped), leaving out jobs it already "started" in an earlier window.  The
  first cycle in which rlsched would have started job ``j`` is ``Ŝ_j``.  When ``Ŝ_j < S_j``, rlsched would
  have started it earlier and the job *waited beyond rlsched's pick* ``S_j − Ŝ_j``; reported per class and
  VO (count, mean, median, p95, max).  The converse (Slurm started it first) is counted too.  What this
  leaves out: runtimes (rlsched's world would free cores at other times), node shapes and backfill holes,
  and jobs submitted later.  It tells which jobs rlsched would have preferred, not what the cluster would
  have done.
- **Unmatched**: ranked jobs with no start time in the source (still pending, cancelled, or started after
  the source's window) take part in no comparison and are counted.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rlsched.core.agents import greedy_fill
from rlsched.core.view import FloatArray, IntArray
from rlsched.errors import RlschedError

CLASS_NAMES = ("batch", "interactive")  # JobClass.BATCH = 0, JobClass.INTERACTIVE = 1
DEFAULT_TOP_K = 5
DEFAULT_SAME_PASS_S = 1.0
#: A job pending in a view cannot have started before it; Slurm's start times are whole seconds.
DEFAULT_CLOCK_SLACK_S = 1.0


class ShadowLogError(RlschedError, ValueError):
    """A decision log record that cannot be used (one line naming the record)."""


@dataclass(frozen=True)
class Cycle:
    """One decision log record: rlsched's ranking of the pending jobs at ``time_s`` (best first)."""

    time_s: float
    job_id: IntArray
    cores: IntArray
    vo: IntArray
    job_class: IntArray
    pending: int
    vos: tuple[str, ...] = ()
    mode: str = "shadow"
    #: When the daemon began reading the queue for this ranking (None: ``time_s``, as logs before it had).
    polled_s: float | None = None

    @property
    def seen_s(self) -> float:
        """The moment the ranked jobs were seen pending: none of them had started before it."""
        return self.time_s if self.polled_s is None else min(self.polled_s, self.time_s)

    def __len__(self) -> int:
        return len(self.job_id)


def cycle_from_record(record: Mapping[str, Any], where: str = "record") -> Cycle:
    """A :class:`Cycle` from one log record (:func:`rlsched.daemon.decision_log.decision_record`)."""
    try:
        rows = record["ranked"]
        table = np.asarray([[int(r[0]), int(r[2]), int(r[3]), int(r[4])] for r in rows], dtype=np.int64).reshape(-1, 4)
        return Cycle(
            time_s=float(record["time"]),
            job_id=table[:, 0],
            cores=table[:, 1],
            vo=table[:, 2],
            job_class=table[:, 3],
            pending=int(record.get("pending", len(rows))),
            vos=tuple(str(v) for v in record.get("vos", ())),
            mode=str(record.get("mode", "shadow")),
            polled_s=None if record.get("polled") is None else float(record["polled"]),
        )
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise ShadowLogError(f"{where}: malformed decision record: {exc}") from None


@dataclass(frozen=True)
class JobOutcome:
    """One ranked job that Slurm started: when, and when rlsched would have (None: not in the log's span)."""

    job_id: int
    vo: str
    job_class: str
    slurm_start_s: float
    rlsched_start_s: float | None

    @property
    def beyond_s(self) -> float | None:
        """How long the job waited beyond rlsched's pick (None when rlsched would not have started it first)."""
        if self.rlsched_start_s is None or self.rlsched_start_s >= self.slurm_start_s:
            return None
        return self.slurm_start_s - self.rlsched_start_s


@dataclass
class ShadowAnalysis:
    """What :func:`analyse` found (see the module docstring for each quantity)."""

    top_k: int
    cycles: int = 0
    decisive: int = 0
    quiet: int = 0
    #: Decisive cycles with a single pending job (agreement is certain there; not in the rates).
    trivial: int = 0
    top1_hits: int = 0
    topk_hits: int = 0
    top1_chance: float = 0.0
    topk_chance: float = 0.0
    #: Per contested cycle, the best (1-based) rank rlsched gave one of Slurm's next starts.
    slurm_pick_ranks: list[int] = field(default_factory=list)
    jobs_seen: int = 0
    jobs_started: int = 0
    jobs_unmatched: int = 0
    #: Ranked jobs with a start before the cycle that ranked them pending (clock skew, requeue).
    inconsistent: int = 0
    outcomes: list[JobOutcome] = field(default_factory=list)
    window_s: float = 0.0

    @property
    def contested(self) -> int:
        return self.decisive - self.trivial

    def rate(self, hits: int) -> float:
        return hits / self.contested if self.contested else math.nan

    @property
    def earlier(self) -> list[JobOutcome]:
        """Jobs rlsched would have started before Slurm did."""
        return [o for o in self.outcomes if o.beyond_s is not None]

    @property
    def slurm_first(self) -> int:
        """Started jobs that Slurm started no later than rlsched would have (or rlsched never would have)."""
        return len(self.outcomes) - len(self.earlier)


def chance_topk(n: int, m: int, k: int) -> float:
    """Probability that a uniformly random order of ``n`` jobs puts one of ``m`` given jobs in its first ``k``."""
    if n <= 0 or m <= 0:
        return 0.0
    if k >= n or m > n - k:
        return 1.0
    # 1 − C(n−m, k) / C(n, k) as a product, without huge binomials.
    miss = 1.0
    for i in range(k):
        miss *= (n - m - i) / (n - i)
    return 1.0 - miss


def default_window_s(times: Sequence[float]) -> float:
    """Three times the median gap between cycles (inf with fewer than two cycles)."""
    gaps = np.diff(np.sort(np.asarray(times, dtype=np.float64)))
    gaps = gaps[gaps > 0]
    return 3.0 * float(np.median(gaps)) if gaps.size else math.inf


def _names(cycle: Cycle, i: int) -> tuple[str, str]:
    vo = int(cycle.vo[i])
    cls = int(cycle.job_class[i])
    return (
        cycle.vos[vo] if 0 <= vo < len(cycle.vos) else f"vo{vo}",
        CLASS_NAMES[cls] if 0 <= cls < len(CLASS_NAMES) else str(cls),
    )


def analyse(
    cycles: Sequence[Cycle],
    starts: Mapping[int, float],
    *,
    top_k: int = DEFAULT_TOP_K,
    same_pass_s: float = DEFAULT_SAME_PASS_S,
    max_window_s: float | None = None,
    clock_slack_s: float = DEFAULT_CLOCK_SLACK_S,
) -> ShadowAnalysis:
    """Join ``cycles`` (any order) with Slurm's ``starts`` (job id → epoch start) into a :class:`ShadowAnalysis`."""
    if top_k < 1:
        raise ValueError(f"top_k must be >= 1, got {top_k}")
    ordered = sorted(cycles, key=lambda c: c.time_s)
    times = [c.time_s for c in ordered]
    cap = default_window_s(times) if max_window_s is None else max_window_s
    out = ShadowAnalysis(top_k=top_k, cycles=len(ordered), window_s=cap)
    would_start: dict[int, float] = {}
    last_seen: dict[int, tuple[str, str]] = {}
    inconsistent: set[int] = set()
    for idx, cycle in enumerate(ordered):
        t = cycle.time_s
        end = min(times[idx + 1] if idx + 1 < len(ordered) else math.inf, t + cap)
        n = len(cycle)
        start = np.array([starts.get(int(j), math.nan) for j in cycle.job_id.tolist()], dtype=np.float64)
        for i in range(n):
            last_seen[int(cycle.job_id[i])] = _names(cycle, i)
        # A job may start while the daemon reads the queue: the window opens when the reads began.
        opened = cycle.seen_s - clock_slack_s
        early = start < opened
        inconsistent.update(int(j) for j in cycle.job_id[early].tolist())
        in_window = (start >= opened) & (start < end)
        if not in_window.any():
            out.quiet += 1
            continue
        out.decisive += 1
        first = float(start[in_window].min())
        next_starts = np.nonzero(in_window & (start <= first + same_pass_s))[0]
        if max(cycle.pending, n) < 2:
            out.trivial += 1
        else:
            best_rank = int(next_starts.min())  # rows are in rlsched's order: row i is rank i + 1
            out.slurm_pick_ranks.append(best_rank + 1)
            out.top1_hits += best_rank == 0
            out.topk_hits += best_rank < top_k
            pending = max(cycle.pending, n)
            out.top1_chance += chance_topk(pending, next_starts.size, 1)
            out.topk_chance += chance_topk(pending, next_starts.size, top_k)
        _replay_window(cycle, np.nonzero(in_window)[0], would_start, t)
    if out.contested:
        out.top1_chance /= out.contested
        out.topk_chance /= out.contested
    out.jobs_seen = len(last_seen)
    out.inconsistent = len(inconsistent)
    for job_id, (vo, cls) in sorted(last_seen.items()):
        s = starts.get(job_id)
        if s is None or not math.isfinite(s):
            out.jobs_unmatched += 1
            continue
        if job_id in inconsistent:
            continue
        out.jobs_started += 1
        out.outcomes.append(JobOutcome(job_id, vo, cls, float(s), would_start.get(job_id)))
    return out


def _replay_window(cycle: Cycle, slurm_rows: IntArray, would_start: dict[int, float], t: float) -> None:
    """rlsched fills the cores Slurm filled in this window, in its order (see the module docstring)."""
    budget = int(cycle.cores[slurm_rows].sum())
    free = np.array([int(j) not in would_start for j in cycle.job_id.tolist()], dtype=bool)
    order = np.nonzero(free)[0].astype(np.int64)  # rlsched's order, its "running" jobs left out
    for row in greedy_fill(order, np.maximum(cycle.cores, 0), budget).tolist():
        would_start[int(cycle.job_id[row])] = t


# ---------------------------------------------------------------------------------------------- summaries
@dataclass(frozen=True)
class WaitSummary:
    """Waits beyond rlsched's pick of one group of jobs (seconds)."""

    group: str
    jobs: int
    earlier: int
    mean_s: float
    median_s: float
    p95_s: float
    max_s: float


def summarise_beyond(outcomes: Sequence[JobOutcome], by: str) -> list[WaitSummary]:
    """One :class:`WaitSummary` per class (``by="class"``), VO (``"vo"``) or for all (``"all"``)."""
    if by not in ("class", "vo", "all"):
        raise ValueError(f"by must be class, vo or all, got {by!r}")
    groups: dict[str, list[JobOutcome]] = {}
    for o in outcomes:
        key = "all" if by == "all" else o.job_class if by == "class" else o.vo
        groups.setdefault(key, []).append(o)
    rows = []
    for key in sorted(groups):
        members = groups[key]
        waits: FloatArray = np.asarray([o.beyond_s for o in members if o.beyond_s is not None], dtype=np.float64)
        stats = (
            (float(waits.mean()), float(np.median(waits)), float(np.percentile(waits, 95)), float(waits.max()))
            if waits.size
            else (math.nan,) * 4
        )
        rows.append(WaitSummary(key, len(members), int(waits.size), *stats))
    return rows
