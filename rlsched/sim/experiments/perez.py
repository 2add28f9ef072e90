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

Every run has an information protocol (:data:`PROTOCOLS`, docs/perez.md "Same information"): the
``paper`` one gives every policy the class from the actual runtime, the ``product`` one the class a
live scheduler knows (the requested time under the daemon's class rule) and no actual runtimes; on
LPC-EGEE both run, beside the class-reading rules (``interactive-first``, ``interactive-first-sjf``) and
Slurm's ``multifactor`` with fair-share; the held-out LPC-EGEE window
(:data:`LPC_HOLDOUT_WINDOW_DAYS`) runs under the product protocol.

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
from rlsched.sim.policies import simulate_policy
from rlsched.sim.schedulers import with_recorded_waits
from rlsched.sim.summary import trim_mask
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
#: A second LPC-EGEE fortnight, days 203–217 (23 February – 9 March 2005), held out: no choice of the learners,
#: the rules or the reporting window was made on it.  The Parallel Workloads Archive is not reachable
#: from the machines these runs were made on and LPC-EGEE is the only grid log in the trace folder, so
#: the held-out grid workload is a disjoint window of the same site, not another site; why this window:
#: the busiest non-outage fortnight that ends at least a month before the reporting window (9,479 jobs,
#: offered load 0.37, recorded mean wait 1,849 s).
LPC_HOLDOUT_WINDOW_DAYS = (203.0, 217.0)
LPC_HOLDOUT_QUICK_WINDOW_DAYS = (203.0, 204.0)
WORKLOADS = ("lal", "lpc-egee", "lpc-egee-holdout")
#: Workload names in the reports.
WORKLOAD_NAMES = {"lal": "LAL-like", "lpc-egee": "LPC-EGEE", "lpc-egee-holdout": "LPC-EGEE held out"}
#: The two information protocols (docs/perez.md, "Same information").  ``paper``: every policy sees the
#: class from the actual runtime (< 900 s, P-grid §4.2), as the papers do; ``product``: every policy sees
#: the class a live scheduler can know at submit — the daemon's default class rule (time limit ≤ 900 s,
#: :class:`rlsched.core.classify.ClassRule`) applied to the trace's requested time — and no
#: learned policy may use the actual runtime (``oracle``).  W is always measured on the paper's classes,
#: the quantity the papers optimise; the protocol changes only what the schedulers see.
PROTOCOLS = ("paper", "product")
#: The LAL-like workload's two protocols coincide (every job requests its queue's limit, and the limit
#: defines the class): its runs are labelled ``both`` and run once.
PROTOCOL_BOTH = "both"
#: Rules that read the class (or the VO usage), beside the learned policies in every protocol.
SAME_INFO_RULES = ("interactive-first", "interactive-first-sjf", "multifactor")
#: The learned row of the product-protocol goal, fixed before any reporting run: the learner with the
#: keep-idle action, estimated runtimes, λ = 0.5 (P-grid's trade-off of W against VO fairness F).
PRIMARY_LEARNED = ("sarsa-esn-keepidle", "estimated", 0.5)
#: Differences in mean W or mean F below this are ties whatever the spread over seeds: the tables print
#: three decimals, and on these workloads F differs between any two policies in its fourth.
GOAL_RESOLUTION = 0.001
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
    protocol: str = "paper"  # "paper", "product" or "both" (see PROTOCOLS)


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
    #: Jobs whose class under the product protocol differs from the paper's (0 under the paper protocol).
    class_disagreements: int = 0


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
    if spec.workload == "lpc-egee-holdout":
        return LPC_HOLDOUT_QUICK_WINDOW_DAYS if _scaled(spec) else LPC_HOLDOUT_WINDOW_DAYS
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
    if spec.workload in ("lpc-egee", "lpc-egee-holdout"):
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


def seen_by_policies(w: Workload, protocol: str) -> Workload:
    """``w`` as the schedulers of ``protocol`` see it: the paper's classes, or the product class rule's.

    ``both`` asserts the two agree (the LAL-like workload) and returns ``w``.
    """
    if protocol == "paper":
        return w
    if protocol not in ("product", PROTOCOL_BOTH):
        raise ValueError(f"perez: unknown protocol {protocol!r}; known: {', '.join((*PROTOCOLS, PROTOCOL_BOTH))}")
    from rlsched.core.classify import ClassRule
    from rlsched.sim.workload import with_class_rule

    product = with_class_rule(w, ClassRule())
    if protocol == PROTOCOL_BOTH:
        differ = int(np.count_nonzero(product.job_class != w.job_class))
        if differ:
            raise ValueError(f"perez: protocol 'both' on {w.name!r}, but the product class rule differs from the "
                             f"runtime class on {differ} jobs; run the protocols apart")
        return w
    return product


def multifactor_shares(w: Workload) -> str:
    """The ``shares=`` parameter of ``multifactor`` giving each VO account its target share (per 10,000)."""
    shares = vo_shares(w)
    names = w.vo_names or tuple(f"vo{k}" for k in range(len(shares)))
    return "/".join(f"{name}:{max(round(share * 10000), 1)}" for name, share in zip(names, shares, strict=True))


#: What each policy reads to order and place jobs, beside the class (see :func:`information`).
_ESTIMATE_USED = {
    "fcfs": "none (submit order)", "easy": "requested time (backfill)", "easy-sjf": "requested time (order, backfill)",
    "interactive-first": "requested time (backfill)", "interactive-first-sjf": "requested time (order, backfill)",
    "interactive-first-keepidle": "none", "multifactor": "requested time (backfill); VO usage (fair-share)",
    "native": "– (recorded schedule)",
}
_READS_CLASS = {"interactive-first", "interactive-first-sjf", "interactive-first-keepidle", *LEARNED_POLICIES}


def information(policy: str, runtime_model: str | None, protocol: str) -> dict[str, str]:
    """The information a row's policy uses: where its class comes from, and its runtime estimate."""
    base = policy.removesuffix("-elastic")
    if base not in _READS_CLASS:
        cls = "not used"
    elif protocol == "product":
        cls = "requested time ≤ 900 s (live class rule)"
    elif protocol == PROTOCOL_BOTH:
        cls = "queue limit (= runtime class here)"
    else:
        cls = "actual runtime < 900 s (P-grid §4.2)"
    if runtime_model == "oracle":
        estimate = "actual runtime (oracle)"
    elif runtime_model == "estimated":
        estimate = "median runtime of the class's finished jobs"
    elif runtime_model == "requested":
        estimate = "requested time"
    else:
        estimate = _ESTIMATE_USED.get(base, "requested time")
    return {"class_from": cls, "runtime_from": estimate}


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
    if spec.policy not in (*CLASSIC_POLICIES, *RESERVATION_POLICIES, *SAME_INFO_RULES, "native",
                           *LEARNED_POLICIES):
        raise ValueError(f"perez: unknown policy {spec.policy!r}")
    if spec.protocol == "product" and spec.runtime_model == "oracle":
        raise ValueError("perez: the product protocol gives no policy the actual runtime (runtime model 'oracle')")
    seen = seen_by_policies(w, spec.protocol)
    name = spec.policy + ("-elastic" if spec.elastic else "")
    pspec = (resolve("multifactor", shares=multifactor_shares(w)) if spec.policy == "multifactor"
             else policy_spec(spec))
    ran = simulate_policy(seen, pspec, None if spec.policy == "native" else cores, name=name)
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
                     procs=w.procs.copy(), vo=w.vo.copy(), shares=vo_shares(w), cores=cores,
                     class_disagreements=int(np.count_nonzero(seen.job_class != w.job_class)))


# ------------------------------------------------------------------------ plans and aggregation
def plan(*, quick: bool, seeds: Iterable[int], elastic: bool = False, lpc: bool = False,
         learned: Sequence[str] = ("sarsa-esn",), rigid_learned: bool = True,
         classic: Sequence[str] = CLASSIC_POLICIES,
         scale: float | None = None, lpc_window_days: tuple[float, float] | None = None,
         protocols: Sequence[str] = ("paper",), holdout_protocols: Sequence[str] = ()) -> list[RunSpec]:
    """Every simulation of an experiment.

    Classic policies run once per LAL-like seed and once on LPC-EGEE (a fixed trace, a
    deterministic policy); learned ones on every seed, runtime model and λ.  ``elastic``
    adds the elastic variant of each learned policy on the LAL-like workload;
    ``rigid_learned`` keeps the rigid one.  ``scale`` overrides the LAL-like scale (1, or
    :data:`QUICK_SCALE` in quick mode); smaller values give CI-sized runs.
    ``lpc_window_days`` overrides the LPC-EGEE window (:data:`LPC_WINDOW_DAYS`, or
    :data:`LPC_QUICK_WINDOW_DAYS` in quick mode).  ``classic``: the fixed policies (``native``
    is added on LPC-EGEE).  ``protocols``: the information protocols of the LPC-EGEE runs
    (:data:`PROTOCOLS`; the LAL-like runs are ``both``); ``holdout_protocols``: those of the
    held-out LPC-EGEE window (:data:`LPC_HOLDOUT_WINDOW_DAYS`; empty: not run).  Under the
    product protocol the learned policies run with estimated runtimes only.
    """
    lal_scale = scale if scale is not None else (QUICK_SCALE if quick else 1.0)
    lpc_scale = QUICK_SCALE if quick else 1.0
    seed_list = list(seeds)
    for protocol in (*protocols, *holdout_protocols):
        if protocol not in PROTOCOLS:
            raise ValueError(f"perez: unknown protocol {protocol!r}; known: {', '.join(PROTOCOLS)}")
    runs: list[tuple[str, tuple[str, ...]]] = [("lal", (PROTOCOL_BOTH,))]
    if lpc:
        runs.append(("lpc-egee", tuple(protocols)))
        if holdout_protocols:
            runs.append(("lpc-egee-holdout", tuple(holdout_protocols)))
    specs: list[RunSpec] = []
    for workload, workload_protocols in runs:
        wl_scale = lal_scale if workload == "lal" else lpc_scale
        window = lpc_window_days if workload == "lpc-egee" else None
        fixed = (*classic, *(("native",) if workload != "lal" else ()))
        for protocol in workload_protocols:
            for seed in seed_list if workload == "lal" else seed_list[:1]:
                for policy in fixed:
                    specs.append(RunSpec(workload, policy, None, None, seed, wl_scale, window_days=window,
                                         protocol=protocol))
            models = ("estimated",) if protocol == "product" else RUNTIME_MODELS
            for seed in seed_list:
                for policy in learned:
                    for rm in models:
                        for lam in LAMBDAS:
                            if rigid_learned:
                                specs.append(RunSpec(workload, policy, rm, lam, seed, wl_scale, window_days=window,
                                                     protocol=protocol))
                            if elastic and workload == "lal":
                                specs.append(RunSpec(workload, policy, rm, lam, seed, wl_scale, elastic=True,
                                                     protocol=protocol))
    return specs


def label(spec: RunSpec) -> tuple[str, str, str | None, float | None, str]:
    """(workload, policy, runtime model, λ, protocol): the key of a table row (elastic policies get ``-elastic``)."""
    policy = spec.policy + ("-elastic" if spec.elastic else "")
    return spec.workload, policy, spec.runtime_model, spec.lam, spec.protocol


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
    groups: dict[tuple[str, str, str | None, float | None, str], list[RunResult]] = {}
    for r in sorted(results, key=lambda r: _row_order(r.spec)):
        groups.setdefault(label(r.spec), []).append(r)
    rows: list[dict[str, Any]] = []
    for (workload, policy, rm, lam, protocol), runs in groups.items():
        runs.sort(key=lambda r: r.spec.seed)
        fairness = [report.mean_fairness(r) for r in runs]
        for cls_name, cls_value in (*CLASSES, ("all", None)):
            masks = [np.ones(r.w.size, bool) if cls_value is None else r.job_class == cls_value for r in runs]
            w = np.concatenate([r.w[m] for r, m in zip(runs, masks, strict=True)])
            wait = np.concatenate([r.wait_s[m] for r, m in zip(runs, masks, strict=True)])
            by_seed = [float(r.w[m].mean()) if m.any() else None for r, m in zip(runs, masks, strict=True)]
            seen_w = [x for x in by_seed if x is not None]
            row: dict[str, Any] = {
                "workload": workload, "policy": policy, "runtime_model": rm, "lambda": lam, "class": cls_name,
                "protocol": protocol, **information(policy, rm, protocol),
                "jobs": int(w.size), "seeds": [r.spec.seed for r in runs], **_row_stats(w, wait),
                "mean_W_by_seed": by_seed,
                # Spread over seeds: the sd of the per-seed means (0 for one run).
                "sd_W_over_seeds": float(np.std(seen_w)) if seen_w else None,
                "utilization": float(np.mean([r.utilization for r in runs])),
                "mean_fairness": float(np.mean(fairness)),
                "mean_fairness_by_seed": [float(f) for f in fairness],
                "sd_fairness_over_seeds": float(np.std(fairness)),
                "class_disagreements": int(max(r.class_disagreements for r in runs)),
                "wall_s": float(sum(r.wall_s for r in runs)),
            }
            if runs[0].pool_time_s is not None:
                row["mean_pool_cores"] = float(np.mean([_mean_pool(r) for r in runs]))
            rows.append(row)
    return rows


def _row_order(spec: RunSpec) -> tuple[Any, ...]:
    order = (*CLASSIC_POLICIES, *SAME_INFO_RULES, *RESERVATION_POLICIES, "native", *LEARNED_POLICIES)
    pol_rank = order.index(spec.policy) if spec.policy in order else 99
    proto_rank = (PROTOCOL_BOTH, *PROTOCOLS).index(spec.protocol) if spec.protocol in (PROTOCOL_BOTH,
                                                                                          *PROTOCOLS) else 9
    return (WORKLOADS.index(spec.workload) if spec.workload in WORKLOADS else 9, proto_rank, spec.elastic, pol_rank,
            spec.runtime_model or "", spec.lam if spec.lam is not None else -1.0, spec.seed)


def _mean_pool(r: RunResult) -> float:
    """Time-averaged pool size from the first submit to the last end."""
    assert r.pool_time_s is not None and r.pool_cores is not None
    return PoolHistory(r.pool_time_s, r.pool_cores).mean_cores(*r.span_s)


def find_row(rows: list[dict[str, Any]], workload: str, policy: str, cls: str, rm: str | None = None,
             lam: float | None = None, protocol: str | None = None) -> dict[str, Any] | None:
    """The row of these keys; ``protocol=None`` takes the paper protocol's (``both`` on the LAL-like workload)."""
    wanted = ("paper", PROTOCOL_BOTH) if protocol is None else (protocol,)
    for r in rows:
        if (r["workload"], r["policy"], r["class"], r["runtime_model"], r["lambda"]) == (workload, policy, cls,
                                                                                           rm, lam) \
                and r.get("protocol", "paper") in wanted:
            return r
    return None


def _paired_sd(learned: dict[str, Any], rule: dict[str, Any], key: str) -> float:
    """The sd over seeds of learned − rule, seed by seed (a rule with one run is paired with every seed)."""
    mine = dict(zip(learned.get("seeds", []), learned.get(key) or [], strict=False))
    theirs = dict(zip(rule.get("seeds", []), rule.get(key) or [], strict=False))
    if len(theirs) == 1:
        only = next(iter(theirs.values()))
        theirs = {seed: only for seed in mine}
    diffs = [mine[s] - theirs[s] for s in mine if s in theirs and mine[s] is not None and theirs[s] is not None]
    return float(np.std(diffs)) if len(diffs) > 1 else 0.0


def same_info_goal(rows: list[dict[str, Any]], protocol: str = "product") -> list[dict[str, Any]]:
    """The product-protocol goal, one entry per workload: :data:`PRIMARY_LEARNED` against the best rule.

    The best rule is the rule (not ``native``, not learned) with the highest interactive mean W under
    ``protocol`` (ties: the higher mean F).  Spread: the sd over seeds of the paired per-seed differences
    (learned on seed s minus the rule on seed s; a rule that ran once, on a fixed trace, is paired with
    every seed), at least :data:`GOAL_RESOLUTION`; a difference inside it is a tie.  Pairing matters on the
    LAL-like workload, where the seed also draws the workload: its per-seed load moves every policy
    together.
    W holds when the learned W is not below the rule's by more than the spread; F holds when the learned
    F is above by more than it.
    """
    policy, rm, lam = PRIMARY_LEARNED
    out: list[dict[str, Any]] = []
    for workload in WORKLOADS:
        proto = PROTOCOL_BOTH if workload == "lal" else protocol
        learned = find_row(rows, workload, policy, "interactive", rm, lam, proto)
        rules = [r for r in rows if r["workload"] == workload and r["class"] == "interactive"
                 and r.get("protocol") == proto and r["runtime_model"] is None and r["policy"] != "native"
                 and r["mean_W"] is not None]
        if learned is None or not rules:
            continue
        best = max(rules, key=lambda r: (round(r["mean_W"], 6), r["mean_fairness"]))
        spread_w = max(_paired_sd(learned, best, "mean_W_by_seed"), GOAL_RESOLUTION)
        spread_f = max(_paired_sd(learned, best, "mean_fairness_by_seed"), GOAL_RESOLUTION)
        d_w = learned["mean_W"] - best["mean_W"]
        d_f = learned["mean_fairness"] - best["mean_fairness"]
        w_holds = d_w >= -spread_w
        f_holds = d_f > spread_f
        out.append({"workload": workload, "protocol": proto, "learned": f"{policy} {rm} λ={lam:g}",
                    "best_rule": best["policy"],
                    "learned_W": learned["mean_W"], "learned_sd_W": learned["sd_W_over_seeds"],
                    "rule_W": best["mean_W"], "rule_sd_W": best["sd_W_over_seeds"],
                    "learned_F": learned["mean_fairness"], "learned_sd_F": learned["sd_fairness_over_seeds"],
                    "rule_F": best["mean_fairness"], "rule_sd_F": best["sd_fairness_over_seeds"],
                    "diff_W": d_w, "spread_W": spread_w, "diff_F": d_f, "spread_F": spread_f,
                    "W_no_worse": bool(w_holds), "F_better": bool(f_holds), "met": bool(w_holds and f_holds)})
    return out


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
                    fcfs = find_row(rows, workload, "fcfs", "interactive")
                    context = f" (context only: simulated FCFS has {fcfs['mean_W']:.3f})" if fcfs else ""
                    if native is not None:
                        checks.append({"check": f"{tag}: interactive W {inter['mean_W']:.3f} > native "
                                                f"{native['mean_W']:.3f} and mean wait {inter['mean_wait_s']:.0f} "
                                                f"< {native['mean_wait_s']:.0f} s{context}",
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
        "lpc_holdout_window_days": next((list(lpc_window(s)) for s in specs if s.workload == "lpc-egee-holdout"),
                                        None),
        "protocols": sorted({s.protocol for s in specs}, key=(PROTOCOL_BOTH, *PROTOCOLS).index),
        "primary_learned": list(PRIMARY_LEARNED),
        "workloads": sorted({s.workload for s in specs}, key=WORKLOADS.index),
        "notes": list(notes), "published": report.published_rows_json(),
        "runs": [{**asdict(r.spec), "wall_s": r.wall_s} for r in results],
        "rows": rows, "targets": targets(rows), "same_info_goal": same_info_goal(rows), "figures": figures,
    }
    result["wall_time_s"] = time.perf_counter() - started
    write_results(out, result, report.report_markdown(result), indent=1)
    return result


def run_rigid(out_dir: Path, *, quick: bool = False, seed: int = 0, n_seeds: int | None = None,
              lpc: bool | None = None, workers: int | None = None, scale: float | None = None,
              lpc_window_days: tuple[float, float] | None = None, holdout: bool = True) -> dict[str, Any]:
    """P-grid Tables 2–3: rigid pool; writes results.json, report.md and figures into ``out_dir``.

    Options as :func:`rlsched.sim.experiments.perez_fqi.run_fqi`; LPC-EGEE runs under both information
    protocols, and ``holdout`` adds the held-out LPC-EGEE window under the product protocol.
    """
    seeds = reported_seeds(seed, n_seeds, quick)
    use_lpc, why = resolve_lpc(lpc, quick)
    specs = plan(quick=quick, seeds=seeds, lpc=use_lpc, learned=RIGID_LEARNED, scale=scale,
                 classic=(*CLASSIC_POLICIES, *SAME_INFO_RULES, *RESERVATION_POLICIES), lpc_window_days=lpc_window_days,
                 protocols=PROTOCOLS, holdout_protocols=("product",) if holdout else ())
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
        "keep-idle action) vs FCFS, EASY, EASY-SJF, interactive-first (-sjf, keeping 2 cores), multifactor "
        "fair-share (and the recorded native schedule on LPC-EGEE), rigid pool; paper and product information "
        "protocols, and a held-out LPC-EGEE window", run_rigid, report.report_markdown),
    "perez-elastic": Experiment(
        "perez-elastic", "Perez et al. P-grid Tables 4-5: SARSA-ESN choosing the pool size every period "
        "(≥ 15 min, ≥ 30 cores, ≥ running jobs) on the LAL-like workload", run_elastic, report.report_markdown),
}
