"""The Perez et al. experiments: P-grid Tables 2–5 (rigid and elastic) on the LAL-like workload and LPC-EGEE.

This module holds the machinery the three Perez experiments share (run specifications,
one simulation, aggregation into ``results.json`` rows, the driver) and the two P-grid
experiments; :mod:`rlsched.sim.experiments.perez_fqi` adds P-fqi's and
:mod:`rlsched.sim.experiments.perez_report` writes the figures and ``report.md``.

``perez-rigid`` runs, on the LAL-like workload (rigid pool of 81 cores, P-grid §4.1) and on
a two-week window of the real LPC-EGEE trace (140 cores; its SWF group id is the VO, its
recorded waits are the ``native`` baseline, P-grid §4.1/P-fqi §4):

- ``sarsa-esn``: the RL scheduler of P-grid §3 — SARSA with an Echo State Network
  Q-function, gate mode (every job is held on submit and released by the agent whenever
  cores are idle), EDF pretraining, reward ``R_s = λ W + (1 − λ) F``; for both runtime models
  (``oracle``, ``estimated``) and λ ∈ {0.5, 1} (P-grid Table 2 reports λ = 0.5 and 1);
- ``fcfs`` (no backfilling), ``easy`` (FCFS order, EASY backfilling), ``easy-sjf`` (shortest
  requested time first, EASY backfilling) — strong classic baselines the papers lack;
- ``native`` (LPC-EGEE only): the schedule the trace recorded;
- ``sarsa-esn-keepidle``: ``sarsa-esn`` whose gate decisions may also leave the last
  :data:`KEEP_IDLE_CORES` idle cores free for interactive jobs still to come (the "no job"
  action of :class:`rlsched.core.agents.SchedulingAgent`); a learned choice the papers'
  greedy allocation does not offer;
- ``interactive-first-keepidle``: the fixed rule it can learn — interactive jobs first,
  FCFS inside a class, batch jobs never take the last :data:`KEEP_IDLE_CORES` idle cores.

``perez-elastic`` runs the elastic provisioning MDP of P-grid §3.2/§4.1 on the LAL-like
workload: the agent also chooses the pool size every period (held ≥ 15 minutes, ≥ 30
cores, ≥ running jobs, enforced by :class:`rlsched.sim.elastic.ElasticSimulator`), reward
``R_e = λ W + (1 − λ) U``; beside it the rigid ``sarsa-esn`` of the same setting, which
P-grid Table 5's queueing-delay speedup compares against.

The LPC-EGEE window (:data:`LPC_WINDOW_DAYS`): days 252–266 after the trace's start
(13–27 April 2005), 11,987 jobs, offered load 0.63 of the 140 cores.  Why this one: it is
the busiest fortnight of the trace that is not an outage (weeks 20–21, where the
recorded waits average four days, are one), its native schedule is the closest match to
the LAL native numbers the papers compare with (interactive W 0.61 vs 0.628, interactive
mean wait 2,541 s vs 2,756 s), and at about 12,000 jobs a learned run costs about what
a full LAL-like run costs.  The window's jobs start on an empty machine (jobs queued
before it are not in it); the 500 trimmed jobs cover that ramp-up.

Seeds: the reported tables use seeds ``seed .. seed + n_seeds − 1`` (the seed of the
LAL-like realisation and of the agent; LPC-EGEE is one fixed trace, so there the seed
only changes the agent).  Every hyperparameter is the paper's default (docs/perez.md) or
the core's documented one (:mod:`rlsched.core`); the few that were tuned (the ESN ridge
α, :data:`KEEP_IDLE_CORES`) were tuned on seeds :data:`TUNING_SEED_BASE` and up, never on
the reported seeds (they are refused).

Every run drops the first and last 500 jobs from the statistics and pretrains the agent
on 500 EDF decisions (P-grid §3.3/§4.1).  Quick mode scales all three by
:data:`QUICK_SCALE`: a tenth of the LAL-like workload (``generate_lal(seed, scale=0.1)``),
one day of the LPC-EGEE window, 50 trimmed jobs, 50 EDF decisions.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from rlsched.core.measures import core_seconds, group_stats, responsiveness, utilization
from rlsched.core.policies import PolicySpec, resolve
from rlsched.core.policies.registry import KEEP_IDLE_CORES as _REGISTRY_KEEP_IDLE_CORES
from rlsched.core.view import FloatArray, IntArray, JobClass
from rlsched.sim.elastic import (
    DEFAULT_HOLD_S,
    DEFAULT_MIN_CORES,
    PoolHistory,
    pool_utilization,
)
from rlsched.sim.experiments import Experiment
from rlsched.sim.experiments import perez_report as report
from rlsched.sim.experiments.harness import ExperimentOptions, run_in_pool, write_results
from rlsched.sim.metrics import trim_mask
from rlsched.sim.policies import simulate_policy
from rlsched.sim.schedulers import with_recorded_waits
from rlsched.sim.workload import Workload

#: P-grid §4.1: the LAL site's rigid pool.
LAL_CORES = 81
#: P-grid §4.1: the first and last 500 jobs are left out of the statistics.
TRIM_JOBS = 500
#: P-grid §3.3: EDF pretraining before the agent acts ("after a few learning sweeps"); the
#: paper gives no count, the core's default is 500 decisions.
PRETRAIN_DECISIONS = 500
#: Quick mode: a tenth of the workload, of the trim and of the pretraining.
QUICK_SCALE = 0.1
#: Seeds at or above this are for tuning only; reported tables use seed .. seed + n_seeds − 1.
TUNING_SEED_BASE = 1000
#: Elastic pool: options from the P-grid §4.1 floor to twice the rigid LAL pool, in steps of 10 cores.
ELASTIC_MAX_CORES = 2 * LAL_CORES
ELASTIC_STEP_CORES = 10
LAMBDAS = (0.5, 1.0)
RUNTIME_MODELS = ("estimated", "oracle")
CLASSES = (("interactive", int(JobClass.INTERACTIVE)), ("batch", int(JobClass.BATCH)))
LPC_TRACE = "lpc"
#: The LPC-EGEE window, days after the trace's start (see the module docstring for why).
LPC_WINDOW_DAYS = (252.0, 266.0)
#: Quick mode: the first day of that window.
LPC_QUICK_WINDOW_DAYS = (252.0, 253.0)
#: Classic baselines, in table order (``native`` only where the workload recorded a schedule).
CLASSIC_POLICIES = ("fcfs", "easy", "easy-sjf")
#: Learned policies: the learner and the Q-function approximator.
LEARNED_POLICIES = ("sarsa-esn", "sarsa-esn-keepidle", "fqi-esn", "fqi-ffnn")
#: The rule the ``-keepidle`` learner can learn, as a fixed baseline (rigid and elastic experiments).
RESERVATION_POLICIES = ("interactive-first-keepidle",)
#: Idle cores a ``-keepidle`` policy may keep back for interactive arrivals: the smallest K
#: whose learner reached interactive W ≥ 0.95 on tuning seeds 1000–1003
#: (``benchmarks/diag_perez_learning.py --keep-idle K``, sarsa-esn, estimated, λ = 0.5):
#: K = 1, 2, 3 gave interactive W 0.943, 0.972, 0.976 and batch W 0.801, 0.798, 0.794
#: (FCFS 0.856 / 0.802).  The fixed rule with K = 2 reached 0.993 / 0.792 there.
KEEP_IDLE_CORES = _REGISTRY_KEEP_IDLE_CORES  # the registry's default for the -keepidle policies
WORKLOADS = ("lal", "lpc-egee")
#: The learned policies of ``perez-rigid`` and ``perez-elastic`` (P-fqi's are in perez_fqi).
RIGID_LEARNED = ("sarsa-esn", "sarsa-esn-keepidle")

#: Kept for callers of the previous version; the side-by-side tables are in perez_report.PUBLISHED_ROWS.
PUBLISHED = report.PUBLISHED_SUMMARY


@dataclass(frozen=True)
class RunSpec:
    """One simulation: a workload realisation under one policy and setting.

    ``trim`` and ``pretrain_decisions`` default to the paper's 500 scaled like the
    workload (see :func:`trim_jobs`, :func:`pretrain_decisions`); ``window_days`` is the
    LPC-EGEE window (default :data:`LPC_WINDOW_DAYS`, or the quick one when ``scale < 1``).
    """

    workload: str  # "lal" or "lpc-egee"
    policy: str  # fcfs, easy, easy-sjf, interactive-first-keepidle, native, sarsa-esn[-keepidle], fqi-*
    runtime_model: str | None
    lam: float | None
    seed: int
    scale: float
    elastic: bool = False
    trim: int | None = None
    pretrain_decisions: int | None = None
    window_days: tuple[float, float] | None = None


@dataclass
class RunResult:
    """What one simulation leaves for the tables and figures.

    ``job_class``, ``wait_s`` and ``w`` hold only the jobs in the statistics (trimmed);
    ``submit_s``, ``start_s``, ``end_s``, ``procs`` and ``vo`` hold every job, for the
    time series (fairness needs the service delivered since the start).
    """

    spec: RunSpec
    job_class: IntArray
    wait_s: FloatArray
    w: FloatArray
    wall_s: float
    utilization: float
    span_s: tuple[float, float]
    pool_time_s: FloatArray | None = None
    pool_cores: IntArray | None = None
    submit_s: FloatArray | None = None
    start_s: FloatArray | None = None
    end_s: FloatArray | None = None
    procs: IntArray | None = None
    vo: IntArray | None = None
    shares: tuple[float, ...] = ()
    cores: int = 0


def _scaled(spec: RunSpec) -> bool:
    return spec.scale < 1.0


def trim_jobs(spec: RunSpec) -> int:
    """Jobs dropped at each end of the statistics: 500 (P-grid §4.1), 50 in quick mode."""
    if spec.trim is not None:
        return spec.trim
    if spec.workload == "lal":
        return round(TRIM_JOBS * min(spec.scale, 1.0))
    return round(TRIM_JOBS * QUICK_SCALE) if _scaled(spec) else TRIM_JOBS


def pretrain_decisions(spec: RunSpec) -> int:
    """EDF decisions before the agent acts: 500, scaled like the workload in quick mode.

    Scaling keeps the share of the run spent under EDF the same in quick mode; without it
    a tenth-size run would be mostly EDF and say little about the learner.
    """
    if spec.pretrain_decisions is not None:
        return spec.pretrain_decisions
    factor = min(spec.scale, 1.0) if spec.workload == "lal" else (QUICK_SCALE if _scaled(spec) else 1.0)
    return max(round(PRETRAIN_DECISIONS * factor), 1)


def lpc_window(spec: RunSpec) -> tuple[float, float]:
    if spec.window_days is not None:
        return spec.window_days
    return LPC_QUICK_WINDOW_DAYS if _scaled(spec) else LPC_WINDOW_DAYS


# ------------------------------------------------------------------------ workloads
_LPC_CACHE: dict[str, Workload] = {}


def load_lpc_egee() -> Workload:
    """LPC-EGEE with recorded waits only (the jobs without one cannot be in ``native``), with VO shares.

    The trace carries no VO target shares; the target of each VO (SWF group) is taken as
    its share of the whole trace's CPU time, the share the site actually gave it.
    """
    if "lpc" not in _LPC_CACHE:
        from rlsched.sim.traces.swf import read_swf, resolve_trace

        w = with_recorded_waits(read_swf(resolve_trace(LPC_TRACE)))
        work = np.bincount(w.vo, weights=core_seconds(w.run, w.procs), minlength=len(w.vo_names))
        shares = tuple(float(x) for x in work / work.sum())
        _LPC_CACHE["lpc"] = replace(w, vo_shares=shares)
    return _LPC_CACHE["lpc"]


def lpc_available() -> bool:
    """True when the LPC-EGEE trace can be found (``$RLSCHED_TRACE_DIR`` or the fetch cache)."""
    from rlsched.sim.traces.swf import resolve_trace

    try:
        resolve_trace(LPC_TRACE)
    except FileNotFoundError:
        return False
    return True


def load_workload(spec: RunSpec) -> tuple[Workload, int]:
    """The workload of ``spec`` and its rigid pool size."""
    if spec.workload == "lal":
        from rlsched.sim.workloads.lal import generate_lal

        return generate_lal(spec.seed, scale=spec.scale), LAL_CORES
    if spec.workload == "lpc-egee":
        first, last = lpc_window(spec)
        full = load_lpc_egee()
        w = full.cut(first * 86400.0, last * 86400.0, name=f"{full.name} days {first:g}-{last:g}")
        if 2 * trim_jobs(spec) >= len(w):
            raise ValueError(f"perez: LPC-EGEE window days {first:g}-{last:g} has {len(w)} jobs, "
                             f"too few for trimming {trim_jobs(spec)} at each end")
        return w, int(w.max_procs)
    raise ValueError(f"perez: unknown workload {spec.workload!r}")


def vo_shares(w: Workload) -> tuple[float, ...]:
    if w.vo_shares is not None:
        return tuple(w.vo_shares)
    return tuple([1.0 / len(w.vo_names)] * len(w.vo_names))


# ------------------------------------------------------------------------ one run
def policy_spec(spec: RunSpec) -> PolicySpec:
    """The registry policy (:mod:`rlsched.core.policies`) a run stands for, seeded by the run's seed.

    Learned policies: ``sarsa-esn`` is P-grid §3.3 (SARSA, ESN), ``fqi-esn`` P-fqi Alg. 1
    (fitted Q iteration with the ESN), ``fqi-ffnn`` the same iteration with the feed-forward
    net (P-fqi's "RL-NN" rows); every hyperparameter is the registry's default (the paper's or
    the core's documented one) but the run's runtime model, λ, seed and pretraining; the
    elastic variant adds the pool options of P-grid §4.1 (30 cores to twice the rigid pool,
    steps of 10, changes at least 15 minutes apart).
    """
    if spec.policy not in LEARNED_POLICIES:
        if spec.elastic:
            raise ValueError(f"perez: {spec.policy!r} has no elastic variant")
        return resolve(spec.policy)
    params: dict[str, Any] = {"runtime_model": spec.runtime_model or "estimated",
                              "lam": 0.5 if spec.lam is None else spec.lam,
                              "pretrain_decisions": pretrain_decisions(spec), "seed": spec.seed}
    if spec.elastic:
        params.update(elastic=True, pool_min_cores=DEFAULT_MIN_CORES, pool_max_cores=ELASTIC_MAX_CORES,
                      pool_step_cores=ELASTIC_STEP_CORES, pool_hold_s=DEFAULT_HOLD_S)
    return resolve(spec.policy, **params)


def run_one(spec: RunSpec) -> RunResult:
    """Simulate ``spec``; keep per-job class, wait and W of the jobs in the statistics, and the schedule."""
    started = time.perf_counter()
    w, cores = load_workload(spec)
    pool_t: FloatArray | None = None
    pool_c: IntArray | None = None
    util: float | None = None
    if spec.policy not in (*CLASSIC_POLICIES, *RESERVATION_POLICIES, "native", *LEARNED_POLICIES):
        raise ValueError(f"perez: unknown policy {spec.policy!r}")
    name = spec.policy + ("-elastic" if spec.elastic else "")
    ran = simulate_policy(w, policy_spec(spec), None if spec.policy == "native" else cores, name=name)
    schedule = ran.schedule
    if ran.pool_history is not None:
        hist = ran.pool_history
        pool_t, pool_c = hist.time_s, hist.cores
        util = pool_utilization(schedule, hist)
    wait, run = schedule.wait, schedule.run
    if util is None:
        length = float(schedule.end.max() - w.submit.min())
        util = utilization(float(np.sum(core_seconds(run, w.procs))), cores, length)
    keep = trim_mask(len(w), trim_jobs(spec))
    span = (float(w.submit.min()), float(schedule.end.max()))
    return RunResult(spec, w.job_class[keep], wait[keep], responsiveness(run_s=run[keep], wait_s=wait[keep]),
                     time.perf_counter() - started, util, span, pool_t, pool_c,
                     submit_s=w.submit.copy(), start_s=schedule.start.copy(), end_s=schedule.end.copy(),
                     procs=w.procs.copy(), vo=w.vo.copy(), shares=vo_shares(w), cores=cores)


# ------------------------------------------------------------------------ plans and aggregation
def plan(*, quick: bool, seeds: Iterable[int], elastic: bool = False, lpc: bool = False,
         learned: Sequence[str] = ("sarsa-esn",), rigid_learned: bool = True,
         classic: Sequence[str] = CLASSIC_POLICIES,
         scale: float | None = None, lpc_window_days: tuple[float, float] | None = None) -> list[RunSpec]:
    """Every simulation of an experiment.

    Classic policies run once per LAL-like seed and once on LPC-EGEE (a fixed trace, a
    deterministic policy); learned ones on every seed, runtime model and λ.  ``elastic``
    adds the elastic variant of each learned policy on the LAL-like workload;
    ``rigid_learned`` keeps the rigid one.  ``scale`` overrides the LAL-like scale (1, or
    :data:`QUICK_SCALE` in quick mode); smaller values give CI-sized runs.
    ``lpc_window_days`` overrides the LPC-EGEE window (:data:`LPC_WINDOW_DAYS`, or
    :data:`LPC_QUICK_WINDOW_DAYS` in quick mode).  ``classic``: the fixed policies (``native``
    is added on LPC-EGEE).
    """
    lal_scale = scale if scale is not None else (QUICK_SCALE if quick else 1.0)
    lpc_scale = QUICK_SCALE if quick else 1.0
    seed_list = list(seeds)
    specs: list[RunSpec] = []
    for workload in ("lal", "lpc-egee") if lpc else ("lal",):
        wl_scale = lal_scale if workload == "lal" else lpc_scale
        window = lpc_window_days if workload == "lpc-egee" else None
        fixed = (*classic, *(("native",) if workload == "lpc-egee" else ()))
        for seed in seed_list if workload == "lal" else seed_list[:1]:
            for policy in fixed:
                specs.append(RunSpec(workload, policy, None, None, seed, wl_scale, window_days=window))
        for seed in seed_list:
            for policy in learned:
                for rm in RUNTIME_MODELS:
                    for lam in LAMBDAS:
                        if rigid_learned:
                            specs.append(RunSpec(workload, policy, rm, lam, seed, wl_scale, window_days=window))
                        if elastic and workload == "lal":
                            specs.append(RunSpec(workload, policy, rm, lam, seed, wl_scale, elastic=True))
    return specs


def label(spec: RunSpec) -> tuple[str, str, str | None, float | None]:
    """(workload, policy, runtime model, λ): the key of a table row (elastic policies get ``-elastic``)."""
    policy = spec.policy + ("-elastic" if spec.elastic else "")
    return spec.workload, policy, spec.runtime_model, spec.lam


def _row_stats(w: FloatArray, wait: FloatArray) -> dict[str, Any]:
    """The statistics keys of a results.json row (:func:`rlsched.core.measures.group_stats`)."""
    s = group_stats(w, wait)
    return {"mean_W": s.mean_w, "sd_W": s.sd_w, "mean_wait_s": s.mean_wait_s, "sd_wait_s": s.sd_wait_s,
            "median_wait_s": s.median_wait_s, "frac_wait_under_120s": s.frac_wait_under_target,
            "frac_W_over_0_9": s.frac_w_over_0_9}


def aggregate(results: list[RunResult]) -> list[dict[str, Any]]:
    """One row per workload × policy × setting × job class (and ``all``), jobs pooled over the seeds.

    Rows come in a fixed order (workload, then classic before learned policies, then
    runtime model and λ), whatever order the runs finished in.
    """
    groups: dict[tuple[str, str, str | None, float | None], list[RunResult]] = {}
    for r in sorted(results, key=lambda r: _row_order(r.spec)):
        groups.setdefault(label(r.spec), []).append(r)
    rows: list[dict[str, Any]] = []
    for (workload, policy, rm, lam), runs in groups.items():
        runs.sort(key=lambda r: r.spec.seed)
        fairness = [report.mean_fairness(r) for r in runs]
        for cls_name, cls_value in (*CLASSES, ("all", None)):
            masks = [np.ones(r.w.size, bool) if cls_value is None else r.job_class == cls_value for r in runs]
            w = np.concatenate([r.w[m] for r, m in zip(runs, masks, strict=True)])
            wait = np.concatenate([r.wait_s[m] for r, m in zip(runs, masks, strict=True)])
            row: dict[str, Any] = {
                "workload": workload, "policy": policy, "runtime_model": rm, "lambda": lam, "class": cls_name,
                "jobs": int(w.size), "seeds": [r.spec.seed for r in runs], **_row_stats(w, wait),
                "mean_W_by_seed": [float(r.w[m].mean()) if m.any() else None
                                   for r, m in zip(runs, masks, strict=True)],
                "utilization": float(np.mean([r.utilization for r in runs])),
                "mean_fairness": float(np.mean(fairness)),
                "wall_s": float(sum(r.wall_s for r in runs)),
            }
            if runs[0].pool_time_s is not None:
                row["mean_pool_cores"] = float(np.mean([_mean_pool(r) for r in runs]))
            rows.append(row)
    return rows


def _row_order(spec: RunSpec) -> tuple[Any, ...]:
    order = (*CLASSIC_POLICIES, *RESERVATION_POLICIES, "native", *LEARNED_POLICIES)
    pol_rank = order.index(spec.policy) if spec.policy in order else 99
    return (WORKLOADS.index(spec.workload) if spec.workload in WORKLOADS else 9, spec.elastic, pol_rank,
            spec.runtime_model or "", spec.lam if spec.lam is not None else -1.0, spec.seed)


def _mean_pool(r: RunResult) -> float:
    """Time-averaged pool size from the first submit to the last end."""
    assert r.pool_time_s is not None and r.pool_cores is not None
    return PoolHistory(r.pool_time_s, r.pool_cores).mean_cores(*r.span_s)


def find_row(rows: list[dict[str, Any]], workload: str, policy: str, cls: str, rm: str | None = None,
             lam: float | None = None) -> dict[str, Any] | None:
    for r in rows:
        if (r["workload"], r["policy"], r["class"], r["runtime_model"], r["lambda"]) == (workload, policy, cls,
                                                                                           rm, lam):
            return r
    return None


def targets(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The issue-3 goals, checked on every learned setting that ran."""
    checks: list[dict[str, Any]] = []
    fcfs_batch = find_row(rows, "lal", "fcfs", "batch")
    learned = sorted({(r["workload"], r["policy"]) for r in rows if r["runtime_model"] is not None},
                     key=lambda k: (WORKLOADS.index(k[0]) if k[0] in WORKLOADS else 9, k[1]))
    for workload, policy in learned:
        for rm in RUNTIME_MODELS:
            for lam in LAMBDAS:
                inter = find_row(rows, workload, policy, "interactive", rm, lam)
                batch = find_row(rows, workload, policy, "batch", rm, lam)
                if inter is None or batch is None or inter["mean_W"] is None:
                    continue
                tag = f"{workload} {policy} {rm} λ={lam:g}"
                if workload == "lal":
                    goal = 0.97 if policy.endswith("elastic") else 0.95
                    checks.append({"check": f"{tag}: interactive mean W {inter['mean_W']:.3f} ≥ {goal}",
                                   "holds": inter["mean_W"] >= goal})
                    checks.append({"check": f"{tag}: interactive wait < 120 s for "
                                            f"{inter['frac_wait_under_120s']:.1%} > 90 %",
                                   "holds": inter["frac_wait_under_120s"] > 0.9})
                    if fcfs_batch is not None and batch["mean_W"] is not None and not policy.endswith("elastic"):
                        checks.append({"check": f"{tag}: batch mean W {batch['mean_W']:.3f} ≥ FCFS "
                                                f"{fcfs_batch['mean_W']:.3f}",
                                       "holds": batch["mean_W"] >= fcfs_batch["mean_W"]})
                else:
                    native = find_row(rows, workload, "native", "interactive")
                    if native is not None:
                        checks.append({"check": f"{tag}: interactive W {inter['mean_W']:.3f} > native "
                                                f"{native['mean_W']:.3f} and mean wait {inter['mean_wait_s']:.0f} "
                                                f"< {native['mean_wait_s']:.0f} s",
                                       "holds": inter["mean_W"] > native["mean_W"]
                                       and inter["mean_wait_s"] < native["mean_wait_s"]})
    return checks


# ------------------------------------------------------------------------ driver
def _cost_rank(spec: RunSpec) -> tuple[int, int]:
    """Most expensive first (FFNN fitted-Q, then the other learners; LPC-EGEE before LAL-like)."""
    cost = {"fqi-ffnn": 0, "fqi-esn": 1, "sarsa-esn": 2}.get(spec.policy, 3)
    return cost, spec.workload != "lpc-egee"


def execute(specs: list[RunSpec], workers: int) -> list[RunResult]:
    """Run ``specs`` (in ``workers`` spawned processes, one BLAS thread each); results in the order of ``specs``."""
    # Longest first so the two cores finish together.
    return run_in_pool(run_one, specs, workers, cost=_cost_rank)


def reported_seeds(seed: int, n_seeds: int | None, quick: bool) -> list[int]:
    """The reporting seeds; refuses any in the tuning range (≥ :data:`TUNING_SEED_BASE`)."""
    k = n_seeds if n_seeds is not None else (1 if quick else 3)
    if k < 1:
        raise ValueError(f"perez: n_seeds must be ≥ 1, got {k}")
    seeds = list(range(seed, seed + k))
    if any(s < 0 or s >= TUNING_SEED_BASE for s in seeds):
        raise ValueError(f"perez: reported seeds must lie in [0, {TUNING_SEED_BASE}); seeds ≥ "
                         f"{TUNING_SEED_BASE} are reserved for tuning (got {seeds})")
    return seeds


def resolve_lpc(lpc: bool | None, quick: bool) -> tuple[bool, str | None]:
    """Whether to run LPC-EGEE, and why not when skipped.

    ``None``: always in full mode (a missing trace is then an error naming where it was
    looked for); in quick mode only when the trace is found.
    """
    if lpc is False:
        return False, "LPC-EGEE not requested"
    if lpc is None and quick and not lpc_available():
        return False, "LPC-EGEE trace not found (set RLSCHED_TRACE_DIR); quick mode skipped it"
    if not lpc_available():
        from rlsched.sim.traces.swf import resolve_trace

        resolve_trace(LPC_TRACE)  # raises FileNotFoundError listing every place it looked
    return True, None


def run_experiment(name: str, out_dir: Path, specs: list[RunSpec], *, quick: bool, seeds: list[int],
                   workers: int | None, notes: Sequence[str] = ()) -> dict[str, Any]:
    """Run ``specs``, then write ``results.json``, ``report.md`` and the figures into ``out_dir``."""
    started = time.perf_counter()
    options = ExperimentOptions(out_dir, quick=quick, workers=workers)
    out = options.output()
    results = execute(specs, options.resolved_workers())
    rows = aggregate(results)
    figures = report.figures(out, results)
    result: dict[str, Any] = {
        "experiment": name, "quick": quick, "seeds": seeds, "tuning_seed_base": TUNING_SEED_BASE,
        "lal_cores": LAL_CORES, "trim_jobs": sorted({trim_jobs(s) for s in specs}),
        "pretrain_decisions": sorted({pretrain_decisions(s) for s in specs if s.policy in LEARNED_POLICIES}),
        "lpc_window_days": next((list(lpc_window(s)) for s in specs if s.workload == "lpc-egee"), None),
        "workloads": sorted({s.workload for s in specs}, key=WORKLOADS.index),
        "notes": list(notes), "published": report.published_rows_json(),
        "runs": [{**asdict(r.spec), "wall_s": r.wall_s} for r in results],
        "rows": rows, "targets": targets(rows), "figures": figures,
    }
    result["wall_time_s"] = time.perf_counter() - started
    write_results(out, result, report.report_markdown(result), indent=1)
    return result


def run_rigid(out_dir: Path, *, quick: bool = False, seed: int = 0, n_seeds: int | None = None,
              lpc: bool | None = None, workers: int | None = None, scale: float | None = None,
              lpc_window_days: tuple[float, float] | None = None) -> dict[str, Any]:
    """P-grid Tables 2–3: rigid pool; writes results.json, report.md and figures into ``out_dir``.

    Options as :func:`rlsched.sim.experiments.perez_fqi.run_fqi`.
    """
    seeds = reported_seeds(seed, n_seeds, quick)
    use_lpc, why = resolve_lpc(lpc, quick)
    specs = plan(quick=quick, seeds=seeds, lpc=use_lpc, learned=RIGID_LEARNED, scale=scale,
                 classic=(*CLASSIC_POLICIES, *RESERVATION_POLICIES), lpc_window_days=lpc_window_days)
    return run_experiment("perez-rigid", out_dir, specs, quick=quick, seeds=seeds, workers=workers,
                          notes=[why] if why else [])


def run_elastic(out_dir: Path, *, quick: bool = False, seed: int = 0, n_seeds: int | None = None,
                workers: int | None = None, scale: float | None = None) -> dict[str, Any]:
    """P-grid Tables 4–5: elastic pool on the LAL-like workload, beside the rigid agent of each setting."""
    seeds = reported_seeds(seed, n_seeds, quick)
    specs = plan(quick=quick, seeds=seeds, elastic=True, lpc=False, learned=RIGID_LEARNED, scale=scale,
                 classic=(*CLASSIC_POLICIES, *RESERVATION_POLICIES))
    return run_experiment("perez-elastic", out_dir, specs, quick=quick, seeds=seeds, workers=workers)


EXPERIMENTS = {
    "perez-rigid": Experiment(
        "perez-rigid", "Perez et al. P-grid Tables 2-3: SARSA-ESN (oracle/estimated, λ=0.5/1; also with the "
        "keep-idle action) vs FCFS, EASY, EASY-SJF, interactive-first keeping 2 cores (and the recorded "
        "native schedule on LPC-EGEE), rigid pool", run_rigid),
    "perez-elastic": Experiment(
        "perez-elastic", "Perez et al. P-grid Tables 4-5: SARSA-ESN choosing the pool size every period "
        "(≥ 15 min, ≥ 30 cores, ≥ running jobs) on the LAL-like workload", run_elastic),
}
