"""Regenerate Tong et al. (2014) §6: Figs. 3–12 and Table 4 (docs/tong.md).

``rlsched sim experiment tong --out DIR`` writes ``results.json`` (a list ``rows``: one row
per experiment × setting × policy, mean and standard deviation over flows), ``report.md``
(the published numbers beside ours) and PNG figures.  This module plans the flows, runs
them and aggregates the rows; :mod:`rlsched.sim.experiments.tong_report` checks the
published orderings and writes the figures and the markdown.

Measurement (Tong §6.3): "the average response time is measured over 100 tasks after
learning converges", and the spread is taken over 50 flows with the same statistics.  We
use flows of 1000 tasks (§6.1: "learns the flow of 1000 tasks") and report, per flow,
the mean response of tasks 500–599 (the *paper window*: convergence is reached after
about 500 updates, Fig. 3) and of tasks 500–999 (the *long window*, less noisy).  LPC
runs report the paper window and the mean over the whole 163 days.

Seeds: every flow and policy stream derives from ``seed`` (default 0) and the setting
name.  Nothing was tuned on these seeds: the published parameters are used as they are;
the variants (``qlearning-neg``, the feedback timing) were chosen on flows from seeds
10000–10019, which the report never uses.
"""

from __future__ import annotations

import os
import time
import zlib
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rlsched.core.view import FloatArray
from rlsched.sim.dispatch.compare import POLICIES, run_policies
from rlsched.sim.dispatch.model import Flow, Units
from rlsched.sim.dispatch.policies import convergence_iteration
from rlsched.sim.dispatch.queueing import optimise_allocation
from rlsched.sim.dispatch.workloads import (
    ARRIVAL_LAWS,
    ESTIMATION_ERRORS,
    TONG_SERVICE_RATES,
    TONG_TYPE_PROBS,
    ArrivalLaw,
    LpcSetting,
    burst_time_fraction,
    lpc_flow,
    lpc_replay_flow,
    shifted_rates,
    tong_flow,
)
from rlsched.sim.experiments import Experiment
from rlsched.sim.experiments.harness import ExperimentOptions, run_in_pool, write_results

TRACE_FILE = "LPC-EGEE-2004-1.2-cln.swf.gz"
#: The four learners (see ``rlsched.sim.hetero.compare.LEARNERS``): reward 1/response or
#: −response, learning when a task is placed (the reading of Alg. 1) or when it completes.
LEARNER_VARIANTS = ("qlearning", "qlearning-neg", "qlearning-delayed", "qlearning-neg-delayed")
TASKS_PER_FLOW = 1000
WARMUP_TASKS = 500
PAPER_WINDOW = 100
H = 3600.0

#: What Tong et al. publish (§6), for the report.
PUBLISHED = {
    "convergence_updates": 500,
    "learner_lambda80_by_law_h": {
        "exponential": 0.0481,
        "constant": 0.0518,
        "uniform": 0.0478,
        "chisquare": 0.0472,
    },
    "table4_art_h": {0.1: 0.0562, 0.15: 0.0483, 0.2: 0.0419, 0.25: 0.0451, 0.3: 0.0507, 0.4: 0.0726},
    "table4_ci": {0.1: 425, 0.15: 482, 0.2: 547, 0.25: 677, 0.3: 829, 0.4: None},
    "lpc15_learner_h": 2.2,
    "lpc15_margin_h": 1.0,
    "lpc_ideal_h": 0.52 * 0.1 + 0.48 * 1.5,
}


@dataclass(frozen=True)
class Plan:
    """How much to run: the full plan takes minutes on 2 cores, the quick one seconds."""

    flows: int
    rates: tuple[float, ...]
    lpc_days: float
    lpc_flows: int
    gammas: tuple[float, ...]
    epsilons: tuple[float, ...]
    replay_days: float | None
    workers: int

    @staticmethod
    def make(quick: bool) -> Plan:
        if quick:
            return Plan(
                flows=3,
                rates=(40.0, 80.0),
                lpc_days=4.0,
                lpc_flows=1,
                gammas=(0.0, 0.9),
                epsilons=(0.1, 0.2),
                replay_days=4.0,
                workers=1,
            )
        return Plan(
            flows=50,
            rates=(20.0, 40.0, 60.0, 80.0, 100.0),
            lpc_days=163.0,
            lpc_flows=3,
            gammas=(0.0, 0.3, 0.5, 0.7, 0.8, 0.9, 0.95, 0.99),
            epsilons=(0.1, 0.15, 0.2, 0.25, 0.3, 0.4),
            replay_days=163.0,
            workers=min(2, os.cpu_count() or 1),
        )


def _seed(seed: int, *keys: str | int) -> np.random.SeedSequence:
    """A stream named by ``keys`` (stable across runs and Python versions)."""
    return np.random.SeedSequence([seed, *(zlib.crc32(str(k).encode()) for k in keys)])


# --------------------------------------------------------------------------- jobs
@dataclass(frozen=True)
class SmallJob:
    """One flow of the small system (Table 3) run under several policies."""

    experiment: str
    setting: str
    flow_key: str
    law: ArrivalLaw
    rate: float
    flow_index: int
    seed: int
    policies: tuple[str, ...]
    mu_est: FloatArray | None = None
    nlp_probs: FloatArray | None = None
    epsilon: float | None = None
    gamma: float | None = None
    record: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


def _run_small(job: SmallJob) -> list[dict[str, Any]]:
    flow = tong_flow(
        TASKS_PER_FLOW,
        job.rate,
        np.random.default_rng(_seed(job.seed, job.flow_key, job.flow_index)),
        job.law,
    )
    units = Units(TONG_SERVICE_RATES, job.mu_est)
    results = run_policies(
        flow,
        units,
        job.policies,
        _seed(job.seed, "policies", job.flow_key, job.flow_index),
        nlp_probs=job.nlp_probs,
        epsilon=job.epsilon,
        gamma=job.gamma,
        record=job.record,
    )
    out = []
    for name, res in results.items():
        row: dict[str, Any] = {
            "experiment": job.experiment,
            "setting": job.setting,
            "policy": name,
            "flow": job.flow_index,
            "paper_h": res.mean_response_h(WARMUP_TASKS, WARMUP_TASKS + PAPER_WINDOW),
            "long_h": res.mean_response_h(WARMUP_TASKS),
            "decision_us": 1e6 * res.decision_wall_s / len(flow),
            **job.extra,
        }
        if res.q_history is not None:
            row["convergence_iteration"] = convergence_iteration(res.q_history)
            if job.flow_index == 0:
                row["q_history"] = res.q_history.tolist()
        out.append(row)
    return out


@dataclass(frozen=True)
class LpcJob:
    """One LPC run: a synthetic flow (Tong §6.3.2) or the LPC-EGEE replay."""

    setting: str
    cpus: int
    days: float
    flow_index: int
    seed: int
    policies: tuple[str, ...]
    replay: Flow | None = None
    replay_rates: FloatArray | None = None
    #: Fraction of each 6-hour cycle at the burst rate: 1/3 (the time reading, 28/h) unless
    #: the task reading of §6.3.2 is asked for (see ``burst_time_fraction``).
    burst_fraction: float = LpcSetting.burst_fraction


def _run_lpc(job: LpcJob) -> list[dict[str, Any]]:
    if job.replay is None:
        lpc = LpcSetting(cpus=job.cpus, days=job.days, burst_fraction=job.burst_fraction)
        reading = "" if job.burst_fraction == LpcSetting.burst_fraction else f"f={job.burst_fraction:.6f}"
        flow = lpc_flow(lpc, np.random.default_rng(_seed(job.seed, "lpc", str(job.days), job.flow_index, reading)))
        rates = lpc.service_rates
    else:
        assert job.replay_rates is not None
        flow = job.replay
        rates = np.repeat(job.replay_rates[:, None], job.cpus, axis=1)
    results = run_policies(
        flow, Units(rates), job.policies, _seed(job.seed, "policies", job.setting, job.flow_index)
    )
    out = []
    for name, res in results.items():
        day = np.floor(res.arrival_h / 24.0).astype(np.int64)
        daily = np.bincount(day, weights=res.response_h) / np.maximum(np.bincount(day), 1)
        out.append(
            {
                "experiment": "lpc",
                "setting": job.setting,
                "policy": name,
                "flow": job.flow_index,
                "paper_h": res.mean_response_h(WARMUP_TASKS, WARMUP_TASKS + PAPER_WINDOW),
                "long_h": res.mean_response_h(),
                "tasks": len(flow),
                "decision_us": 1e6 * res.decision_wall_s / len(flow),
                "daily_h": daily.tolist(),
            }
        )
    return out


def _map(func: Callable[[Any], list[dict[str, Any]]], jobs: list[Any], workers: int) -> list[dict[str, Any]]:
    """Every job's rows, in job order (the experiments' pool; chunks of about 1/8 of a worker's share)."""
    chunks = max(1, len(jobs) // (8 * max(workers, 1)))
    return [row for rows in run_in_pool(func, jobs, workers, chunksize=chunks) for row in rows]


# ---------------------------------------------------------------------- planning
def _small_jobs(plan: Plan, seed: int) -> list[SmallJob]:
    jobs: list[SmallJob] = []
    nlp_cache: dict[tuple[float, float], FloatArray] = {}

    def nlp(rate: float, shift: float = 0.0) -> FloatArray:
        if (rate, shift) not in nlp_cache:
            nlp_cache[rate, shift] = optimise_allocation(
                TONG_TYPE_PROBS, rate, shifted_rates(TONG_SERVICE_RATES, shift)
            ).probs
        return nlp_cache[rate, shift]

    for f in range(plan.flows):
        # Fig. 3: convergence of Q(t1, ·) on a Poisson flow at λ = 80.
        jobs.append(
            SmallJob(
                "convergence",
                "poisson-80",
                "poisson-80",
                "exponential",
                80.0,
                f,
                seed,
                LEARNER_VARIANTS,
                record=True,
            )
        )
        for rate in plan.rates:
            # Figs. 4–5: the learner and the optimiser under the four arrival laws.
            for law in ARRIVAL_LAWS:
                if law in ("exponential", "uniform"):
                    continue  # covered by the comparison below, on the same flows
                key = f"{law}-{rate:g}"
                jobs.append(
                    SmallJob(
                        "arrival",
                        key,
                        key,
                        law,
                        rate,
                        f,
                        seed,
                        (*LEARNER_VARIANTS, "nlp", "ect"),
                        nlp_probs=nlp(rate),
                        extra={"law": law, "rate_per_h": rate},
                    )
                )
            # Figs. 8–9 (and the exponential/uniform points of Figs. 4–5): every policy.
            for law, label in (("exponential", "poisson"), ("uniform", "uniform")):
                key = f"{label}-{rate:g}"
                jobs.append(
                    SmallJob(
                        "comparison",
                        key,
                        key,
                        law,
                        rate,
                        f,
                        seed,
                        POLICIES,
                        nlp_probs=nlp(rate),
                        extra={"law": law, "rate_per_h": rate},
                    )
                )
        # Figs. 6–7: service-rate estimation errors, Poisson arrivals at λ = 60 and 80; the
        # flows are those of the Poisson comparison, so the "correct" case is paired with it.
        for rate in (60.0, 80.0):
            for label, shift in ESTIMATION_ERRORS:
                if shift == 0.0:
                    continue
                jobs.append(
                    SmallJob(
                        "estimation",
                        f"error-{label}-{rate:g}",
                        f"poisson-{rate:g}",
                        "exponential",
                        rate,
                        f,
                        seed,
                        ("nlp", "ect", "min-min"),
                        mu_est=shifted_rates(TONG_SERVICE_RATES, shift),
                        nlp_probs=nlp(rate, shift),
                        extra={"error": label, "rate_per_h": rate},
                    )
                )
        # Fig. 12 and Table 4: the discount factor and the exploration probability.
        for gamma in plan.gammas:
            jobs.append(
                SmallJob(
                    "gamma",
                    f"gamma-{gamma:g}",
                    "poisson-80",
                    "exponential",
                    80.0,
                    f,
                    seed,
                    ("qlearning", "qlearning-neg", "qlearning-neg-delayed"),
                    gamma=gamma,
                    extra={"gamma": gamma},
                )
            )
        for eps in plan.epsilons:
            jobs.append(
                SmallJob(
                    "epsilon",
                    f"epsilon-{eps:g}",
                    "poisson-80",
                    "exponential",
                    80.0,
                    f,
                    seed,
                    ("qlearning", "qlearning-neg", "qlearning-neg-delayed"),
                    epsilon=eps,
                    record=True,
                    extra={"epsilon": eps},
                )
            )
    return jobs


LPC_POLICIES = ("qlearning", "qlearning-neg", "ect", "min-min", "max-min", "suffrage", "random",
                "qlearning-delayed", "qlearning-neg-delayed")
#: §6.3.2 read literally: "one third tasks arrive ... at the rate of 66/h" (12.6/h on average).
TASK_SHARE_BURST_FRACTION = burst_time_fraction(1.0 / 3.0, LpcSetting.burst_rate_per_h, LpcSetting.base_rate_per_h)


def _lpc_jobs(plan: Plan, seed: int, trace_dir: Path | None) -> tuple[list[LpcJob], dict[str, Any]]:
    jobs = [
        LpcJob(f"lpc-{cpus}", cpus, plan.lpc_days, f, seed, LPC_POLICIES)
        for cpus in (140, 15)
        for f in range(plan.lpc_flows)
    ]
    jobs += [
        LpcJob("lpc-15-taskshare", 15, plan.lpc_days, f, seed, LPC_POLICIES,
               burst_fraction=TASK_SHARE_BURST_FRACTION)
        for f in range(plan.lpc_flows)
    ]
    info: dict[str, Any] = {}
    directory = trace_dir or (
        Path(os.environ["RLSCHED_TRACE_DIR"]) if os.environ.get("RLSCHED_TRACE_DIR") else None
    )
    if directory is None:
        info["replay"] = "skipped: no trace directory (set RLSCHED_TRACE_DIR or pass trace_dir)"
        return jobs, info
    path = directory / TRACE_FILE
    if not path.exists():
        info["replay"] = f"skipped: {path} not found"
        return jobs, info
    try:
        from rlsched.sim.traces.swf import read_swf  # lazy: written by another module owner
    except ImportError as err:
        info["replay"] = f"skipped: SWF reader unavailable ({err})"
        return jobs, info
    replay = lpc_replay_flow(read_swf(path), plan.replay_days)
    info["replay"] = {
        "trace": TRACE_FILE,
        "tasks": len(replay.flow),
        "groups": list(replay.groups),
        "mean_run_h": replay.mean_run_h.tolist(),
        "dropped": replay.dropped,
        "days": plan.replay_days,
        "type_share": float(np.mean(replay.flow.task_type == 0)),
    }
    rates = 1.0 / replay.mean_run_h
    jobs += [
        LpcJob(f"lpc-egee-{cpus}", cpus, plan.lpc_days, f, seed, LPC_POLICIES, replay.flow, rates)
        for cpus in (140, 15)
        for f in range(plan.lpc_flows)
    ]
    return jobs, info


# ------------------------------------------------------------------- aggregation
def _aggregate(raw: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in raw:
        groups[r["experiment"], r["setting"], r["policy"]].append(r)
    rows = []
    for (experiment, setting, policy), rs in groups.items():
        paper = np.array([r["paper_h"] for r in rs])
        long = np.array([r["long_h"] for r in rs])
        row: dict[str, Any] = {
            "experiment": experiment,
            "setting": setting,
            "policy": policy,
            "flows": len(rs),
            "mean_response_s": float(paper.mean() * H),
            "sd_response_s": float(paper.std(ddof=0) * H),
            "mean_response_h": float(paper.mean()),
            "sd_response_h": float(paper.std(ddof=0)),
            "long_mean_response_h": float(long.mean()),
            "long_sd_response_h": float(long.std(ddof=0)),
            "median_response_h": float(np.median(paper)),
            "decision_us": float(np.mean([r["decision_us"] for r in rs])),
        }
        for key in ("law", "rate_per_h", "error", "gamma", "epsilon", "tasks"):
            if key in rs[0]:
                row[key] = rs[0][key]
        if "convergence_iteration" in rs[0]:
            its = [r["convergence_iteration"] for r in rs]
            done = [i for i in its if i is not None]
            row["converged_fraction"] = len(done) / len(its)
            row["median_convergence_iteration"] = float(np.median(done)) if done else None
        rows.append(row)
    return rows


# ---------------------------------------------------------------------------- run
def run(
    out_dir: Path, *, quick: bool = False, seed: int = 0, trace_dir: Path | None = None
) -> dict[str, Any]:
    """Run every Tong §6 experiment; write results.json, report.md and the figures into ``out_dir``."""
    from rlsched.sim.experiments import tong_report as report  # the report reads this module's constants

    started = time.perf_counter()
    out = ExperimentOptions(Path(out_dir), quick=quick, seed=seed).output()
    plan = Plan.make(quick)
    lpc_jobs, info = _lpc_jobs(plan, seed, trace_dir)
    raw = _map(_run_small, _small_jobs(plan, seed), plan.workers)
    raw += _map(_run_lpc, lpc_jobs, plan.workers)
    rows = _aggregate(raw)
    figures = report.figures(out, rows, raw, plan)
    wall = time.perf_counter() - started
    result: dict[str, Any] = {
        "experiment": "tong",
        "quick": quick,
        "seed": seed,
        "wall_time_s": wall,
        "tasks_per_flow": TASKS_PER_FLOW,
        "warmup_tasks": WARMUP_TASKS,
        "paper_window_tasks": PAPER_WINDOW,
        "flows": plan.flows,
        "published": {
            k: v if not isinstance(v, dict) else {str(a): b for a, b in v.items()}
            for k, v in PUBLISHED.items()
        },
        "orderings": [{"check": text, "holds": ok} for text, ok in report.orderings(rows, plan)],
        "replay": info.get("replay"),
        "figures": figures,
        "rows": rows,
    }
    write_results(out, result, report.report_markdown(rows, plan, info, figures, wall, quick, seed), indent=1,
                  allow_nan=False)
    return result


EXPERIMENTS = {
    "tong": Experiment(
        "tong",
        "Tong et al. 2014: Q-learning dispatch to heterogeneous units vs Min-Min, Max-Min, "
        "Suffrage, ECT, random and the M/M/1 optimiser (Figs. 3-12, Table 4)",
        run,
    ),
}
