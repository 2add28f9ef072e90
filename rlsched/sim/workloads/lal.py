"""LAL-like synthetic workload: rlsched's embedded default (``--workload lal``).

The EGEE trace used by Perez et al. (the PBS log of the LAL site, 25 Jul - 19 Oct 2006;
P-grid §4.2, P-fqi §4.2) is not public.  This module generates a *synthetic* workload
calibrated to everything those papers publish about it:

* 81 cores, every job sequential (one core)                         -- P-grid §4.2
* 4,480 interactive jobs (runtime < 900 s): mean 160 s, median 190 s,
  sd 108 s; 5,020 batch jobs: mean 34,927 s, median 15,615 s,
  sd 78,755 s                                                        -- P-grid Table 1
* a bursty service request, overall utilization 0.56                  -- P-grid §4.2, Fig. 3
* 7 VOs with target shares (0.53, 0.02, 0.17, 0.08, 0.01, 0.16, 0.03),
  the last one the aggregate of the small VOs                        -- P-grid §4.2
* under the native EGEE scheduler interactive W = 0.628 +- 0.418, batch
  W = 0.830, 63% of interactive jobs waited less than 2 minutes, and the
  mean waits were 2,756 s (interactive) and 13,041 s (batch)         -- P-grid Tables 2-3, §5.2;
                                                                        P-fqi Tables 2-3
* the papers' non-preemptive RL schedulers reached interactive W 0.864-0.869
  and 86% under 2 minutes on the same trace and cores                -- P-grid Table 2, §5.2

The generator (:func:`generate_lal`) is a three-layer model, each layer calibrated to
one group of those numbers (docs/workloads.md gives the reasoning and the produced
statistics beside the published ones):

1. **Runtimes.**  Interactive: a mixture of a truncated exponential (jobs that end
   within seconds) and a gamma bulk, on [0, 900) s; its three free parameters are
   solved so that mean, median and sd are exactly the published ones
   (:func:`solve_interactive_runtime`).  Batch: a lognormal body on [900 s, limit)
   plus the jobs killed at the one-week queue wall-time limit; again three free
   parameters solved for the three published moments (:func:`solve_batch_runtime`).
2. **Bulk submissions.**  Jobs come in bursts of one class, VO and user: interactive
   *sessions* (jobs minutes apart) and batch *collections* (jobs seconds apart).  Inside
   a burst runtimes are correlated through a Gaussian copula, and large collections
   hold short jobs; both leave every per-class runtime distribution exactly as
   calibrated.
3. **Burst arrivals.**  Burst start times follow a Markov-modulated Poisson process
   (calm / busy regimes) times a daily and weekly cycle.  The span is set so that the
   offered work over the submission span is exactly 0.56 of 81 cores.  The burst and
   regime values are calibrated against two published queueing anchors, replayed with
   the simulator on 81 cores (:class:`ArrivalModel` gives the protocol): the level the
   papers' RL reached on the real trace must be reachable by a simple interactive-first
   policy (it is: W ~0.91, ~90% under 2 min), and FCFS should come as near as it can to
   the native EGEE schedule (it matches the native interactive mean wait, but keeps
   ~83% of interactive jobs under 2 min where the native scheduler kept 63%: the two
   anchors conflict for any work-conserving FCFS, see :class:`ArrivalModel`).

Job counts are exact (4,480 / 5,020 at ``scale=1``), and batch CPU time is dealt out to
the VOs so that each VO's share of the total CPU time is its target share.

``python -m rlsched.sim.workloads.lal`` prints the published statistics beside the
generated ones (:func:`calibration_table`).

Runtime needs NumPy only (no SciPy import on the hot path): the quantile functions are
tabulated once on a grid of standard-normal scores and interpolated.  The ``solve_*``
and ``*_moments`` helpers, which re-derive and check the constants, import SciPy.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from statistics import NormalDist
from typing import Literal

import numpy as np

from rlsched.core.view import INTERACTIVE_THRESHOLD_S, FloatArray, IntArray, JobClass
from rlsched.sim.workload import Workload

# --------------------------------------------------------------------------------------
# Published statistics (the calibration targets)
# --------------------------------------------------------------------------------------

#: Cores of the LAL site during the trace (P-grid §4.2: "fairly constant (P = 81)").
LAL_CORES = 81
#: P-grid Table 1 (the P-fqi Table 1 prints the same numbers with the interactive
#: mean, median and sd permuted; P-grid's order is the consistent one: see docs/workloads.md).
PUBLISHED_INTERACTIVE_JOBS = 4480
PUBLISHED_INTERACTIVE_MEAN_S = 160.0
PUBLISHED_INTERACTIVE_MEDIAN_S = 190.0
PUBLISHED_INTERACTIVE_SD_S = 108.0
PUBLISHED_BATCH_JOBS = 5020
PUBLISHED_BATCH_MEAN_S = 34927.0
PUBLISHED_BATCH_MEDIAN_S = 15615.0
PUBLISHED_BATCH_SD_S = 78755.0
#: P-grid §4.2: "the overall utilization remains moderate, at 0.56".
PUBLISHED_UTILIZATION = 0.56
#: P-grid §4.2: the fair-share target vector; the last entry aggregates the small VOs.
PUBLISHED_VO_SHARES = (0.53, 0.02, 0.17, 0.08, 0.01, 0.16, 0.03)
#: The papers do not name the LAL VOs, so they are numbered (vo7 = the small VOs together).
LAL_VO_NAMES = ("vo1", "vo2", "vo3", "vo4", "vo5", "vo6", "vo7")
# The two queueing anchors of the arrival calibration (see ArrivalModel and docs/workloads.md).
# (a) The native anchor: the EGEE (PBS/Maui, per-VO queues, fair-share) schedule recorded
#     in the trace -- P-grid Table 2 "nat" row, P-grid Table 3, P-fqi Tables 2-3, §5.2.
#: P-grid Table 2 (nat): mean and sd of W = run/(run+wait) of interactive and batch jobs
#: (P-fqi Table 2 prints the same rounded: 0.62 +- 0.41 and 0.82 +- 0.26).
PUBLISHED_NATIVE_INTERACTIVE_W = 0.628
PUBLISHED_NATIVE_INTERACTIVE_W_SD = 0.418
PUBLISHED_NATIVE_BATCH_W = 0.830
#: P-grid §5.2 / P-fqi §5.2: share of interactive jobs that waited < 2 min under EGEE.
PUBLISHED_NATIVE_INTERACTIVE_UNDER_120S = 0.63
#: P-grid Table 3 and P-fqi Table 3 (EGEE row): mean queueing delay (s) per class.
PUBLISHED_NATIVE_INTERACTIVE_WAIT_S = 2756.0
PUBLISHED_NATIVE_BATCH_WAIT_S = 13041.0
# (b) The achievable anchor: what the papers' non-preemptive RL schedulers reached on the
#     same trace and the same 81 cores, i.e. what the real arrival sequence admitted.
#: P-grid Table 2: interactive W of the four rigid RL runs is 0.864-0.869 (rounded up to
#: 0.87 here); P-fqi Table 2 reports 0.94-0.95 for its fitted-Q runs.
PUBLISHED_RL_INTERACTIVE_W = 0.87
#: P-grid §5.2: 86% of interactive jobs under 2 min (rigid RL); P-fqi §5.2: "more than 90%".
PUBLISHED_RL_INTERACTIVE_UNDER_120S = 0.86
#: P-fqi Table 3, RL-ESN-EST: mean interactive queueing delay (s); P-grid Table 3: 862-1152 s.
PUBLISHED_RL_INTERACTIVE_WAIT_S = 495.0
#: 25 Jul 2006 00:00 Europe/Paris (a Tuesday), the first day of the trace (P-grid §4.2).
LAL_UNIX_START = 1153778400
_START_WEEKDAY = 1  # Monday = 0

DAY_S = 86400.0
WEEK_S = 7 * DAY_S

# --------------------------------------------------------------------------------------
# Runtime models
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class InteractiveRuntimeModel:
    """Interactive runtime on [0, ``limit_s``): a two-component mixture.

    With probability ``short_weight`` an exponential of mean ``short_mean_s`` truncated to
    the limit (jobs that fail or return at once: the "dark matter" short jobs of P-grid
    §2.1), otherwise a gamma(``bulk_shape``, ``bulk_scale_s``) truncated to the limit.
    The published mean (160 s) is *below* the median (190 s): a left skew that no
    single common family on a bounded range reaches with sd 108 s; the mixture does,
    with its three free parameters (weight, gamma shape and scale) solved exactly.
    ``short_mean_s`` is an assumption (20 s), not a published number.
    """

    short_weight: float
    short_mean_s: float
    bulk_shape: float
    bulk_scale_s: float
    limit_s: float = INTERACTIVE_THRESHOLD_S

    def cdf(self, x: FloatArray) -> FloatArray:
        """Exact CDF (needs SciPy; used for calibration and checks, not for sampling)."""
        from scipy import special

        x = np.clip(np.asarray(x, dtype=np.float64), 0.0, self.limit_s)
        short = -np.expm1(-x / self.short_mean_s) / -math.expm1(-self.limit_s / self.short_mean_s)
        bulk = special.gammainc(self.bulk_shape, x / self.bulk_scale_s) / special.gammainc(
            self.bulk_shape, self.limit_s / self.bulk_scale_s
        )
        return np.asarray(self.short_weight * short + (1.0 - self.short_weight) * bulk)

    def moments(self) -> tuple[float, float, float]:
        """(mean, median, sd) of the model, in closed form (the median by root finding)."""
        from scipy import optimize, special

        w, theta, k, s, h = (self.short_weight, self.short_mean_s, self.bulk_shape, self.bulk_scale_s, self.limit_s)
        # Truncated exponential on [0, h): E[X] and E[X^2] in closed form.
        r = h / theta
        tail = math.exp(-r) / -math.expm1(-r)
        e1 = theta - h * tail
        e2 = 2.0 * theta * e1 - h * h * tail
        # Truncated gamma: E[X^n; X < h] = s^n Gamma(k+n)/Gamma(k) P(k+n, h/s).
        z = special.gammainc(k, h / s)
        g1 = k * s * special.gammainc(k + 1, h / s) / z
        g2 = k * (k + 1) * s * s * special.gammainc(k + 2, h / s) / z
        mean = w * e1 + (1 - w) * g1
        second = w * e2 + (1 - w) * g2
        median = optimize.brentq(lambda x: float(self.cdf(np.array(x))) - 0.5, 0.0, h, xtol=1e-9)
        return float(mean), float(median), float(math.sqrt(second - mean * mean))


@dataclass(frozen=True)
class BatchRuntimeModel:
    """Batch runtime on [``floor_s``, ``limit_s``]: a lognormal body plus killed jobs.

    With probability ``killed_fraction`` a job runs into the queue wall-time limit and is
    killed there (runtime = ``limit_s``: the spike at the limit that real batch logs
    show); otherwise its runtime is lognormal(``body_mu``, ``body_sigma``) truncated to
    [``floor_s``, ``limit_s``).  A plain lognormal cannot match the published numbers:
    with the published mean/median ratio (2.24) its sd is 69,900 s, not 78,755 s -- the
    real tail is heavier than lognormal.  The limit (one week) is an assumption (the
    LAL queue limits are not published); the three free parameters are solved for the
    published mean, median and sd (:func:`solve_batch_runtime`).
    """

    body_mu: float
    body_sigma: float
    killed_fraction: float
    limit_s: float
    floor_s: float = INTERACTIVE_THRESHOLD_S

    def moments(self) -> tuple[float, float, float]:
        """(mean, median, sd) of the model, in closed form."""
        from scipy import special

        mu, sg, q, hi = self.body_mu, self.body_sigma, self.killed_fraction, self.limit_s
        a = (math.log(self.floor_s) - mu) / sg
        b = (math.log(hi) - mu) / sg
        z = special.ndtr(b) - special.ndtr(a)

        def raw(n: int) -> float:  # E[X^n] of the truncated lognormal body
            return float(
                math.exp(n * mu + n * n * sg * sg / 2) * (special.ndtr(b - n * sg) - special.ndtr(a - n * sg)) / z
            )

        mean = (1 - q) * raw(1) + q * hi
        second = (1 - q) * raw(2) + q * hi * hi
        median = math.exp(mu + sg * float(special.ndtri(special.ndtr(a) + 0.5 / (1 - q) * z)))
        return float(mean), median, float(math.sqrt(second - mean * mean))


#: Solved by :func:`solve_interactive_runtime` (``scipy.optimize.fsolve`` on the three
#: published moments, short-job mean fixed at 20 s); re-derived in tests/test_lal.py.
INTERACTIVE_RUNTIME = InteractiveRuntimeModel(
    short_weight=0.32653264487, short_mean_s=20.0, bulk_shape=17.225554099, bulk_scale_s=13.229148623
)

#: The batch queue wall-time limit assumed for the LAL site: one week.
BATCH_WALLTIME_LIMIT_S = WEEK_S

#: Solved by :func:`solve_batch_runtime` (``scipy.optimize.fsolve`` on the three published
#: moments, limit fixed at one week); re-derived in tests/test_lal.py.
BATCH_RUNTIME = BatchRuntimeModel(
    body_mu=9.6318941498, body_sigma=1.0408086808, killed_fraction=0.01521138733, limit_s=BATCH_WALLTIME_LIMIT_S
)


def solve_interactive_runtime(
    short_mean_s: float = 20.0, limit_s: float = INTERACTIVE_THRESHOLD_S
) -> InteractiveRuntimeModel:
    """Re-derive :data:`INTERACTIVE_RUNTIME`: the mixture whose mean, median, sd are P-grid Table 1's."""
    from scipy import optimize, special

    target = np.array([PUBLISHED_INTERACTIVE_MEAN_S, PUBLISHED_INTERACTIVE_MEDIAN_S, PUBLISHED_INTERACTIVE_SD_S])

    def model(x: FloatArray) -> InteractiveRuntimeModel:
        # Unconstrained coordinates: logit(weight), log(shape), log(scale).
        return InteractiveRuntimeModel(
            float(special.expit(x[0])), short_mean_s, float(np.exp(x[1])), float(np.exp(x[2])), limit_s
        )

    def residual(x: FloatArray) -> FloatArray:
        return np.asarray(model(x).moments()) / target - 1.0

    solution, _, status, message = optimize.fsolve(
        residual, np.array([-1.0, np.log(10.0), np.log(20.0)]), full_output=True, xtol=1e-12
    )
    if status != 1:
        raise RuntimeError(f"interactive runtime calibration did not converge: {message}")
    return model(solution)


def solve_batch_runtime(limit_s: float = BATCH_WALLTIME_LIMIT_S) -> BatchRuntimeModel:
    """Re-derive :data:`BATCH_RUNTIME`: body + killed jobs whose mean, median, sd are P-grid Table 1's."""
    from scipy import optimize, special

    target = np.array([PUBLISHED_BATCH_MEAN_S, PUBLISHED_BATCH_MEDIAN_S, PUBLISHED_BATCH_SD_S])

    def model(x: FloatArray) -> BatchRuntimeModel:
        # Unconstrained coordinates: mu, log(sigma), logit(killed fraction).
        return BatchRuntimeModel(float(x[0]), float(np.exp(x[1])), float(special.expit(x[2])), limit_s)

    def residual(x: FloatArray) -> FloatArray:
        return np.log(np.asarray(model(x).moments()) / target)

    solution, _, status, message = optimize.fsolve(
        residual, np.array([np.log(14000.0), 0.0, -4.0]), full_output=True, xtol=1e-12
    )
    if status != 1:
        raise RuntimeError(f"batch runtime calibration did not converge: {message}")
    return model(solution)


# Quantile functions tabulated on standard-normal scores z: runtime = G(z) = F^-1(Phi(z)).
# The copula (layer 2) produces z directly, so sampling is one np.interp per class.
_Z_GRID = np.linspace(-8.0, 8.0, 3201)
_NORMAL = NormalDist()


def _phi_grid() -> list[float]:
    return [0.5 * math.erfc(-z / math.sqrt(2.0)) for z in _Z_GRID]


_PHI_GRID = np.asarray(_phi_grid())


@lru_cache(maxsize=4)
def _interactive_quantile_table(model: InteractiveRuntimeModel) -> FloatArray:
    """G(z) on :data:`_Z_GRID`.  The gamma CDF is integrated numerically (trapezoid on a
    0.05 s grid, relative error < 1e-7) so that sampling needs no SciPy."""
    x = np.linspace(0.0, model.limit_s, 18001)
    k, s = model.bulk_shape, model.bulk_scale_s
    with np.errstate(divide="ignore"):
        log_pdf = (k - 1) * np.log(x / s) - x / s - math.lgamma(k) - math.log(s)
    pdf = np.exp(log_pdf)
    bulk = np.concatenate(([0.0], np.cumsum((pdf[1:] + pdf[:-1]) * 0.5 * np.diff(x))))
    bulk /= bulk[-1]
    short = -np.expm1(-x / model.short_mean_s) / -math.expm1(-model.limit_s / model.short_mean_s)
    cdf = model.short_weight * short + (1.0 - model.short_weight) * bulk
    table = np.interp(np.asarray(_phi_grid()), cdf, x)
    table.flags.writeable = False
    return table


@lru_cache(maxsize=4)
def _batch_log_quantile_table(model: BatchRuntimeModel) -> FloatArray:
    """log G(z) on :data:`_Z_GRID` (log-runtime is smooth in z: interpolation is near exact)."""
    a = _NORMAL.cdf((math.log(model.floor_s) - model.body_mu) / model.body_sigma)
    b = _NORMAL.cdf((math.log(model.limit_s) - model.body_mu) / model.body_sigma)
    body_mass = 1.0 - model.killed_fraction
    log_limit = math.log(model.limit_s)
    out = []
    for u in _phi_grid():
        if u >= body_mass:
            out.append(log_limit)  # killed at the wall-time limit
        else:
            p = min(max(a + (u / body_mass) * (b - a), 1e-300), 1.0 - 1e-16)
            out.append(min(model.body_mu + model.body_sigma * _NORMAL.inv_cdf(p), log_limit))
    table = np.asarray(out)
    table.flags.writeable = False
    return table


def interactive_runtime_from_scores(z: FloatArray, model: InteractiveRuntimeModel = INTERACTIVE_RUNTIME) -> FloatArray:
    """Interactive runtimes (s) for standard-normal scores ``z`` (F^-1(Phi(z)))."""
    return np.interp(z, _Z_GRID, _interactive_quantile_table(model))


def batch_runtime_from_scores(z: FloatArray, model: BatchRuntimeModel = BATCH_RUNTIME) -> FloatArray:
    """Batch runtimes (s) for standard-normal scores ``z`` (F^-1(Phi(z)))."""
    return np.exp(np.interp(z, _Z_GRID, _batch_log_quantile_table(model)))


# --------------------------------------------------------------------------------------
# Bulk submissions and burst arrivals
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ArrivalModel:
    """Layers 2 and 3: how jobs group into bursts and when bursts arrive.

    Burst sizes are ``ceil(lognormal)`` with the given median per class and log-sd
    ``burst_size_sigma``.  Interactive bursts are *sessions*: one user's short jobs
    submitted minutes apart (exponential gaps of mean ``interactive_gap_mean_s``);
    batch bursts are *collections* submitted seconds apart (``batch_gap_mean_s``).
    Runtime scores inside a burst share a burst level with correlation
    ``runtime_correlation`` (jobs of one collection are alike), and the level is
    anti-correlated with the burst size by ``size_runtime_correlation`` (large
    collections are parameter sweeps of short jobs; multi-day jobs come few at a time);
    :func:`_burst_levels` keeps every per-class runtime marginal exactly as calibrated.

    Burst starts: a Poisson process whose rate is the product of a two-state Markov
    regime (calm / busy, exponential sojourns, rate ratio ``busy_rate_ratio``), a daily
    cosine (peak at ``daily_peak_hour``, relative amplitude ``daily_amplitude``) and a
    ``weekend_factor``.  None of these values is published.

    Calibration protocol (docs/workloads.md gives the numbers).  The values were chosen
    by a random search (400 points) and a local search (200 points) over all twelve
    values, each point judged on calibration seeds 100-111 (never the seeds 0-9 of the
    reported tables) by replaying it with :class:`rlsched.sim.engine.Simulator` on 81
    cores under FCFS and under interactive-first (:func:`interactive_first_priority`),
    against two published anchors:

    * achievable (a hard constraint): interactive-first must reach at least what the
      papers' non-preemptive RL reached on the real trace -- interactive W >= 0.87 and
      >= 86% of interactive jobs under 2 min (P-grid Table 2, §5.2) -- since the real
      arrival sequence admitted it.  Required with margin: W >= 0.89, >= 88%.
    * native (the objective): FCFS, our stand-in for the native EGEE scheduler, as close
      as possible to the native W (0.628 / 0.830), 63% under 2 min and mean waits
      2,756 s / 13,041 s (P-grid Tables 2-3, P-fqi Table 3).

    The two conflict.  With one-core jobs every work-conserving policy makes an
    interactive job wait only when it arrives at a full machine; FCFS then queues it
    behind the whole backlog (it waits > 2 min in ~99% of such arrivals), interactive-first
    only until the next core frees (~431 s apart on average when the 81 cores hold
    batch jobs of mean 34,927 s).  So 63% under 2 min for FCFS needs ~37% of
    interactive arrivals at a full machine, and that leaves interactive-first far below
    86%.  No point searched reaches both: the chosen one meets the achievable anchor
    with margin and the native interactive mean wait, while FCFS keeps ~83% (not 63%)
    of interactive jobs under 2 min.  The native scheduler was not FCFS and apparently
    not work conserving (queues by VO; its batch mean wait of 13,041 s at utilization
    0.56 is almost 4x the RL one, 3,492 s, on the same cores: P-fqi Table 3).
    """

    interactive_burst_median: float = 10.0
    batch_burst_median: float = 5.0
    burst_size_sigma: float = 1.45
    interactive_gap_mean_s: float = 240.0
    batch_gap_mean_s: float = 6.0
    runtime_correlation: float = 0.7
    size_runtime_correlation: float = 0.92
    calm_mean_s: float = 4.5 * DAY_S
    busy_mean_s: float = 0.2 * DAY_S
    busy_rate_ratio: float = 2.8
    daily_amplitude: float = 0.45
    daily_peak_hour: float = 14.0
    weekend_factor: float = 0.9
    rate_grid_s: float = 600.0


DEFAULT_ARRIVALS = ArrivalModel()

RequestModel = Literal["queue_limit"]


@dataclass(frozen=True)
class _Bursts:
    size: IntArray
    job_class: IntArray


def _draw_burst_sizes(rng: np.random.Generator, n_jobs: int, median: float, sigma: float) -> IntArray:
    """Burst sizes (>= 1) summing to exactly ``n_jobs`` (the last burst is trimmed)."""
    if n_jobs == 0:
        return np.zeros(0, dtype=np.int64)
    sizes: list[IntArray] = []
    total = 0
    while total < n_jobs:
        expected = max(8, int(2 * n_jobs / (median * math.exp(sigma * sigma / 2))) + 8)
        draw = np.ceil(median * np.exp(sigma * rng.standard_normal(expected))).astype(np.int64)
        sizes.append(np.maximum(draw, 1))
        total += int(sizes[-1].sum())
    all_sizes = np.concatenate(sizes)
    cut = int(np.searchsorted(np.cumsum(all_sizes), n_jobs))
    out = all_sizes[: cut + 1].copy()
    out[-1] -= int(out.sum()) - n_jobs
    return out


def _job_levels(
    rng: np.random.Generator, bursts: _Bursts, burst_of_job: IntArray, size_correlation: float
) -> FloatArray:
    """Runtime level (a standard-normal score) per job, shared closely inside each burst.

    Per class, bursts are ranked by ``-c * standardised log(size) + sqrt(1 - c^2) * noise``
    and laid end to end on [0, 1), each taking a slice as wide as its share of the
    class's jobs; a job's level is the normal quantile of a uniform point in its
    burst's slice.  So big bursts hold short jobs when ``c > 0``, the jobs of a burst
    have nearly the same level, and -- a random job falls in a slice with probability
    proportional to the slice width -- every job's level is exactly N(0, 1): the
    per-class runtime marginals stay exactly as calibrated.
    """
    low = np.empty(len(bursts.size))
    noise = rng.standard_normal(len(bursts.size))
    for cls in (JobClass.INTERACTIVE, JobClass.BATCH):
        members = np.flatnonzero(bursts.job_class == cls)
        if len(members) == 0:
            continue
        log_size = np.log(bursts.size[members].astype(np.float64))
        spread = float(log_size.std())
        standard = (log_size - log_size.mean()) / spread if spread > 0 else np.zeros(len(members))
        key = -size_correlation * standard + math.sqrt(1.0 - size_correlation**2) * noise[members]
        order = members[np.argsort(key, kind="stable")]
        sizes = bursts.size[order].astype(np.float64)
        low[order] = (np.cumsum(sizes) - sizes) / sizes.sum()
    class_jobs = np.bincount(bursts.job_class, weights=bursts.size)[bursts.job_class]
    width = bursts.size / class_jobs
    u = low[burst_of_job] + width[burst_of_job] * rng.random(len(burst_of_job))
    return np.asarray(np.interp(u, _PHI_GRID, _Z_GRID))


def _burst_rate(rng: np.random.Generator, span_s: float, model: ArrivalModel) -> tuple[FloatArray, FloatArray]:
    """Bin edges and relative burst rate per bin over [0, span_s) (regime x daily x weekly)."""
    n_bins = max(1, math.ceil(span_s / model.rate_grid_s))
    edges = np.linspace(0.0, span_s, n_bins + 1)
    mid = 0.5 * (edges[1:] + edges[:-1])
    # Two-state regime: alternate exponential sojourns, starting in the stationary mix.
    busy_prob = model.busy_mean_s / (model.busy_mean_s + model.calm_mean_s)
    busy = bool(rng.random() < busy_prob)
    switch_times = []
    states = [busy]
    t = 0.0
    while t < span_s:
        t += rng.exponential(model.busy_mean_s if busy else model.calm_mean_s)
        busy = not busy
        switch_times.append(t)
        states.append(busy)
    regime_state = np.asarray(states)[np.searchsorted(np.asarray(switch_times), mid, side="right")]
    regime = np.where(regime_state, model.busy_rate_ratio, 1.0)
    hour = (mid % DAY_S) / 3600.0
    daily = 1.0 + model.daily_amplitude * np.cos(2 * np.pi * (hour - model.daily_peak_hour) / 24.0)
    weekday = (_START_WEEKDAY + (mid // DAY_S).astype(np.int64)) % 7
    weekly = np.where(weekday >= 5, model.weekend_factor, 1.0)
    return edges, regime * daily * weekly


def _draw_burst_starts(rng: np.random.Generator, n: int, edges: FloatArray, rate: FloatArray) -> FloatArray:
    """``n`` iid points of the normalised intensity (a Poisson process given its count)."""
    cumulative = np.concatenate(([0.0], np.cumsum(rate * np.diff(edges))))
    u = rng.random(n) * cumulative[-1]
    bins = np.clip(np.searchsorted(cumulative, u, side="right") - 1, 0, len(rate) - 1)
    within = (u - cumulative[bins]) / (rate[bins] * np.diff(edges)[bins])
    return np.asarray(edges[bins] + within * np.diff(edges)[bins])


def _assign_vos(
    rng: np.random.Generator, burst_class: IntArray, burst_work: FloatArray, shares: FloatArray
) -> IntArray:
    """VO of each burst, such that every VO's share of all CPU time is near its target.

    Interactive bursts (0.4% of the work) take a VO at random with the target shares as
    probabilities, so every VO has interactive jobs (P-grid §5.1: "all VOs have
    interactive and batch jobs").  Batch bursts, largest work first, go to a VO drawn
    with probability proportional to its remaining CPU-time deficit among the VOs the
    burst fits in (deficit >= work), or to the VO with the largest deficit when it fits
    nowhere; dealing the work out this way lands each VO within a fraction of a percent
    of its share, while a purely random draw would miss the small VOs by tens of percent
    (one batch burst can hold several percent of all work).
    """
    n_vos = len(shares)
    vo = np.full(len(burst_class), -1, dtype=np.int64)
    interactive = np.flatnonzero(burst_class == JobClass.INTERACTIVE)
    vo[interactive] = rng.choice(n_vos, size=len(interactive), p=shares)
    # One interactive burst per VO at least (when there are enough bursts).
    seeded = rng.permutation(interactive)[:n_vos]
    vo[seeded] = np.arange(len(seeded))
    deficit = (shares * float(burst_work.sum())).tolist()
    for k, work in zip(vo[interactive].tolist(), burst_work[interactive].tolist(), strict=True):
        deficit[k] -= work
    batch = np.flatnonzero(burst_class != JobClass.INTERACTIVE)
    batch = batch[np.argsort(-burst_work[batch], kind="stable")]
    uniform = rng.random(len(batch)).tolist()
    # Plain Python on 7 floats: ~20x faster than NumPy calls per burst here.
    for i, work, u in zip(batch.tolist(), burst_work[batch].tolist(), uniform, strict=True):
        weights = [d if d >= work else 0.0 for d in deficit]
        total = sum(weights)
        k = _weighted_pick(weights, u * total) if total > 0.0 else max(range(n_vos), key=deficit.__getitem__)
        vo[i] = k
        deficit[k] -= work
    return vo


def _weighted_pick(weights: list[float], threshold: float) -> int:
    """Index of the first positive weight whose cumulative sum reaches ``threshold``."""
    acc = 0.0
    last = 0
    for k, weight in enumerate(weights):
        if weight > 0.0:
            acc += weight
            last = k
            if acc >= threshold:
                return k
    return last  # rounding: threshold a hair above the total


def _users_per_vo(shares: FloatArray) -> IntArray:
    """Illustrative user pools: about 40 users in all, at least 2 per VO (not published)."""
    return np.maximum(2, np.round(40 * shares)).astype(np.int64)


def generate_lal(
    seed: int = 0,
    *,
    scale: float = 1.0,
    arrivals: ArrivalModel = DEFAULT_ARRIVALS,
    requests: RequestModel = "queue_limit",
) -> Workload:
    """The LAL-like workload (see the module docstring and docs/workloads.md).

    ``scale`` multiplies the job counts (rounded, at least one job per class) and, through
    the utilization constraint, the span -- ``scale=0.1`` is a tenth of the trace at the
    same load.  ``requests='queue_limit'`` (the only model so far): every job requests its
    queue's wall-time limit, 900 s for interactive jobs (the limit that defines the class,
    P-grid §4.2) and one week for batch jobs.  gLite jobs carried no per-job wall-time
    request, so a scheduler that reads requested times (EASY, SJF) learns the class and
    nothing more: SJF becomes "interactive first, FCFS inside a class".

    Deterministic under ``seed`` (one ``numpy.random.Generator(PCG64(seed))``).
    """
    _check_options(scale, requests, arrivals)
    rng = np.random.Generator(np.random.PCG64(seed))
    shares = np.asarray(PUBLISHED_VO_SHARES, dtype=np.float64)
    shares = shares / shares.sum()
    n_interactive = max(1, round(PUBLISHED_INTERACTIVE_JOBS * scale))
    n_batch = max(1, round(PUBLISHED_BATCH_JOBS * scale))

    # Layer 2: bursts (size, class), then correlated runtime scores per burst.
    sigma = arrivals.burst_size_sigma
    sizes_i = _draw_burst_sizes(rng, n_interactive, arrivals.interactive_burst_median, sigma)
    sizes_b = _draw_burst_sizes(rng, n_batch, arrivals.batch_burst_median, sigma)
    bursts = _Bursts(
        size=np.concatenate((sizes_i, sizes_b)),
        job_class=np.concatenate(
            (
                np.full(len(sizes_i), JobClass.INTERACTIVE, dtype=np.int64),
                np.full(len(sizes_b), JobClass.BATCH, dtype=np.int64),
            )
        ),
    )
    n_bursts = len(bursts.size)
    burst_of_job = np.repeat(np.arange(n_bursts), bursts.size)
    job_class = bursts.job_class[burst_of_job]
    run = _runtimes(rng, bursts, burst_of_job, job_class, arrivals)
    burst_work = np.asarray(np.bincount(burst_of_job, weights=run, minlength=n_bursts), dtype=np.float64)

    # VOs and users per burst.
    burst_vo = _assign_vos(rng, bursts.job_class, burst_work, shares)
    pool = _users_per_vo(shares)
    first_user = np.concatenate(([1], 1 + np.cumsum(pool)[:-1]))
    zipf_rank = np.floor(pool[burst_vo] * rng.random(n_bursts) ** 2).astype(np.int64)  # skewed to rank 0
    burst_user = first_user[burst_vo] + zipf_rank

    # Layer 3: the span that gives the published utilization, then burst starts in it.
    span = float(run.sum()) / (LAL_CORES * PUBLISHED_UTILIZATION)
    submit = _submit_times(rng, span, arrivals, bursts, burst_of_job, job_class)
    # Bursts that start near the end spill over by minutes; stretch the time axis (by a
    # factor within 1e-3 of 1) so the submissions span exactly [0, span].
    order = np.argsort(submit, kind="stable")
    submit = submit[order] - submit[order][0]
    if submit[-1] > 0:
        submit *= span / submit[-1]
    return _lal_workload(
        submit,
        run[order],
        job_class[order],
        burst_vo[burst_of_job][order],
        burst_user[burst_of_job][order],
        _header(seed, scale, span, arrivals),
    )


def _check_options(scale: float, requests: RequestModel, arrivals: ArrivalModel) -> None:
    if not scale > 0 or not math.isfinite(scale):
        raise ValueError(f"generate_lal: scale must be a positive number, got {scale!r}")
    if requests != "queue_limit":
        raise ValueError(f"generate_lal: unknown request model {requests!r}; known: queue_limit")
    for name in ("runtime_correlation", "size_runtime_correlation"):
        value = getattr(arrivals, name)
        if not 0.0 <= value < 1.0:
            raise ValueError(f"generate_lal: ArrivalModel.{name} must be in [0, 1), got {value!r}")


def _runtimes(
    rng: np.random.Generator, bursts: _Bursts, burst_of_job: IntArray, job_class: IntArray, arrivals: ArrivalModel
) -> FloatArray:
    """Each job's runtime from its burst's level and its own noise (correlation ``runtime_correlation``)."""
    rho = arrivals.runtime_correlation
    level = _job_levels(rng, bursts, burst_of_job, arrivals.size_runtime_correlation)
    scores = rho * level + math.sqrt(1.0 - rho * rho) * rng.standard_normal(len(burst_of_job))
    interactive = job_class == JobClass.INTERACTIVE
    run = np.empty(len(scores))
    # Whole seconds, as in a PBS log; >= 1 s so that W = run/(run+wait) is always defined,
    # and interactive jobs stay < 900 s so the runtime class rule agrees with job_class.
    run[interactive] = np.clip(
        np.rint(interactive_runtime_from_scores(scores[interactive])), 1.0, INTERACTIVE_THRESHOLD_S - 1.0
    )
    run[~interactive] = np.clip(
        np.rint(batch_runtime_from_scores(scores[~interactive])), INTERACTIVE_THRESHOLD_S, BATCH_RUNTIME.limit_s
    )
    return run


def _submit_times(
    rng: np.random.Generator,
    span: float,
    arrivals: ArrivalModel,
    bursts: _Bursts,
    burst_of_job: IntArray,
    job_class: IntArray,
) -> FloatArray:
    """Each job's submit time (unsorted): its burst's start in ``[0, span]`` plus the gaps inside the burst."""
    edges, rate = _burst_rate(rng, span, arrivals)
    burst_start = _draw_burst_starts(rng, len(bursts.size), edges, rate)
    gap_mean = np.where(job_class == JobClass.INTERACTIVE, arrivals.interactive_gap_mean_s, arrivals.batch_gap_mean_s)
    gaps = rng.exponential(1.0, size=len(burst_of_job)) * gap_mean
    # Offset of each job inside its burst: cumulative gaps, restarting at every burst
    # (the first job of a burst arrives at the burst start).
    burst_first_job = np.concatenate(([0], np.cumsum(bursts.size)[:-1]))
    gaps[burst_first_job] = 0.0
    cumulative_gaps = np.cumsum(gaps)
    offset = cumulative_gaps - cumulative_gaps[burst_first_job][burst_of_job]
    return np.asarray(burst_start[burst_of_job] + offset)


def _lal_workload(
    submit: FloatArray, run: FloatArray, job_class: IntArray, vo: IntArray, user: IntArray, header: dict[str, str]
) -> Workload:
    """The jobs (in submit order) as the ``lal`` :class:`Workload`: one core each, the queue's limit as request."""
    req_time = np.where(job_class == JobClass.INTERACTIVE, INTERACTIVE_THRESHOLD_S, BATCH_RUNTIME.limit_s)
    n = len(run)
    return Workload(
        name="lal",
        max_procs=LAL_CORES,
        job_id=np.arange(1, n + 1, dtype=np.int64),
        submit=submit,
        run=run,
        req_time=req_time.astype(np.float64),
        procs=np.ones(n, dtype=np.int64),
        user=user.astype(np.int64),
        group=(vo + 1).astype(np.int64),
        queue=(vo + 1).astype(np.int64),
        partition=np.full(n, -1, dtype=np.int64),
        executable=np.full(n, -1, dtype=np.int64),
        recorded_wait=np.full(n, np.nan),
        vo=vo.astype(np.int64),
        job_class=job_class.astype(np.int64),
        vo_names=LAL_VO_NAMES,
        vo_shares=tuple(float(s) for s in PUBLISHED_VO_SHARES),
        header=header,
        unix_start_time=LAL_UNIX_START,
        synthetic=True,
    )


def _header(seed: int, scale: float, span_s: float, arrivals: ArrivalModel) -> dict[str, str]:
    """Header fields describing the calibration (printed by ``rlsched trace info lal``)."""
    ia, ba = INTERACTIVE_RUNTIME, BATCH_RUNTIME
    return {
        "Generator": "rlsched LAL-like synthetic workload (sim/workloads/lal.py); NOT the real LAL trace",
        "Calibration": (
            "Perez et al. P-grid §4.2 Table 1: 81 cores, 4480 interactive (mean 160 s, median "
            "190 s, sd 108 s), 5020 batch (mean 34927 s, median 15615 s, sd 78755 s), "
            "utilization 0.56, VO shares 0.53/0.02/0.17/0.08/0.01/0.16/0.03"
        ),
        "Seed": str(seed),
        "Scale": repr(scale),
        "MaxProcs": str(LAL_CORES),
        "SpanSeconds": f"{span_s:.0f}",
        "InteractiveRuntime": (
            f"mixture: {ia.short_weight:.4f} x exp(mean {ia.short_mean_s:g} s) + "
            f"gamma(k={ia.bulk_shape:.3f}, scale={ia.bulk_scale_s:.3f} s), < 900 s"
        ),
        "BatchRuntime": (
            f"lognormal(mu={ba.body_mu:.4f}, sigma={ba.body_sigma:.4f}) on [900 s, "
            f"{ba.limit_s:.0f} s) + {ba.killed_fraction:.4f} killed at the limit"
        ),
        "Arrivals": (
            f"bursts (median {arrivals.interactive_burst_median:g} interactive jobs "
            f"{arrivals.interactive_gap_mean_s:g} s apart / {arrivals.batch_burst_median:g} batch "
            f"jobs {arrivals.batch_gap_mean_s:g} s apart, size sigma {arrivals.burst_size_sigma:g}, "
            f"runtime correlation {arrivals.runtime_correlation:g}, size-runtime correlation "
            f"-{arrivals.size_runtime_correlation:g}), MMPP calm/busy "
            f"{arrivals.calm_mean_s / DAY_S:g} d/{arrivals.busy_mean_s / DAY_S:g} d, "
            f"rate ratio {arrivals.busy_rate_ratio:g}, daily and weekly cycle"
        ),
        "RequestedTime": f"queue limit: 900 s interactive, {ba.limit_s:.0f} s batch",
        "Note": "queue = group = VO (1-based); user = submitter of the burst",
    }


# --------------------------------------------------------------------------------------
# Calibration helper
# --------------------------------------------------------------------------------------


def fcfs_waits(workload: Workload, cores: int = LAL_CORES) -> FloatArray:
    """Waits (s) of serial jobs under FCFS on ``cores`` cores: start = max(submit, first free core).

    A quick cross-check of the engine (the calibration itself replays with
    :class:`rlsched.sim.engine.Simulator`).  Exact for one-core jobs, for which FCFS and
    EASY coincide (the head job always fits the first free core).
    """
    if np.any(workload.procs != 1):
        raise ValueError(f"fcfs_waits: workload {workload.name!r} has multi-core jobs")
    free = [0.0] * cores
    waits = np.empty(len(workload))
    for i, (t, r) in enumerate(zip(workload.submit.tolist(), workload.run.tolist(), strict=True)):
        earliest = free[0]
        start = t if earliest <= t else earliest
        heapq.heapreplace(free, start + r)
        waits[i] = start - t
    return waits


#: Seeds the arrival calibration was tuned on (distinct from the seeds 0-9 of reported tables).
CALIBRATION_SEEDS = tuple(range(100, 132))


def interactive_first_priority(workload: Workload) -> FloatArray:
    """Static priority key (lower starts first) of the registry's ``interactive-first`` rule.

    Interactive jobs before batch jobs, FCFS within a class, never preempting:
    ``Simulator(workload, priority=interactive_first_priority(workload), backfill=True)``, the
    same run as ``simulate_policy(workload, "interactive-first")`` (:mod:`rlsched.sim.policies`;
    the key is defined once, in :mod:`rlsched.core.policies`).  It is the simple class-aware
    policy of the achievable anchor (:class:`ArrivalModel`).
    """
    from rlsched.core.policies import resolve, static_key
    from rlsched.sim.policies import static_priority

    key = static_key(resolve("interactive-first"))
    assert key is not None
    priority = static_priority(key, workload)
    return priority if priority is not None else np.arange(len(workload), dtype=np.float64)


#: The policies the calibration table replays: name -> (priority key or None for FCFS, backfill).
_TABLE_POLICIES: tuple[tuple[str, bool, bool], ...] = (
    ("FCFS", False, False),
    ("EASY", False, True),
    ("interactive-first", True, True),
)


def calibration_table(
    seeds: Sequence[int] = CALIBRATION_SEEDS, scale: float = 1.0
) -> list[tuple[str, float | None, float, float]]:
    """Published statistic beside the generator's: rows (name, published or None, mean, sd over seeds).

    The queueing rows replay each workload with :class:`rlsched.sim.engine.Simulator` on
    81 cores under FCFS, EASY and interactive-first.  Their published column is the
    native EGEE schedule for FCFS and EASY (the native scheduler was neither: it had
    per-VO queues and fair-share, and favoured short jobs) and the papers' rigid RL
    for interactive-first (P-grid Table 2 and §5.2, P-fqi Table 3).
    """
    from rlsched.core.measures import responsiveness, utilization
    from rlsched.sim.engine import Simulator

    shares = np.asarray(PUBLISHED_VO_SHARES)
    rows: dict[str, list[float]] = {}
    published: dict[str, float | None] = {}

    def add(name: str, target: float | None, value: float) -> None:
        published[name] = target
        rows.setdefault(name, []).append(value)

    for seed in seeds:
        w = generate_lal(seed, scale=scale)
        ia = w.interactive
        run_i, run_b = w.run[ia], w.run[~ia]
        span = float(w.submit[-1] - w.submit[0])
        hourly = np.bincount((w.submit // 3600).astype(np.int64))
        cpu = np.bincount(w.vo, weights=w.run, minlength=len(shares)) / w.run.sum()
        add("interactive jobs", PUBLISHED_INTERACTIVE_JOBS * scale, float(ia.sum()))
        add("interactive mean (s)", PUBLISHED_INTERACTIVE_MEAN_S, float(run_i.mean()))
        add("interactive median (s)", PUBLISHED_INTERACTIVE_MEDIAN_S, float(np.median(run_i)))
        add("interactive sd (s)", PUBLISHED_INTERACTIVE_SD_S, float(run_i.std()))
        add("batch jobs", PUBLISHED_BATCH_JOBS * scale, float((~ia).sum()))
        add("batch mean (s)", PUBLISHED_BATCH_MEAN_S, float(run_b.mean()))
        add("batch median (s)", PUBLISHED_BATCH_MEDIAN_S, float(np.median(run_b)))
        add("batch sd (s)", PUBLISHED_BATCH_SD_S, float(run_b.std()))
        add("batch killed at the 1-week limit", None, float(np.mean(run_b >= BATCH_RUNTIME.limit_s)))
        add(
            "utilization over the submission span",
            PUBLISHED_UTILIZATION,
            utilization(float(w.run.sum()), LAL_CORES, span),
        )
        add("offered load to the last completion", None, float(w.summary()["offered_load"]))
        add("submission span (days)", None, span / DAY_S)
        add("max abs(VO CPU share - target share)", 0.0, float(np.max(np.abs(cpu - shares))))
        add("index of dispersion, arrivals/hour", None, float(hourly.var() / hourly.mean()))
        for policy, class_first, backfill in _TABLE_POLICIES:
            priority = interactive_first_priority(w) if class_first else None
            schedule = Simulator(w, priority=priority, backfill=backfill).run()
            wait = schedule.wait
            resp = responsiveness(run_s=schedule.run, wait_s=wait)
            native = not class_first
            add(
                f"{policy}: interactive W",
                PUBLISHED_NATIVE_INTERACTIVE_W if native else PUBLISHED_RL_INTERACTIVE_W,
                float(resp[ia].mean()),
            )
            add(
                f"{policy}: interactive sd(W)",
                PUBLISHED_NATIVE_INTERACTIVE_W_SD if native else None,
                float(resp[ia].std()),
            )
            add(
                f"{policy}: interactive wait < 120 s",
                PUBLISHED_NATIVE_INTERACTIVE_UNDER_120S if native else PUBLISHED_RL_INTERACTIVE_UNDER_120S,
                float(np.mean(wait[ia] < 120.0)),
            )
            add(
                f"{policy}: interactive mean wait (s)",
                PUBLISHED_NATIVE_INTERACTIVE_WAIT_S if native else PUBLISHED_RL_INTERACTIVE_WAIT_S,
                float(wait[ia].mean()),
            )
            add(f"{policy}: batch W", PUBLISHED_NATIVE_BATCH_W if native else None, float(resp[~ia].mean()))
            add(
                f"{policy}: batch mean wait (s)",
                PUBLISHED_NATIVE_BATCH_WAIT_S if native else None,
                float(wait[~ia].mean()),
            )
    return [(name, published[name], float(np.mean(v)), float(np.std(v))) for name, v in rows.items()]


def format_calibration_table(rows: Sequence[tuple[str, float | None, float, float]], n_seeds: int) -> str:
    """A Markdown table of :func:`calibration_table` rows."""
    lines = [f"| statistic | published | generated (mean ± sd over {n_seeds} seeds) |", "|---|---:|---:|"]

    def number(x: float) -> str:
        return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"

    for name, target, mean, sd in rows:
        shown = "-" if target is None else number(target)
        lines.append(f"| {name} | {shown} | {number(mean)} ± {number(sd)} |")
    lines += [
        "",
        "Published column of the queueing rows: the native EGEE schedule for FCFS and EASY "
        "(P-grid Tables 2-3, P-fqi Table 3); the papers' rigid RL for interactive-first "
        "(P-grid Table 2, §5.2; P-fqi Table 3), a level interactive-first must reach.",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    print(format_calibration_table(calibration_table(CALIBRATION_SEEDS), len(CALIBRATION_SEEDS)))
