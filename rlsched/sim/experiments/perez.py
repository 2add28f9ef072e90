"""The Perez et al. experiments: P-grid Tables 2–5 (rigid and elastic) on the LAL-like workload and LPC-EGEE.

This module holds the machinery the three Perez experiments share (:class:`PerezExperiment`, on
the experiment template: plan the runs, one simulation, aggregation into ``results.json`` rows)
and the two P-grid experiments; :mod:`rlsched.sim.experiments.perez_fqi` adds P-fqi's,
:mod:`rlsched.sim.experiments.perez_report` writes the figures and ``report.md`` and
:mod:`rlsched.sim.experiments.perez_common` holds the published numbers, the shared settings
(with the notes on why each is what it is) and the run specification.

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

The LPC-EGEE window: days 252–266 after the trace's start (13–27 April 2005); why this one is
said beside :data:`rlsched.sim.experiments.perez_common.LPC_WINDOW_DAYS`.

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

The constants named here live in :mod:`rlsched.sim.experiments.perez_common`, each with the note
that says where it comes from.
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
from rlsched.core.view import FloatArray, IntArray
from rlsched.sim.elastic import (
    DEFAULT_HOLD_S,
    DEFAULT_MIN_CORES,
    PoolHistory,
    pool_utilization,
)
from rlsched.sim.experiments import Experiment
from rlsched.sim.experiments import perez_report as report
from rlsched.sim.experiments.harness import ExperimentRun, PaperExperiment, default_workers
from rlsched.sim.experiments.perez_common import (
    CLASSES,
    CLASSIC_POLICIES,
    ELASTIC_MAX_CORES,
    ELASTIC_STEP_CORES,
    GOAL_RESOLUTION,
    LAL_CORES,
    LAMBDAS,
    LEARNED_POLICIES,
    LPC_HOLDOUT_QUICK_WINDOW_DAYS,
    LPC_HOLDOUT_WINDOW_DAYS,
    LPC_QUICK_WINDOW_DAYS,
    LPC_TRACE,
    LPC_WINDOW_DAYS,
    PRETRAIN_DECISIONS,
    PRIMARY_LEARNED,
    PROTOCOL_BOTH,
    PROTOCOLS,
    QUICK_SCALE,
    RESERVATION_POLICIES,
    RIGID_LEARNED,
    RUNTIME_MODELS,
    SAME_INFO_RULES,
    TRIM_JOBS,
    TUNING_SEED_BASE,
    WORKLOADS,
    RunResult,
    RunSpec,
    find_row,
    published_rows_json,
)
from rlsched.sim.policies import simulate_policy
from rlsched.sim.schedulers import with_recorded_waits
from rlsched.sim.summary import trim_mask
from rlsched.sim.workload import Workload


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
            raise ValueError(
                f"perez: LPC-EGEE window days {first:g}-{last:g} has {len(w)} jobs, "
                f"too few for trimming {trim_jobs(spec)} at each end"
            )
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
            raise ValueError(
                f"perez: protocol 'both' on {w.name!r}, but the product class rule differs from the "
                f"runtime class on {differ} jobs; run the protocols apart"
            )
        return w
    return product


def multifactor_shares(w: Workload) -> str:
    """The ``shares=`` parameter of ``multifactor`` giving each VO account its target share (per 10,000)."""
    shares = vo_shares(w)
    names = w.vo_names or tuple(f"vo{k}" for k in range(len(shares)))
    return "/".join(f"{name}:{max(round(share * 10000), 1)}" for name, share in zip(names, shares, strict=True))


#: What each policy reads to order and place jobs, beside the class (see :func:`information`).
_ESTIMATE_USED = {
    "fcfs": "none (submit order)",
    "easy": "requested time (backfill)",
    "easy-sjf": "requested time (order, backfill)",
    "interactive-first": "requested time (backfill)",
    "interactive-first-sjf": "requested time (order, backfill)",
    "interactive-first-keepidle": "none",
    "multifactor": "requested time (backfill); VO usage (fair-share)",
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
    params: dict[str, Any] = {
        "runtime_model": spec.runtime_model or "estimated",
        "lam": 0.5 if spec.lam is None else spec.lam,
        "pretrain_decisions": pretrain_decisions(spec),
        "seed": spec.seed,
    }
    if spec.elastic:
        params.update(
            elastic=True,
            pool_min_cores=DEFAULT_MIN_CORES,
            pool_max_cores=ELASTIC_MAX_CORES,
            pool_step_cores=ELASTIC_STEP_CORES,
            pool_hold_s=DEFAULT_HOLD_S,
        )
    return resolve(spec.policy, **params)


def run_one(spec: RunSpec) -> RunResult:
    """Simulate ``spec``; keep per-job class, wait and W of the jobs in the statistics, and the schedule."""
    started = time.perf_counter()
    w, cores = load_workload(spec)
    pool_t: FloatArray | None = None
    pool_c: IntArray | None = None
    util: float | None = None
    if spec.policy not in (*CLASSIC_POLICIES, *RESERVATION_POLICIES, *SAME_INFO_RULES, "native", *LEARNED_POLICIES):
        raise ValueError(f"perez: unknown policy {spec.policy!r}")
    if spec.protocol == "product" and spec.runtime_model == "oracle":
        raise ValueError("perez: the product protocol gives no policy the actual runtime (runtime model 'oracle')")
    seen = seen_by_policies(w, spec.protocol)
    name = spec.policy + ("-elastic" if spec.elastic else "")
    pspec = resolve("multifactor", shares=multifactor_shares(w)) if spec.policy == "multifactor" else policy_spec(spec)
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
    return RunResult(
        spec,
        w.job_class[keep],
        wait[keep],
        responsiveness(run_s=run[keep], wait_s=wait[keep]),
        time.perf_counter() - started,
        util,
        span,
        pool_t,
        pool_c,
        submit_s=w.submit.copy(),
        start_s=schedule.start.copy(),
        end_s=schedule.end.copy(),
        procs=w.procs.copy(),
        vo=w.vo.copy(),
        shares=vo_shares(w),
        cores=cores,
        class_disagreements=int(np.count_nonzero(seen.job_class != w.job_class)),
    )


# ------------------------------------------------------------------------ plans and aggregation
def plan(
    *,
    quick: bool,
    seeds: Iterable[int],
    elastic: bool = False,
    lpc: bool = False,
    learned: Sequence[str] = ("sarsa-esn",),
    rigid_learned: bool = True,
    classic: Sequence[str] = CLASSIC_POLICIES,
    scale: float | None = None,
    lpc_window_days: tuple[float, float] | None = None,
    protocols: Sequence[str] = ("paper",),
    holdout_protocols: Sequence[str] = (),
) -> list[RunSpec]:
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
            base = RunSpec(workload, "", None, None, 0, wl_scale, window_days=window, protocol=protocol)
            # A fixed policy on a fixed trace is deterministic: one run, on the first seed.
            for seed in seed_list if workload == "lal" else seed_list[:1]:
                specs += [replace(base, policy=policy, seed=seed) for policy in fixed]
            specs += _learned_specs(
                base, seed_list, learned, rigid=rigid_learned, elastic=elastic and workload == "lal"
            )
    return specs


def _learned_specs(
    base: RunSpec, seeds: list[int], learned: Sequence[str], *, rigid: bool, elastic: bool
) -> list[RunSpec]:
    """Every learned run of one workload and protocol: seed × policy × runtime model × λ, rigid and/or elastic.

    Under the product protocol only estimated runtimes (no policy reads the actual runtime)."""
    models = ("estimated",) if base.protocol == "product" else RUNTIME_MODELS
    specs: list[RunSpec] = []
    for seed in seeds:
        for policy in learned:
            for rm in models:
                for lam in LAMBDAS:
                    one = replace(base, policy=policy, runtime_model=rm, lam=lam, seed=seed)
                    if rigid:
                        specs.append(one)
                    if elastic:
                        specs.append(replace(one, elastic=True, window_days=None))
    return specs


def label(spec: RunSpec) -> tuple[str, str, str | None, float | None, str]:
    """(workload, policy, runtime model, λ, protocol): the key of a table row (elastic policies get ``-elastic``)."""
    policy = spec.policy + ("-elastic" if spec.elastic else "")
    return spec.workload, policy, spec.runtime_model, spec.lam, spec.protocol


def _row_stats(w: FloatArray, wait: FloatArray) -> dict[str, Any]:
    """The statistics keys of a results.json row (:func:`rlsched.core.measures.group_stats`)."""
    s = group_stats(w, wait)
    return {
        "mean_W": s.mean_w,
        "sd_W": s.sd_w,
        "mean_wait_s": s.mean_wait_s,
        "sd_wait_s": s.sd_wait_s,
        "median_wait_s": s.median_wait_s,
        "frac_wait_under_120s": s.frac_wait_under_target,
        "frac_W_over_0_9": s.frac_w_over_0_9,
    }


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
                "workload": workload,
                "policy": policy,
                "runtime_model": rm,
                "lambda": lam,
                "class": cls_name,
                "protocol": protocol,
                **information(policy, rm, protocol),
                "jobs": int(w.size),
                "seeds": [r.spec.seed for r in runs],
                **_row_stats(w, wait),
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
    proto_rank = (PROTOCOL_BOTH, *PROTOCOLS).index(spec.protocol) if spec.protocol in (PROTOCOL_BOTH, *PROTOCOLS) else 9
    return (
        WORKLOADS.index(spec.workload) if spec.workload in WORKLOADS else 9,
        proto_rank,
        spec.elastic,
        pol_rank,
        spec.runtime_model or "",
        spec.lam if spec.lam is not None else -1.0,
        spec.seed,
    )


def _mean_pool(r: RunResult) -> float:
    """Time-averaged pool size from the first submit to the last end."""
    assert r.pool_time_s is not None and r.pool_cores is not None
    return PoolHistory(r.pool_time_s, r.pool_cores).mean_cores(*r.span_s)


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
        rules = [
            r
            for r in rows
            if r["workload"] == workload
            and r["class"] == "interactive"
            and r.get("protocol") == proto
            and r["runtime_model"] is None
            and r["policy"] != "native"
            and r["mean_W"] is not None
        ]
        if learned is None or not rules:
            continue
        best = max(rules, key=lambda r: (round(r["mean_W"], 6), r["mean_fairness"]))
        spread_w = max(_paired_sd(learned, best, "mean_W_by_seed"), GOAL_RESOLUTION)
        spread_f = max(_paired_sd(learned, best, "mean_fairness_by_seed"), GOAL_RESOLUTION)
        d_w = learned["mean_W"] - best["mean_W"]
        d_f = learned["mean_fairness"] - best["mean_fairness"]
        w_holds = d_w >= -spread_w
        f_holds = d_f > spread_f
        out.append(
            {
                "workload": workload,
                "protocol": proto,
                "learned": f"{policy} {rm} λ={lam:g}",
                "best_rule": best["policy"],
                "learned_W": learned["mean_W"],
                "learned_sd_W": learned["sd_W_over_seeds"],
                "rule_W": best["mean_W"],
                "rule_sd_W": best["sd_W_over_seeds"],
                "learned_F": learned["mean_fairness"],
                "learned_sd_F": learned["sd_fairness_over_seeds"],
                "rule_F": best["mean_fairness"],
                "rule_sd_F": best["sd_fairness_over_seeds"],
                "diff_W": d_w,
                "spread_W": spread_w,
                "diff_F": d_f,
                "spread_F": spread_f,
                "W_no_worse": bool(w_holds),
                "F_better": bool(f_holds),
                "met": bool(w_holds and f_holds),
            }
        )
    return out


def targets(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The issue-3 goals, checked on every learned setting that ran."""
    checks: list[dict[str, Any]] = []
    fcfs_batch = find_row(rows, "lal", "fcfs", "batch")
    learned = sorted(
        {(r["workload"], r["policy"]) for r in rows if r["runtime_model"] is not None},
        key=lambda k: (WORKLOADS.index(k[0]) if k[0] in WORKLOADS else 9, k[1]),
    )
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
                    checks.append(
                        {
                            "check": f"{tag}: interactive mean W {inter['mean_W']:.3f} ≥ {goal}",
                            "holds": inter["mean_W"] >= goal,
                        }
                    )
                    checks.append(
                        {
                            "check": f"{tag}: interactive wait < 120 s for {inter['frac_wait_under_120s']:.1%} > 90 %",
                            "holds": inter["frac_wait_under_120s"] > 0.9,
                        }
                    )
                    if fcfs_batch is not None and batch["mean_W"] is not None and not policy.endswith("elastic"):
                        checks.append(
                            {
                                "check": f"{tag}: batch mean W {batch['mean_W']:.3f} ≥ FCFS {fcfs_batch['mean_W']:.3f}",
                                "holds": batch["mean_W"] >= fcfs_batch["mean_W"],
                            }
                        )
                else:
                    native = find_row(rows, workload, "native", "interactive")
                    fcfs = find_row(rows, workload, "fcfs", "interactive")
                    context = f" (context only: simulated FCFS has {fcfs['mean_W']:.3f})" if fcfs else ""
                    if native is not None:
                        checks.append(
                            {
                                "check": f"{tag}: interactive W {inter['mean_W']:.3f} > native "
                                f"{native['mean_W']:.3f} and mean wait {inter['mean_wait_s']:.0f} "
                                f"< {native['mean_wait_s']:.0f} s{context}",
                                "holds": inter["mean_W"] > native["mean_W"]
                                and inter["mean_wait_s"] < native["mean_wait_s"],
                            }
                        )
    return checks


# ------------------------------------------------------------------------ driver
def _cost_rank(spec: RunSpec) -> tuple[int, int]:
    """Most expensive first (FFNN fitted-Q, then the other learners; LPC-EGEE before LAL-like)."""
    cost = {"fqi-ffnn": 0, "fqi-esn": 1, "sarsa-esn": 2}.get(spec.policy, 3)
    return cost, spec.workload != "lpc-egee"


def reported_seeds(seed: int, n_seeds: int | None, quick: bool) -> list[int]:
    """The reporting seeds; refuses any in the tuning range (≥ :data:`TUNING_SEED_BASE`)."""
    k = n_seeds if n_seeds is not None else (1 if quick else 3)
    if k < 1:
        raise ValueError(f"perez: n_seeds must be ≥ 1, got {k}")
    seeds = list(range(seed, seed + k))
    if any(s < 0 or s >= TUNING_SEED_BASE for s in seeds):
        raise ValueError(
            f"perez: reported seeds must lie in [0, {TUNING_SEED_BASE}); seeds ≥ "
            f"{TUNING_SEED_BASE} are reserved for tuning (got {seeds})"
        )
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


@dataclass(frozen=True)
class PerezExperiment(PaperExperiment[RunSpec, RunResult]):
    """A Perez experiment on the template: the runs ``specs`` (see :func:`plan`), one simulation each."""

    name: str
    specs: tuple[RunSpec, ...]
    quick: bool
    seeds: tuple[int, ...]
    notes: tuple[str, ...] = ()

    def plan(self) -> list[RunSpec]:
        return list(self.specs)

    def run_one(self, task: RunSpec) -> RunResult:
        return run_one(task)

    def cost(self, task: RunSpec) -> tuple[int, int]:
        return _cost_rank(task)

    def aggregate(self, results: list[RunResult], run: ExperimentRun) -> dict[str, Any]:
        specs = self.specs
        rows = aggregate(results)
        figures = report.figures(run.out, results)
        result: dict[str, Any] = {
            "experiment": self.name,
            "quick": self.quick,
            "seeds": list(self.seeds),
            "tuning_seed_base": TUNING_SEED_BASE,
            "lal_cores": LAL_CORES,
            "trim_jobs": sorted({trim_jobs(s) for s in specs}),
            "pretrain_decisions": sorted({pretrain_decisions(s) for s in specs if s.policy in LEARNED_POLICIES}),
            "lpc_window_days": next((list(lpc_window(s)) for s in specs if s.workload == "lpc-egee"), None),
            "lpc_holdout_window_days": next(
                (list(lpc_window(s)) for s in specs if s.workload == "lpc-egee-holdout"), None
            ),
            "protocols": sorted({s.protocol for s in specs}, key=(PROTOCOL_BOTH, *PROTOCOLS).index),
            "primary_learned": list(PRIMARY_LEARNED),
            "workloads": sorted({s.workload for s in specs}, key=WORKLOADS.index),
            "notes": list(self.notes),
            "published": published_rows_json(),
            "runs": [{**asdict(r.spec), "wall_s": r.wall_s} for r in results],
            "rows": rows,
            "targets": targets(rows),
            "same_info_goal": same_info_goal(rows),
            "figures": figures,
        }
        result["wall_time_s"] = run.wall_s()
        return result

    def render(self, results: dict[str, Any]) -> str:
        return report.report_markdown(results)


def run_experiment(
    name: str,
    out_dir: Path,
    specs: list[RunSpec],
    *,
    quick: bool,
    seeds: list[int],
    workers: int | None,
    notes: Sequence[str] = (),
) -> dict[str, Any]:
    """Run ``specs`` (longest first, on ``workers`` processes), then write ``results.json``, ``report.md``
    and the figures into ``out_dir``."""
    experiment = PerezExperiment(name, tuple(specs), quick, tuple(seeds), tuple(notes))
    return experiment.run(out_dir, workers if workers is not None else default_workers())


def run_rigid(
    out_dir: Path,
    *,
    quick: bool = False,
    seed: int = 0,
    n_seeds: int | None = None,
    lpc: bool | None = None,
    workers: int | None = None,
    scale: float | None = None,
    lpc_window_days: tuple[float, float] | None = None,
    holdout: bool = True,
) -> dict[str, Any]:
    """P-grid Tables 2–3: rigid pool; writes results.json, report.md and figures into ``out_dir``.

    Options as :func:`rlsched.sim.experiments.perez_fqi.run_fqi`; LPC-EGEE runs under both information
    protocols, and ``holdout`` adds the held-out LPC-EGEE window under the product protocol.
    """
    seeds = reported_seeds(seed, n_seeds, quick)
    use_lpc, why = resolve_lpc(lpc, quick)
    specs = plan(
        quick=quick,
        seeds=seeds,
        lpc=use_lpc,
        learned=RIGID_LEARNED,
        scale=scale,
        classic=(*CLASSIC_POLICIES, *SAME_INFO_RULES, *RESERVATION_POLICIES),
        lpc_window_days=lpc_window_days,
        protocols=PROTOCOLS,
        holdout_protocols=("product",) if holdout else (),
    )
    return run_experiment(
        "perez-rigid", out_dir, specs, quick=quick, seeds=seeds, workers=workers, notes=[why] if why else []
    )


def run_elastic(
    out_dir: Path,
    *,
    quick: bool = False,
    seed: int = 0,
    n_seeds: int | None = None,
    workers: int | None = None,
    scale: float | None = None,
) -> dict[str, Any]:
    """P-grid Tables 4–5: elastic pool on the LAL-like workload, beside the rigid agent of each setting."""
    seeds = reported_seeds(seed, n_seeds, quick)
    specs = plan(
        quick=quick,
        seeds=seeds,
        elastic=True,
        lpc=False,
        learned=RIGID_LEARNED,
        scale=scale,
        classic=(*CLASSIC_POLICIES, *RESERVATION_POLICIES),
    )
    return run_experiment("perez-elastic", out_dir, specs, quick=quick, seeds=seeds, workers=workers)


EXPERIMENTS = {
    "perez-rigid": Experiment(
        "perez-rigid",
        "Perez et al. P-grid Tables 2-3: SARSA-ESN (oracle/estimated, λ=0.5/1; also with the "
        "keep-idle action) vs FCFS, EASY, EASY-SJF, interactive-first (-sjf, keeping 2 cores), multifactor "
        "fair-share (and the recorded native schedule on LPC-EGEE), rigid pool; paper and product information "
        "protocols, and a held-out LPC-EGEE window",
        run_rigid,
        report.report_markdown,
    ),
    "perez-elastic": Experiment(
        "perez-elastic",
        "Perez et al. P-grid Tables 4-5: SARSA-ESN choosing the pool size every period "
        "(≥ 15 min, ≥ 30 cores, ≥ running jobs) on the LAL-like workload",
        run_elastic,
        report.report_markdown,
    ),
}
