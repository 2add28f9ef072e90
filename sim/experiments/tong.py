"""Regenerate Tong et al. (2014) §6: Figs. 3–12 and Table 4 (DESIGN.md §2.4, issue 7).

``rlsched sim experiment tong --out DIR`` writes ``results.json`` (a list ``rows``: one row
per experiment × setting × policy, mean and standard deviation over flows), ``report.md``
(the published numbers beside ours) and PNG figures.

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

import json
import os
import time
import zlib
from collections import defaultdict
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rlsched.core.view import FloatArray
from rlsched.sim.experiments import Experiment, output_dir
from rlsched.sim.hetero.compare import POLICIES, run_policies
from rlsched.sim.hetero.model import Flow, Units
from rlsched.sim.hetero.policies import convergence_iteration
from rlsched.sim.hetero.queueing import optimise_allocation
from rlsched.sim.hetero.workloads import (
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
    if workers <= 1:
        return [row for job in jobs for row in func(job)]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        return [
            row for rows in pool.map(func, jobs, chunksize=max(1, len(jobs) // (8 * workers))) for row in rows
        ]


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
                    ("qlearning", "qlearning-neg"),
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
                    ("qlearning", "qlearning-neg"),
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


def _find(rows: list[dict[str, Any]], experiment: str, setting: str, policy: str) -> dict[str, Any] | None:
    for r in rows:
        if r["experiment"] == experiment and r["setting"] == setting and r["policy"] == policy:
            return r
    return None


def _value(
    rows: list[dict[str, Any]], experiment: str, setting: str, policy: str, key: str = "mean_response_h"
) -> float:
    r = _find(rows, experiment, setting, policy)
    return float("nan") if r is None or r.get(key) is None else float(r[key])


# ------------------------------------------------------------------------ figures
def _figures(out: Path, rows: list[dict[str, Any]], raw: list[dict[str, Any]], plan: Plan) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []

    def save(fig: Any, name: str) -> None:
        fig.tight_layout()
        fig.savefig(out / name, dpi=110)
        plt.close(fig)
        written.append(name)

    history = next(
        (
            r.get("q_history")
            for r in raw
            if r["experiment"] == "convergence" and r["policy"] == "qlearning" and r["flow"] == 0
        ),
        None,
    )
    if history:
        fig, ax = plt.subplots(figsize=(6, 3.5))
        q = np.array(history)
        for j in range(q.shape[1]):
            ax.plot(q[:, j], label=f"Q(t1, P{j + 1})")
        ax.set_xlabel("update")
        ax.set_ylabel("Q (reward 1/h)")
        ax.set_title("Fig. 3: convergence of Q(t1, ·), Poisson λ=80")
        ax.legend()
        save(fig, "fig3_convergence.png")

    def by_rate(
        experiment: str, setting_fmt: str, policy: str
    ) -> tuple[list[float], list[float], list[float]]:
        xs, ys, es = [], [], []
        for rate in plan.rates:
            r = _find(rows, experiment, setting_fmt.format(rate=rate), policy)
            if r is not None:
                xs.append(rate)
                ys.append(r["mean_response_h"])
                es.append(r["sd_response_h"])
        return xs, ys, es

    for fig_name, policy in (("fig4_arrival_nlp.png", "nlp"), ("fig5_arrival_qlearning.png", "qlearning")):
        fig, ax = plt.subplots(figsize=(6, 3.5))
        for law in ARRIVAL_LAWS:
            if law == "exponential":
                experiment, fmt = "comparison", "poisson-{rate:g}"
            elif law == "uniform":
                experiment, fmt = "comparison", "uniform-{rate:g}"
            else:
                experiment, fmt = "arrival", law + "-{rate:g}"
            xs, ys, _ = by_rate(experiment, fmt, policy)
            ax.plot(xs, ys, marker="o", label=law)
        ax.set_xlabel("arrival rate λ (tasks/h)")
        ax.set_ylabel("mean response (h)")
        ax.set_yscale("log")
        ax.set_title(f"{policy}: robustness to the arrival law")
        ax.legend()
        save(fig, fig_name)

    fig, ax = plt.subplots(figsize=(6, 3.5))
    labels = [label for label, _ in ESTIMATION_ERRORS]
    for policy in ("nlp", "ect", "min-min", "qlearning"):
        for rate in (60.0, 80.0):
            ys = []
            for label, shift in ESTIMATION_ERRORS:
                if shift == 0.0 or policy == "qlearning":
                    ys.append(_value(rows, "comparison", f"poisson-{rate:g}", policy))
                else:
                    ys.append(_value(rows, "estimation", f"error-{label}-{rate:g}", policy))
            ax.plot(labels, ys, marker="o", label=f"{policy} λ={rate:g}")
    ax.set_ylabel("mean response (h)")
    ax.set_yscale("log")
    ax.set_title("Figs. 6–7: service-rate estimation errors")
    ax.legend(fontsize=7, ncol=2)
    save(fig, "fig6_7_estimation.png")

    for fig_name, label in (("fig8_poisson.png", "poisson"), ("fig9_uniform.png", "uniform")):
        fig, ax = plt.subplots(figsize=(7, 4))
        for policy in POLICIES:
            xs, ys, es = by_rate("comparison", label + "-{rate:g}", policy)
            ax.errorbar(xs, ys, yerr=es, marker="o", capsize=3, label=policy)
        ax.set_xlabel("arrival rate λ (tasks/h)")
        ax.set_ylabel("mean response (h), ± sd over flows")
        ax.set_yscale("log")
        ax.set_title(f"{label} arrivals: all policies")
        ax.legend(fontsize=7, ncol=2)
        save(fig, fig_name)

    for setting in sorted({r["setting"] for r in raw if r["experiment"] == "lpc"}):
        fig, ax = plt.subplots(figsize=(7, 4))
        for policy in LPC_POLICIES:
            curves = [
                r["daily_h"]
                for r in raw
                if r["experiment"] == "lpc" and r["setting"] == setting and r["policy"] == policy
            ]
            if curves:
                length = min(len(c) for c in curves)
                ax.plot(np.mean([c[:length] for c in curves], axis=0), label=policy)
        ax.axhline(PUBLISHED["lpc_ideal_h"], color="k", ls=":", label="ideal 0.772 h")  # type: ignore[arg-type]
        ax.set_xlabel("day")
        ax.set_ylabel("daily mean response (h)")
        ax.set_yscale("log")
        ax.set_title(f"{setting}: daily mean response (Figs. 10–11)")
        ax.legend(fontsize=7, ncol=2)
        save(fig, f"fig10_11_{setting}.png")

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.5))
    for policy in ("qlearning", "qlearning-neg"):
        ys = [_value(rows, "gamma", f"gamma-{g:g}", policy) for g in plan.gammas]
        axes[0].plot(plan.gammas, ys, marker="o", label=policy)
        ys = [_value(rows, "epsilon", f"epsilon-{e:g}", policy) for e in plan.epsilons]
        axes[1].plot(plan.epsilons, ys, marker="o", label=policy)
    axes[0].set_xlabel("discount factor γ")
    axes[1].set_xlabel("exploration probability p_e")
    for ax in axes:
        ax.set_ylabel("mean response (h)")
        ax.set_yscale("log")
        ax.legend()
    axes[0].set_title("Fig. 12")
    axes[1].set_title("Table 4")
    save(fig, "fig12_table4_parameters.png")
    return written


# ------------------------------------------------------------------------- report
def _fmt(x: float | None, digits: int = 4) -> str:
    return "—" if x is None or not np.isfinite(x) else f"{x:.{digits}f}"


def _orderings(rows: list[dict[str, Any]], plan: Plan) -> list[tuple[str, bool]]:
    checks = []
    for rate in plan.rates:
        p = f"poisson-{rate:g}"
        u = f"uniform-{rate:g}"
        best_poisson = min(POLICIES, key=lambda pol: _value(rows, "comparison", p, pol))
        checks.append(
            (
                f"Poisson λ={rate:g}: the optimiser (nlp) is the best policy (ours: {best_poisson})",
                best_poisson == "nlp",
            )
        )
        for learner in LEARNER_VARIANTS:
            q, n = _value(rows, "comparison", p, learner), _value(rows, "comparison", p, "nlp")
            checks.append(
                (f"Poisson λ={rate:g}: {learner} within 20 % of nlp ({_fmt(q)} vs {_fmt(n)} h)", q <= 1.2 * n)
            )
            qu, nu = _value(rows, "comparison", u, learner), _value(rows, "comparison", u, "nlp")
            checks.append(
                (f"uniform λ={rate:g}: {learner} ahead of nlp ({_fmt(qu)} vs {_fmt(nu)} h)", qu < nu)
            )
            ect = _value(rows, "comparison", p, "ect")
            checks.append((f"Poisson λ={rate:g}: {learner} ahead of ECT ({_fmt(q)} vs {_fmt(ect)} h)", q < ect))
            batch = min(_value(rows, "comparison", p, pol) for pol in ("min-min", "max-min", "suffrage"))
            checks.append(
                (
                    f"Poisson λ={rate:g}: {learner} ahead of the batch heuristics ({_fmt(q)} vs best {_fmt(batch)} h)",
                    q < batch,
                )
            )
    heuristics = ("ect", "min-min", "max-min", "suffrage")
    for learner in LEARNER_VARIANTS:
        q140 = _value(rows, "lpc", "lpc-140", learner, "long_mean_response_h")
        ect140 = _value(rows, "lpc", "lpc-140", "ect", "long_mean_response_h")
        checks.append(
            (f"LPC 140 CPUs: {learner} ahead of ECT, whole run ({_fmt(q140, 3)} vs {_fmt(ect140, 3)} h)", q140 < ect140)
        )
        for setting, key, label in (
            ("lpc-15", "mean_response_h", "paper window"),
            ("lpc-15-taskshare", "long_mean_response_h", "whole run, task reading of the bursts"),
        ):
            q = _value(rows, "lpc", setting, learner, key)
            heur = min(_value(rows, "lpc", setting, pol, key) for pol in heuristics)
            checks.append((f"{setting}: {learner} near or below 2.2 h, {label} ({_fmt(q, 2)} h)", q <= 2.5))
            checks.append(
                (f"{setting}: {learner} ahead of the heuristics, {label} ({_fmt(q, 2)} vs {_fmt(heur, 2)} h)", q < heur)
            )
    return checks


def _table(
    rows: list[dict[str, Any]],
    experiment: str,
    settings: list[str],
    policies: Iterable[str],
    long: bool = False,
    digits: int = 4,
) -> list[str]:
    policies = list(policies)
    lines = ["| setting | " + " | ".join(policies) + " |", "|---" * (len(policies) + 1) + "|"]
    for s in settings:
        cells = []
        for pol in policies:
            r = _find(rows, experiment, s, pol)
            if r is None:
                cells.append("")
            elif long:
                cells.append(
                    f"{_fmt(r['long_mean_response_h'], digits)} ± {_fmt(r['long_sd_response_h'], digits)}"
                )
            else:
                cells.append(f"{_fmt(r['mean_response_h'], digits)} ± {_fmt(r['sd_response_h'], digits)}")
        lines.append(f"| {s} | " + " | ".join(cells) + " |")
    return lines


def _report(
    rows: list[dict[str, Any]],
    plan: Plan,
    info: dict[str, Any],
    figures: list[str],
    wall_s: float,
    quick: bool,
    seed: int,
) -> str:
    lpc = LpcSetting()
    lines = [
        "# Tong et al. (2014): proactive dispatch to heterogeneous units — regenerated",
        "",
        f"Mode: {'quick (smoke test, too small to conclude anything)' if quick else 'full'}; seed {seed}; "
        f"{plan.flows} flows of {TASKS_PER_FLOW} tasks per small-system setting; wall time {wall_s:.0f} s.",
        "",
        "All times are hours (the paper's unit); `results.json` carries seconds too. A cell is the mean over "
        "flows ± the standard deviation over flows of the per-flow mean response time. *Paper window*: tasks "
        f"{WARMUP_TASKS}–{WARMUP_TASKS + PAPER_WINDOW - 1} of each flow "
        '("100 tasks after learning converges"); '
        f"*long window*: tasks {WARMUP_TASKS}–{TASKS_PER_FLOW - 1}.",
        "",
        "`qlearning` is Algorithm 1 as published (reward 1/response, α = 1/(1+visits), ε = 0.2, "
        "γ = 0.9), learning from each task's response as soon as the task is placed (the simulator knows it "
        "then; our reading of Alg. 1's loop); `qlearning-delayed` learns only when the task completes (what a "
        "live system can do). `qlearning-neg[-delayed]` is the same learner with reward −response "
        "(see docs/tong.md for why); "
        "it was chosen on "
        "tuning seeds 10000–10019, never on the seeds reported here.",
        "",
        "## Orderings the paper reports, checked on our numbers",
        "",
    ]
    for text, ok in _orderings(rows, plan):
        lines.append(f"- [{'x' if ok else ' '}] {text}")
    lines += ["", "## Figs. 8–9: all policies (paper window)", ""]
    for label in ("poisson", "uniform"):
        lines += [f"### {label} arrivals", ""]
        lines += _table(rows, "comparison", [f"{label}-{r:g}" for r in plan.rates], POLICIES)
        lines += ["", "Long window:", ""]
        lines += _table(rows, "comparison", [f"{label}-{r:g}" for r in plan.rates], POLICIES, long=True)
        lines.append("")
    lines += [
        "## Figs. 4–5: robustness to the arrival law, λ = 80 (paper window)",
        "",
        "| law | published learner | " + " | ".join(LEARNER_VARIANTS) + " | nlp | ect |",
        "|---|---|" + "---|" * (len(LEARNER_VARIANTS) + 2),
    ]
    for law in ARRIVAL_LAWS:
        experiment, setting = (
            ("comparison", "poisson-80")
            if law == "exponential"
            else ("comparison", "uniform-80")
            if law == "uniform"
            else ("arrival", f"{law}-80")
        )
        vals = [
            _value(rows, experiment, setting, pol) for pol in (*LEARNER_VARIANTS, "nlp", "ect")
        ]
        lines.append(
            f"| {law} | {PUBLISHED['learner_lambda80_by_law_h'][law]} | "  # type: ignore[index]
            + " | ".join(_fmt(v) for v in vals)
            + " |"
        )
    lines += [
        "",
        "## Figs. 6–7: service-rate estimation errors, Poisson (paper window)",
        "",
        "The learner reads no estimate, so its numbers are those of the correct case by construction.",
        "",
        "| λ | error | nlp | ect | min-min | qlearning |",
        "|---|---|---|---|---|---|",
    ]
    for rate in (60.0, 80.0):
        for label, shift in ESTIMATION_ERRORS:
            if shift == 0.0:
                vals = [_value(rows, "comparison", f"poisson-{rate:g}", p) for p in ("nlp", "ect", "min-min")]
            else:
                vals = [
                    _value(rows, "estimation", f"error-{label}-{rate:g}", p)
                    for p in ("nlp", "ect", "min-min")
                ]
            vals.append(_value(rows, "comparison", f"poisson-{rate:g}", "qlearning"))
            lines.append(f"| {rate:g} | {label} | " + " | ".join(_fmt(v) for v in vals) + " |")

    lines += [
        "",
        "## Fig. 3: convergence",
        "",
        f"Published: about {PUBLISHED['convergence_updates']} updates. Ours (criterion of Table 4: every Q "
        "entry of type t1 moves < 5 % over the next 100 updates): ",
    ]
    for name in LEARNER_VARIANTS:
        r = _find(rows, "convergence", "poisson-80", name)
        if r is not None:
            lines.append(
                f"- {name}: median {_fmt(r.get('median_convergence_iteration'), 0)} updates, "
                f"{100 * r['converged_fraction']:.0f} % of flows converge within {TASKS_PER_FLOW} tasks."
            )
    lines += [
        "",
        "## Fig. 12 and Table 4: parameters (Poisson, λ = 80, paper window)",
        "",
        "| γ | qlearning | qlearning-neg |",
        "|---|---|---|",
    ]
    for g in plan.gammas:
        lines.append(
            f"| {g:g} | {_fmt(_value(rows, 'gamma', f'gamma-{g:g}', 'qlearning'))} | "
            f"{_fmt(_value(rows, 'gamma', f'gamma-{g:g}', 'qlearning-neg'))} |"
        )
    lines += [
        "",
        "| p_e | published ART | published CI | qlearning ART | qlearning CI (median, converged %) "
        "| qlearning-neg ART |",
        "|---|---|---|---|---|---|",
    ]
    for e in plan.epsilons:
        r = _find(rows, "epsilon", f"epsilon-{e:g}", "qlearning")
        ci = (
            "—"
            if r is None
            else (f"{_fmt(r.get('median_convergence_iteration'), 0)} ({100 * r['converged_fraction']:.0f} %)")
        )
        lines.append(
            f"| {e:g} | {PUBLISHED['table4_art_h'].get(e, '—')} | "  # type: ignore[attr-defined]
            f"{PUBLISHED['table4_ci'].get(e, '—')} | "  # type: ignore[attr-defined]
            f"{_fmt(_value(rows, 'epsilon', f'epsilon-{e:g}', 'qlearning'))} | {ci} | "
            f"{_fmt(_value(rows, 'epsilon', f'epsilon-{e:g}', 'qlearning-neg'))} |"
        )
    lpc_settings = sorted({r["setting"] for r in rows if r["experiment"] == "lpc"})
    lines += [
        "",
        "## Figs. 10–11: LPC",
        "",
        f"Synthetic LPC (§6.3.2): {plan.lpc_days:g} days, {plan.lpc_flows} flows, mean arrival rate "
        f"{lpc.mean_rate_per_h:g}/h; offered load {LpcSetting(cpus=140).offered_load:.2f} on 140 CPUs and "
        f"{LpcSetting(cpus=15).offered_load:.2f} on 15 CPUs. **On 15 CPUs the offered load exceeds 1**, so "
        "under any policy the queues grow for the whole run and the mean over 163 days is dominated by the "
        "backlog; the paper's 2.2 h can only be a short window early in the run. Both are shown. "
        "`lpc-15-taskshare` reads §6.3.2's \"one third tasks arrive ... at 66/h\" literally (a third of the "
        f"*tasks*, {TASK_SHARE_BURST_FRACTION * 6:.2f} h of bursts per 6-hour cycle): mean rate "
        f"{LpcSetting(burst_fraction=TASK_SHARE_BURST_FRACTION).mean_rate_per_h:.1f}/h, offered load "
        f"{LpcSetting(cpus=15, burst_fraction=TASK_SHARE_BURST_FRACTION).offered_load:.2f}, stable. Published: "
        f"ideal {PUBLISHED['lpc_ideal_h']:.3f} h; 15 CPUs learner ≈ 2.2 h, ≈ 1 h better than the others.",
        "",
        "Paper window:",
        "",
    ]
    lines += _table(rows, "lpc", lpc_settings, LPC_POLICIES, digits=3)
    lines += ["", "Whole run:", ""]
    lines += _table(rows, "lpc", lpc_settings, LPC_POLICIES, long=True, digits=3)
    lines += [
        "",
        f"LPC-EGEE replay: `{json.dumps(info.get('replay'))}`",
        "",
        "## Decision cost (measured, µs per task, mean over runs)",
        "",
        "| policy | poisson-80 | lpc-140 |",
        "|---|---|---|",
    ]
    for pol in POLICIES:
        lines.append(
            f"| {pol} | {_fmt(_value(rows, 'comparison', 'poisson-80', pol, 'decision_us'), 1)} | "
            f"{_fmt(_value(rows, 'lpc', 'lpc-140', pol, 'decision_us'), 1)} |"
        )
    lines += ["", "## Figures", ""] + [f"![{f}]({f})" for f in figures]
    lines += ["", "See docs/tong.md for the model, the departures from the paper and the discussion.", ""]
    return "\n".join(lines)


# ---------------------------------------------------------------------------- run
def run(
    out_dir: Path, *, quick: bool = False, seed: int = 0, trace_dir: Path | None = None
) -> dict[str, Any]:
    """Run every Tong §6 experiment; write results.json, report.md and the figures into ``out_dir``."""
    started = time.perf_counter()
    out = output_dir(out_dir)
    plan = Plan.make(quick)
    lpc_jobs, info = _lpc_jobs(plan, seed, trace_dir)
    raw = _map(_run_small, _small_jobs(plan, seed), plan.workers)
    raw += _map(_run_lpc, lpc_jobs, plan.workers)
    rows = _aggregate(raw)
    figures = _figures(out, rows, raw, plan)
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
        "orderings": [{"check": text, "holds": ok} for text, ok in _orderings(rows, plan)],
        "replay": info.get("replay"),
        "figures": figures,
        "rows": rows,
    }
    (out / "results.json").write_text(json.dumps(result, indent=1, allow_nan=False, default=_json_default))
    (out / "report.md").write_text(_report(rows, plan, info, figures, wall, quick, seed))
    return result


def _json_default(obj: object) -> object:
    if isinstance(obj, np.generic):
        return obj.item()
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


EXPERIMENTS = {
    "tong": Experiment(
        "tong",
        "Tong et al. 2014: Q-learning dispatch to heterogeneous units vs Min-Min, Max-Min, "
        "Suffrage, ECT, random and the M/M/1 optimiser (Figs. 3-12, Table 4)",
        run,
    ),
}
