"""One definition of each quantity the papers measure a schedule by (pure, vectorised NumPy).

The simulator's summaries (:mod:`rlsched.sim.summary`), the experiments, the reward
trackers (:mod:`rlsched.core.rewards`), the daemon's metrics and the benchmarks all call
these functions; none of them computes a quantity on its own.

- Responsiveness ``W = run / (run + wait)`` (P-grid Eq. 1), :func:`responsiveness`.
- Bounded slowdown ``max((wait + run) / max(run, τ), 1)`` with ``τ = 10 s`` (Feitelson et al.,
  JSSPP 1997), :func:`bounded_slowdown`.
- Fairness ``F = 1 − D / M`` with the deficit distance ``D = max_k (w_k − S_k)_+`` and
  ``M = max_k w_k`` (P-grid §3.2, Eq. 2), ``S_k`` VO k's fraction of the delivered service:
  :func:`fairness_utility`, :func:`service_fraction`, :func:`fairness_of_service`,
  :func:`service_by_vo` (the service delivered by each time of a grid).
- Per-group statistics (per class, per VO): count, mean and sd of W, mean, sd, median and
  95th percentile of the wait, the share of waits under the interactive target (P-fqi §1:
  two minutes), the share of W above 0.9 (P-grid §5.2), mean bounded slowdown:
  :func:`group_stats`, :func:`stats_by_group`.
- Utilization: delivered core-seconds over the pool's core-seconds over the span (P-grid
  Eq. 3 over a whole run), rigid (:func:`utilization`) or over an elastic pool history
  (:func:`pool_core_seconds`, :func:`elastic_utilization`), and as a time series
  (:func:`utilization_series`).

Floating point: each function keeps the order of operations of the code it replaced, so
every recorded result regenerates bit for bit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rlsched.core.view import FloatArray, IntArray

#: Bounded-slowdown threshold (s): runtimes under it count as τ (Feitelson et al., JSSPP 1997).
BOUNDED_SLOWDOWN_TAU_S = 10.0
#: The acceptable middleware delay for interactive jobs (P-fqi §1).
INTERACTIVE_TARGET_WAIT_S = 120.0
#: P-grid §5.2 reports the fraction of interactive jobs with W above this.
HIGH_RESPONSIVENESS = 0.9


# ------------------------------------------------------------------------ per job
def responsiveness(run_s: FloatArray | float, wait_s: FloatArray | float) -> FloatArray:
    """P-grid Eq. 1: ``W = run / (run + wait)``; 1 for a zero-length job that did not wait.

    A negative wait (clock skew between a batch system's submit and start stamps) counts as none.
    """
    run = np.asarray(run_s, dtype=np.float64)
    wait = np.maximum(np.asarray(wait_s, dtype=np.float64), 0.0)
    total = run + wait
    safe = np.where(total > 0, total, 1.0)
    return np.where(total > 0, run / safe, 1.0)


def bounded_slowdown(run_s: FloatArray, wait_s: FloatArray, tau_s: float = BOUNDED_SLOWDOWN_TAU_S) -> FloatArray:
    """``max((wait + run) / max(run, τ), 1)`` (Feitelson et al., JSSPP 1997; τ = 10 s)."""
    return np.maximum((wait_s + run_s) / np.maximum(run_s, tau_s), 1.0)


def core_seconds(run_s: FloatArray, procs: IntArray | FloatArray) -> FloatArray:
    """Work of each job: cores × runtime (the service of P-grid Eq. 2, the ``f`` of Eq. 3)."""
    return np.asarray(run_s * procs)


# ------------------------------------------------------------------------ per group
@dataclass(frozen=True)
class GroupStats:
    """Statistics of one group of jobs (a class, a VO, all); ``None`` for an empty group."""

    jobs: int
    mean_w: float | None
    sd_w: float | None
    mean_wait_s: float | None
    sd_wait_s: float | None
    median_wait_s: float | None
    p95_wait_s: float | None
    frac_wait_under_target: float | None
    frac_w_over_0_9: float | None
    mean_bounded_slowdown: float | None


def group_stats(w: FloatArray, wait_s: FloatArray, bsld: FloatArray | None = None) -> GroupStats:
    """:class:`GroupStats` of the jobs with responsiveness ``w`` and waits ``wait_s`` (same order).

    ``bsld``: their bounded slowdowns (:func:`bounded_slowdown`), when the caller reports it.
    """
    n = int(w.size)
    if n == 0:
        return GroupStats(0, None, None, None, None, None, None, None, None, None)
    return GroupStats(
        jobs=n,
        mean_w=float(w.mean()),
        sd_w=float(w.std()),
        mean_wait_s=float(wait_s.mean()),
        sd_wait_s=float(wait_s.std()),
        median_wait_s=float(np.median(wait_s)),
        p95_wait_s=float(np.percentile(wait_s, 95)),
        frac_wait_under_target=float((wait_s < INTERACTIVE_TARGET_WAIT_S).mean()),
        frac_w_over_0_9=float((w > HIGH_RESPONSIVENESS).mean()),
        mean_bounded_slowdown=float(bsld.mean()) if bsld is not None else None,
    )


def stats_by_group(
    group: IntArray, w: FloatArray, wait_s: FloatArray, values: Sequence[int], bsld: FloatArray | None = None
) -> dict[int, GroupStats]:
    """:func:`group_stats` of each group value in ``values`` (a class, a VO index); empty groups included."""
    out: dict[int, GroupStats] = {}
    for value in values:
        m = group == value
        out[int(value)] = group_stats(w[m], wait_s[m], None if bsld is None else bsld[m])
    return out


def cpu_share(work: FloatArray, mask: FloatArray | IntArray) -> float:
    """The share of the delivered core-seconds ``work`` that went to the jobs in ``mask`` (per-VO share)."""
    return float(np.sum(work[mask]) / max(np.sum(work), 1e-12))


# ------------------------------------------------------------------------ fairness
def normalised_shares(shares: Sequence[float]) -> FloatArray:
    """Target shares as fractions summing to 1 (sites often give percentages)."""
    w = np.asarray(shares, dtype=np.float64)
    if w.ndim != 1 or w.size == 0 or np.any(w < 0) or w.sum() <= 0:
        raise ValueError(f"VO target shares must be non-negative with a positive sum, got {list(shares)}")
    return w / w.sum()


def deficit_distance(service_fraction: FloatArray, shares: FloatArray) -> FloatArray:
    """``D = max_k (w_k − S_k)_+`` (P-grid §3.2), over the last axis of ``service_fraction``."""
    return np.maximum(np.max(shares - service_fraction, axis=-1), 0.0)


def fairness_utility(service_fraction: FloatArray, shares: FloatArray) -> FloatArray:
    """P-grid Eq. 2: ``F = 1 − D / M`` with ``M = max_k w_k``; in [0, 1]."""
    return 1.0 - deficit_distance(service_fraction, shares) / float(np.max(shares))


def service_fraction(service: FloatArray) -> FloatArray:
    """Each VO's fraction ``S_k`` of the total service, over the last axis; 0 where nothing was delivered."""
    total = service.sum(axis=-1, keepdims=True)
    return np.divide(service, total, out=np.zeros_like(service), where=total > 0)


def fairness_of_service(service: FloatArray, shares: FloatArray) -> FloatArray:
    """F (P-grid Eq. 2) of the core-seconds ``service`` delivered to each VO (last axis).

    With no service at all the fractions are 0 and F is ``1 − max_k w_k / M = 0``.
    """
    return fairness_utility(service_fraction(service), shares)


def service_by_vo(
    t: FloatArray, start_s: FloatArray, end_s: FloatArray, procs: IntArray, vo: IntArray, n_vos: int
) -> FloatArray:
    """Core-seconds delivered to each VO by each time ``t`` (finished jobs in full, running ones so far).

    ``Σ_j p_j (min(t, e_j) − s_j)_+ = Σ_{s_j ≤ t} p_j (t − s_j) − Σ_{e_j ≤ t} p_j (t − e_j)``:
    two sorted cumulative sums per VO and one ``searchsorted`` per grid, no per-job loop.
    The service of P-grid Eq. 2's ``S_kj``, as :class:`rlsched.core.rewards.FairnessTracker` counts it.
    """
    out = np.zeros((t.size, n_vos))
    weight = procs.astype(np.float64)
    for k in range(n_vos):
        mine = vo == k
        if not mine.any():
            continue
        for times, sign in ((start_s[mine], 1.0), (end_s[mine], -1.0)):
            order = np.argsort(times, kind="stable")
            ts, ps = times[order], weight[mine][order]
            cum_p = np.concatenate([[0.0], np.cumsum(ps)])
            cum_pt = np.concatenate([[0.0], np.cumsum(ps * ts)])
            idx = np.searchsorted(ts, t, side="right")
            out[:, k] += sign * (t * cum_p[idx] - cum_pt[idx])
    return out


# ------------------------------------------------------------------------ utilization
def utilization(work: float, cores: int, span_s: float) -> float:
    """Delivered core-seconds ``work`` over the core-seconds of a rigid pool of ``cores`` over ``span_s``.

    P-grid Eq. 3 over a whole run (every job completed); 0 for an empty span.
    """
    return work / (cores * span_s) if span_s > 0 else 0.0


def pool_cores_at(change_s: FloatArray, cores: IntArray, t: FloatArray | float) -> IntArray:
    """Size of a pool that has ``cores[k]`` from ``change_s[k]`` on, at time(s) ``t`` (the first size before)."""
    idx = np.searchsorted(change_s, np.asarray(t, dtype=np.float64), side="right") - 1
    return cores[np.maximum(idx, 0)]


def pool_core_seconds(change_s: FloatArray, cores: IntArray, t0: float, t1: float) -> float:
    """``Σ_k P_k (T_{k+1} − T_k)`` over ``[t0, t1]``: the denominator of P-grid Eq. 3 for an elastic pool."""
    if t1 <= t0:
        return 0.0
    edges = np.concatenate([[t0], change_s[(change_s > t0) & (change_s < t1)], [t1]])
    return float(np.sum(pool_cores_at(change_s, cores, edges[:-1]) * np.diff(edges)))


def elastic_utilization(work: float, change_s: FloatArray, cores: IntArray, t0: float, t1: float) -> float:
    """P-grid Eq. 3 over ``[t0, t1]``: delivered core-seconds over the elastic pool's core-seconds."""
    denom = pool_core_seconds(change_s, cores, t0, t1)
    return work / denom if denom > 0 else 0.0


def utilization_series(
    t: FloatArray,
    start_s: FloatArray,
    end_s: FloatArray,
    procs: IntArray,
    t0: float,
    *,
    cores: int = 0,
    change_s: FloatArray | None = None,
    pool_cores: IntArray | None = None,
) -> FloatArray:
    """``U(t)`` of P-grid Eq. 3: work of the jobs completed by ``t`` over the core-seconds provisioned since ``t0``.

    The pool is rigid (``cores``) or elastic (``pool_cores[k]`` from ``change_s[k]`` on); NaN
    where nothing was provisioned yet.  The elastic integral is a cumulative sum evaluated at
    every point of the grid (the whole-run :func:`pool_core_seconds` sums the steps directly).
    """
    order = np.argsort(end_s, kind="stable")
    ends = end_s[order]
    work = np.concatenate([[0.0], np.cumsum(((end_s - start_s) * procs)[order])])
    completed = work[np.searchsorted(ends, t, side="right")]
    if change_s is None or pool_cores is None:
        provisioned = cores * np.maximum(t - t0, 0.0)
    else:
        change, pool = change_s, pool_cores.astype(np.float64)
        cum = np.concatenate([[0.0], np.cumsum(pool[:-1] * np.diff(change))])

        def integral(x: FloatArray) -> FloatArray:
            k = np.maximum(np.searchsorted(change, x, side="right") - 1, 0)
            return cum[k] + pool[k] * (x - change[k])

        provisioned = integral(t) - integral(np.array([t0]))[0]
    return np.divide(completed, provisioned, out=np.full(t.size, np.nan), where=provisioned > 0)
