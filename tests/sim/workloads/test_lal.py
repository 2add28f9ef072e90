"""The LAL-like synthetic workload against the published LAL statistics (P-grid §4.2, Table 1)."""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from functools import cache

import numpy as np
import pytest

from rlsched.core.measures import responsiveness
from rlsched.core.view import FloatArray, JobClass
from rlsched.sim.engine import Simulator
from rlsched.sim.workload import Workload, classify_by_runtime
from rlsched.sim.workloads import lal

#: Statistics are averaged over these seeds (the heavy-tailed batch moments vary by
#: ~8% (mean) and ~10% (sd) from one seed to the next).  They are calibration seeds (100–131,
#: docs/workloads.md), apart from the seeds of reported tables (0–9; ≥ 1000 for tuning).
SEEDS = tuple(range(100, 112))


@cache
def workload(seed: int) -> Workload:
    return lal.generate_lal(seed)


def seed_average(statistic: Callable[[Workload], float]) -> float:
    return float(np.mean([statistic(workload(s)) for s in SEEDS]))


def rel_err(value: float, target: float) -> float:
    return abs(value / target - 1.0)


# --- calibration constants ------------------------------------------------------------


def test_interactive_constants_rederive_and_hit_published_moments() -> None:
    solved = lal.solve_interactive_runtime()
    for name in ("short_weight", "bulk_shape", "bulk_scale_s"):
        assert getattr(solved, name) == pytest.approx(getattr(lal.INTERACTIVE_RUNTIME, name), rel=1e-6), name
    mean, median, sd = lal.INTERACTIVE_RUNTIME.moments()
    assert mean == pytest.approx(160.0, rel=1e-6)
    assert median == pytest.approx(190.0, rel=1e-6)
    assert sd == pytest.approx(108.0, rel=1e-6)


def test_batch_constants_rederive_and_hit_published_moments() -> None:
    solved = lal.solve_batch_runtime()
    for name in ("body_mu", "body_sigma", "killed_fraction"):
        assert getattr(solved, name) == pytest.approx(getattr(lal.BATCH_RUNTIME, name), rel=1e-6), name
    mean, median, sd = lal.BATCH_RUNTIME.moments()
    assert mean == pytest.approx(34927.0, rel=1e-6)
    assert median == pytest.approx(15615.0, rel=1e-6)
    assert sd == pytest.approx(78755.0, rel=1e-6)


def test_plain_lognormal_cannot_match_batch_moments() -> None:
    """Why the batch model needs its killed-at-the-limit mass: a lognormal with the
    published mean/median ratio has an sd ~11% short of the published one."""
    sigma2 = 2.0 * math.log(34927.0 / 15615.0)
    sd = 34927.0 * math.sqrt(math.expm1(sigma2))
    assert sd < 0.9 * 78755.0


def test_tabulated_quantiles_match_exact_distributions() -> None:
    from scipy import special

    z = np.linspace(-4.0, 4.0, 401)
    u = special.ndtr(z)
    x_int = lal.interactive_runtime_from_scores(z)
    assert np.max(np.abs(lal.INTERACTIVE_RUNTIME.cdf(x_int) - u)) < 2e-4
    # Batch: exact quantile of the body, and the limit above the body's mass.
    m = lal.BATCH_RUNTIME
    a, b = special.ndtr((np.log([m.floor_s, m.limit_s]) - m.body_mu) / m.body_sigma)
    body = u < 1.0 - m.killed_fraction
    exact = np.full(len(z), m.limit_s)
    body_u = a + u[body] / (1 - m.killed_fraction) * (b - a)
    exact[body] = np.exp(m.body_mu + m.body_sigma * special.ndtri(body_u))
    np.testing.assert_allclose(lal.batch_runtime_from_scores(z), exact, rtol=2e-4)


# --- the generated workload -------------------------------------------------------------


def test_exact_counts_and_columns() -> None:
    w = workload(SEEDS[0])
    assert w.name == "lal" and w.max_procs == 81 and w.synthetic
    assert len(w) == 9500
    assert int(w.interactive.sum()) == 4480
    assert int((w.job_class == JobClass.BATCH).sum()) == 5020
    assert np.all(w.procs == 1)
    assert np.all(np.diff(w.submit) >= 0) and w.submit[0] == 0.0
    assert np.array_equal(w.job_id, np.arange(1, 9501))
    assert np.all(np.isnan(w.recorded_wait)) and not w.has_recorded_waits
    # The class agrees with the P-grid §4.2 runtime rule, and runtimes are whole seconds >= 1.
    assert np.array_equal(w.job_class, classify_by_runtime(w.run))
    assert np.all(w.run >= 1) and np.all(w.run == np.rint(w.run))
    # Requests: the queue limit; nobody runs past it (the killed jobs run exactly to it).
    assert np.all(w.req_time[w.interactive] == 900.0)
    assert np.all(w.req_time[~w.interactive] == lal.BATCH_WALLTIME_LIMIT_S)
    assert np.all(w.run <= w.req_time)
    assert w.vo_names == lal.LAL_VO_NAMES and len(w.vo_names) == 7
    assert w.vo_shares == (0.53, 0.02, 0.17, 0.08, 0.01, 0.16, 0.03)
    assert np.array_equal(w.group, w.vo + 1) and np.array_equal(w.queue, w.vo + 1)
    assert np.all(w.partition == -1) and np.all(w.user >= 1)
    assert "Calibration" in w.header and w.unix_start_time == lal.LAL_UNIX_START


@pytest.mark.parametrize(
    ("job_class", "statistic", "target", "tolerance"),
    [
        (JobClass.INTERACTIVE, np.mean, 160.0, 0.05),
        (JobClass.INTERACTIVE, np.median, 190.0, 0.05),
        (JobClass.INTERACTIVE, np.std, 108.0, 0.05),
        (JobClass.BATCH, np.mean, 34927.0, 0.05),
        (JobClass.BATCH, np.median, 15615.0, 0.05),
        (JobClass.BATCH, np.std, 78755.0, 0.10),
    ],
)
def test_runtime_moments_match_published(
    job_class: JobClass, statistic: Callable[[FloatArray], float], target: float, tolerance: float
) -> None:
    value = seed_average(lambda w: statistic(w.run[w.job_class == job_class]))
    assert rel_err(value, target) < tolerance, f"{statistic.__name__} {value:.1f} vs {target}"


def test_utilization_over_the_span_is_published() -> None:
    for s in SEEDS[:4]:
        w = workload(s)
        span = float(w.submit[-1] - w.submit[0])
        assert float(w.run.sum()) / (81 * span) == pytest.approx(0.56, rel=1e-9)
        # About seven weeks (the published numbers imply ~45 days of submissions).
        assert 35 < span / 86400 < 55


def test_vo_cpu_shares_match_targets_every_seed() -> None:
    shares = np.asarray(lal.PUBLISHED_VO_SHARES)
    for s in SEEDS:
        w = workload(s)
        cpu = np.bincount(w.vo, weights=w.run, minlength=7) / w.run.sum()
        assert np.max(np.abs(cpu - shares)) < 0.005, (s, cpu)
        # Every VO has interactive and batch jobs (P-grid §5.1).
        for cls in (JobClass.INTERACTIVE, JobClass.BATCH):
            assert set(np.unique(w.vo[w.job_class == cls])) == set(range(7)), (s, cls)


def test_same_seed_same_workload_and_seeds_differ() -> None:
    a, b, c = lal.generate_lal(7), lal.generate_lal(7), lal.generate_lal(8)
    for column in ("submit", "run", "req_time", "vo", "user", "job_class"):
        assert np.array_equal(getattr(a, column), getattr(b, column)), column
    assert a.header == b.header
    assert not np.array_equal(a.run, c.run)
    assert not np.array_equal(a.submit, c.submit)
    assert not np.array_equal(a.vo, c.vo)


def test_arrivals_are_bursty() -> None:
    """Index of dispersion of hourly arrival counts: 1 for Poisson, far above for LAL-like."""
    for s in SEEDS[:4]:
        counts = np.bincount((workload(s).submit // 3600).astype(np.int64))
        assert counts.var() / counts.mean() > 10.0
    # The same counts with the bursts switched off (bursts of ceil(0.5) = 1 job, no regime
    # and no cycles) are close to Poisson: the measure can fail.
    calm = dataclasses.replace(
        lal.DEFAULT_ARRIVALS,
        interactive_burst_median=0.5,
        batch_burst_median=0.5,
        burst_size_sigma=1e-9,
        busy_rate_ratio=1.0,
        daily_amplitude=0.0,
        weekend_factor=1.0,
        size_runtime_correlation=0.0,
    )
    counts = np.bincount((lal.generate_lal(SEEDS[0], arrivals=calm).submit // 3600).astype(np.int64))
    assert counts.var() / counts.mean() < 1.5


@cache
def replay(seed: int, policy: str) -> dict[str, float]:
    """Interactive W, share under 2 min, mean waits, batch W of one workload on 81 cores."""
    w = workload(seed)
    priority = lal.interactive_first_priority(w) if policy == "interactive-first" else None
    schedule = Simulator(w, priority=priority, backfill=policy != "fcfs").run()
    resp = responsiveness(run_s=schedule.run, wait_s=schedule.wait)
    ia = w.interactive
    return {
        "W_i": float(resp[ia].mean()),
        "under_120": float(np.mean(schedule.wait[ia] < 120.0)),
        "wait_i": float(schedule.wait[ia].mean()),
        "W_b": float(resp[~ia].mean()),
        "wait_b": float(schedule.wait[~ia].mean()),
    }


def policy_average(policy: str, key: str) -> float:
    return float(np.mean([replay(s, policy)[key] for s in SEEDS]))


def test_achievable_anchor_interactive_first_reaches_the_papers_rl() -> None:
    """The real trace admitted interactive W 0.864-0.869 and 86% under 2 min with a
    non-preemptive scheduler (P-grid Table 2, §5.2): interactive-first must reach that
    here, averaged over calibration seeds 100-111 (never the reporting seeds 0-9)."""
    assert policy_average("interactive-first", "W_i") >= lal.PUBLISHED_RL_INTERACTIVE_W
    assert policy_average("interactive-first", "under_120") >= lal.PUBLISHED_RL_INTERACTIVE_UNDER_120S
    # ... and below the P-fqi RL mean delay (495 s, Table 3), as an idealised class priority should.
    assert policy_average("interactive-first", "wait_i") < lal.PUBLISHED_RL_INTERACTIVE_WAIT_S


def test_native_anchor_fcfs_near_native_egee() -> None:
    """FCFS against the native EGEE schedule (P-grid Tables 2-3, P-fqi Table 3), within the
    tolerances docs/workloads.md states: the interactive mean wait within a factor 1.6 of
    2,756 s and batch W within 0.08 of 0.830 are matched; the share under 2 min and
    interactive W are not (FCFS ~0.82-0.85 against 0.63: the anchors conflict for a
    work-conserving FCFS), and are only bounded so that a drift of the calibration fails."""
    wait_i = policy_average("fcfs", "wait_i")
    assert lal.PUBLISHED_NATIVE_INTERACTIVE_WAIT_S / 1.6 < wait_i < 1.6 * lal.PUBLISHED_NATIVE_INTERACTIVE_WAIT_S
    assert abs(policy_average("fcfs", "W_b") - lal.PUBLISHED_NATIVE_BATCH_W) < 0.08
    assert lal.PUBLISHED_NATIVE_INTERACTIVE_UNDER_120S < policy_average("fcfs", "under_120") < 0.90
    assert lal.PUBLISHED_NATIVE_INTERACTIVE_W < policy_average("fcfs", "W_i") < 0.90
    # Batch waits: well below the native 13,041 s (the native scheduler was not work
    # conserving), but a real queue, not an idle machine.
    assert 2000.0 < policy_average("fcfs", "wait_b") < lal.PUBLISHED_NATIVE_BATCH_WAIT_S


def test_class_priority_is_what_separates_the_anchors() -> None:
    """On every seed interactive-first beats FCFS on interactive jobs, and EASY = FCFS
    (one-core jobs: the queue head always fits the first free core)."""
    for s in SEEDS:
        fcfs, first, easy = replay(s, "fcfs"), replay(s, "interactive-first"), replay(s, "easy")
        assert first["W_i"] > fcfs["W_i"] and first["under_120"] >= fcfs["under_120"], s
        assert easy == fcfs, s


def test_fcfs_waits_matches_the_engine() -> None:
    w = workload(SEEDS[1])
    np.testing.assert_allclose(lal.fcfs_waits(w), Simulator(w).run().wait, atol=1e-6)


def test_job_levels_are_standard_normal_and_big_bursts_short() -> None:
    """The size-runtime anti-correlation must not move the per-job runtime marginal."""
    rng = np.random.Generator(np.random.PCG64(5))
    sizes = np.ceil(5.0 * np.exp(1.45 * rng.standard_normal(3000))).astype(np.int64)
    cls = np.where(np.arange(3000) < 1000, JobClass.INTERACTIVE, JobClass.BATCH).astype(np.int64)
    bursts = lal._Bursts(size=sizes, job_class=cls)
    burst_of_job = np.repeat(np.arange(3000), sizes)
    level = lal._job_levels(rng, bursts, burst_of_job, 0.92)
    from scipy import stats

    for c in (JobClass.INTERACTIVE, JobClass.BATCH):
        assert stats.kstest(level[cls[burst_of_job] == c], "norm").pvalue > 0.01
    burst_mean = np.bincount(burst_of_job, weights=level) / sizes
    assert stats.spearmanr(sizes, burst_mean).statistic < -0.5
    # Jobs of one burst share nearly the same level (a narrow slice of the quantiles).
    assert np.mean(np.abs(level - burst_mean[burst_of_job])) < 0.1


@pytest.mark.parametrize("field", ["runtime_correlation", "size_runtime_correlation"])
def test_bad_correlation_is_a_clear_error(field: str) -> None:
    bad = dataclasses.replace(lal.DEFAULT_ARRIVALS, **{field: 1.0})
    with pytest.raises(ValueError, match=f"ArrivalModel.{field} must be in"):
        lal.generate_lal(0, arrivals=bad)


def test_calibration_table_rows() -> None:
    rows = {name: (target, mean) for name, target, mean, _ in lal.calibration_table(seeds=(100,), scale=0.2)}
    assert rows["interactive jobs"] == (896.0, 896.0)
    assert rows["FCFS: interactive wait < 120 s"][0] == 0.63
    assert rows["interactive-first: interactive W"][0] == lal.PUBLISHED_RL_INTERACTIVE_W
    assert rows["EASY: batch mean wait (s)"][1] == rows["FCFS: batch mean wait (s)"][1]
    text = lal.format_calibration_table(lal.calibration_table(seeds=(100,), scale=0.2), 1)
    assert "| interactive-first: interactive wait < 120 s | 0.86 |" in text


def test_fcfs_waits_by_hand() -> None:
    w = dataclasses.replace(
        workload(0).select(np.arange(4)),
        max_procs=2,
        submit=np.array([0.0, 0.0, 1.0, 2.0]),
        run=np.array([10.0, 5.0, 3.0, 1.0]),
    )
    # Cores free at 10 and 5; job 3 starts at 5 (wait 4) -> frees at 8; job 4 starts at 8 (wait 6).
    np.testing.assert_array_equal(lal.fcfs_waits(w, cores=2), [0.0, 0.0, 4.0, 6.0])


def test_scale_shrinks_jobs_and_span() -> None:
    small = lal.generate_lal(3, scale=0.1)
    assert int(small.interactive.sum()) == 448 and len(small) == 950
    assert float(small.run.sum()) / (81 * small.submit[-1]) == pytest.approx(0.56)
    assert small.submit[-1] < 0.25 * workload(3).submit[-1]
    tiny = lal.generate_lal(0, scale=1e-6)
    assert len(tiny) == 2


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf")])
def test_bad_scale_is_a_clear_error(bad: float) -> None:
    with pytest.raises(ValueError, match="scale must be a positive number"):
        lal.generate_lal(0, scale=bad)


def test_generation_is_fast() -> None:
    lal.generate_lal(0)  # tables built and cached
    timings = []
    for s in range(5):
        t0 = time.perf_counter()
        lal.generate_lal(100 + s)
        timings.append(time.perf_counter() - t0)
    assert min(timings) < 0.03
