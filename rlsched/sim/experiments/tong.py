"""Regenerate Tong et al. (2014) §6: Figs. 3–12 and Table 4 (docs/tong.md).

``rlsched sim experiment tong --out DIR`` writes ``results.json`` (a list ``rows``: one row
per experiment × setting × policy, mean and standard deviation over flows), ``report.md``
(the published numbers beside ours) and PNG figures.  :class:`TongExperiment` plans the
flows (one task per flow and setting, run under several policies), runs them and aggregates
the rows; :mod:`rlsched.sim.experiments.tong_report` checks the published orderings and
writes the figures and the markdown; :mod:`rlsched.sim.experiments.tong_common` holds the
published numbers and the measurement windows.  LPC runs report the paper window and the
mean over the whole 163 days.

Seeds: every flow and policy stream derives from ``seed`` (default 0) and the setting
name.  Nothing was tuned on these seeds: the published parameters are used as they are;
the variants (``qlearning-neg``, the feedback timing) were chosen on flows from seeds
10000–10019, which the report never uses.
"""

from __future__ import annotations

import os
import zlib
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rlsched.core.view import FloatArray
from rlsched.sim.dispatch.compare import POLICIES, run_policies
from rlsched.sim.dispatch.model import Units
from rlsched.sim.dispatch.policies import convergence_iteration
from rlsched.sim.dispatch.queueing import optimise_allocation
from rlsched.sim.dispatch.workloads import (
    ARRIVAL_LAWS,
    ESTIMATION_ERRORS,
    TONG_SERVICE_RATES,
    TONG_TYPE_PROBS,
    ArrivalLaw,
    LpcSetting,
    ReplayFlow,
    lpc_flow,
    lpc_replay_flow,
    shifted_rates,
    tong_flow,
)
from rlsched.sim.experiments import Experiment
from rlsched.sim.experiments import tong_report as report
from rlsched.sim.experiments.harness import ExperimentRun, PaperExperiment
from rlsched.sim.experiments.tong_common import (
    LEARNER_VARIANTS,
    LPC_POLICIES,
    PAPER_WINDOW,
    PUBLISHED,
    TASK_SHARE_BURST_FRACTION,
    TASKS_PER_FLOW,
    TRACE_FILE,
    WARMUP_TASKS,
    H,
    Sizes,
)

#: The learners of the γ and p_e sweeps (Fig. 12, Table 4).
SWEEP_POLICIES = ("qlearning", "qlearning-neg", "qlearning-neg-delayed")


def _seed(seed: int, *keys: str | int) -> np.random.SeedSequence:
    """A stream named by ``keys`` (stable across runs and Python versions)."""
    return np.random.SeedSequence([seed, *(zlib.crc32(str(k).encode()) for k in keys)])


# --------------------------------------------------------------------------- tasks
@dataclass(frozen=True)
class SmallTask:
    """One flow of the small system (Table 3) run under several policies."""

    experiment: str
    setting: str
    #: Names the flow's random stream: settings sharing it run on the same flows (paired comparisons).
    flow_key: str
    #: The inter-arrival law and the arrival rate (tasks/h) of §6.2.
    law: ArrivalLaw
    rate: float
    flow_index: int
    seed: int
    policies: tuple[str, ...]
    #: The service rates the policies believe (None: the true ones; Figs. 6–7 shift them).
    mu_est: FloatArray | None = None
    #: The M/M/1 optimiser's allocation (the ``nlp`` policy).
    nlp_probs: FloatArray | None = None
    #: The learners' exploration probability and discount factor (None: the published ones).
    epsilon: float | None = None
    gamma: float | None = None
    #: Keep the learners' Q history (Fig. 3, Table 4's convergence).
    record: bool = False
    #: Keys copied into every row (the setting's coordinates).
    extra: dict[str, Any] = field(default_factory=dict)


def _run_small(task: SmallTask) -> list[dict[str, Any]]:
    flow = tong_flow(
        TASKS_PER_FLOW, task.rate, np.random.default_rng(_seed(task.seed, task.flow_key, task.flow_index)), task.law
    )
    units = Units(TONG_SERVICE_RATES, task.mu_est)
    results = run_policies(
        flow,
        units,
        task.policies,
        _seed(task.seed, "policies", task.flow_key, task.flow_index),
        nlp_probs=task.nlp_probs,
        epsilon=task.epsilon,
        gamma=task.gamma,
        record=task.record,
    )
    out = []
    for name, res in results.items():
        row: dict[str, Any] = {
            "experiment": task.experiment,
            "setting": task.setting,
            "policy": name,
            "flow": task.flow_index,
            "paper_h": res.mean_response_h(WARMUP_TASKS, WARMUP_TASKS + PAPER_WINDOW),
            "long_h": res.mean_response_h(WARMUP_TASKS),
            "decision_us": 1e6 * res.decision_wall_s / len(flow),
            **task.extra,
        }
        if res.q_history is not None:
            row["convergence_iteration"] = convergence_iteration(res.q_history)
            if task.flow_index == 0:
                row["q_history"] = res.q_history.tolist()
        out.append(row)
    return out


@dataclass(frozen=True)
class LpcTask:
    """One LPC run under every policy of :data:`LPC_POLICIES`: a synthetic flow (Tong §6.3.2) or the
    LPC-EGEE replay."""

    setting: str
    #: The synthetic cluster (CPUs, days, the fraction of each 6-hour cycle at the burst rate: 1/3, the time
    #: reading, unless the task reading of §6.3.2 is asked for, see ``burst_time_fraction``); a replay
    #: takes its CPUs only.
    lpc: LpcSetting
    flow_index: int
    seed: int
    #: The LPC-EGEE replay (None: a flow drawn from ``lpc``).
    replay: ReplayFlow | None = None


def _run_lpc(task: LpcTask) -> list[dict[str, Any]]:
    lpc = task.lpc
    if task.replay is None:
        reading = "" if lpc.burst_fraction == LpcSetting.burst_fraction else f"f={lpc.burst_fraction:.6f}"
        flow = lpc_flow(lpc, np.random.default_rng(_seed(task.seed, "lpc", str(lpc.days), task.flow_index, reading)))
        rates = lpc.service_rates
    else:
        flow = task.replay.flow
        rates = np.repeat((1.0 / task.replay.mean_run_h)[:, None], lpc.cpus, axis=1)
    results = run_policies(
        flow, Units(rates), LPC_POLICIES, _seed(task.seed, "policies", task.setting, task.flow_index)
    )
    out = []
    for name, res in results.items():
        day = np.floor(res.arrival_h / 24.0).astype(np.int64)
        daily = np.bincount(day, weights=res.response_h) / np.maximum(np.bincount(day), 1)
        out.append(
            {
                "experiment": "lpc",
                "setting": task.setting,
                "policy": name,
                "flow": task.flow_index,
                "paper_h": res.mean_response_h(WARMUP_TASKS, WARMUP_TASKS + PAPER_WINDOW),
                "long_h": res.mean_response_h(),
                "tasks": len(flow),
                "decision_us": 1e6 * res.decision_wall_s / len(flow),
                "daily_h": daily.tolist(),
            }
        )
    return out


# ---------------------------------------------------------------------- planning
class _NlpAllocations:
    """The M/M/1 optimiser's allocation by arrival rate and service-rate error, computed once each."""

    def __init__(self) -> None:
        self._cache: dict[tuple[float, float], FloatArray] = {}

    def __call__(self, rate: float, shift: float = 0.0) -> FloatArray:
        if (rate, shift) not in self._cache:
            self._cache[rate, shift] = optimise_allocation(
                TONG_TYPE_PROBS, rate, shifted_rates(TONG_SERVICE_RATES, shift)
            ).probs
        return self._cache[rate, shift]


def _rate_tasks(sizes: Sizes, seed: int, f: int, nlp: _NlpAllocations) -> Iterator[SmallTask]:
    """Figs. 4–5 (the arrival laws) and 8–9 (every policy) for flow ``f`` at every rate."""
    for rate in sizes.rates:
        # Figs. 4–5: the learner and the optimiser under the four arrival laws.
        for law in ARRIVAL_LAWS:
            if law in ("exponential", "uniform"):
                continue  # covered by the comparison below, on the same flows
            key = f"{law}-{rate:g}"
            yield SmallTask(
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
        # Figs. 8–9 (and the exponential/uniform points of Figs. 4–5): every policy.
        for law, label in (("exponential", "poisson"), ("uniform", "uniform")):
            key = f"{label}-{rate:g}"
            yield SmallTask(
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


def _estimation_tasks(seed: int, f: int, nlp: _NlpAllocations) -> Iterator[SmallTask]:
    """Figs. 6–7: service-rate estimation errors, Poisson arrivals at λ = 60 and 80; the flows are
    those of the Poisson comparison, so the "correct" case is paired with it."""
    for rate in (60.0, 80.0):
        for label, shift in ESTIMATION_ERRORS:
            if shift == 0.0:
                continue
            yield SmallTask(
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


def _parameter_tasks(sizes: Sizes, seed: int, f: int) -> Iterator[SmallTask]:
    """Fig. 12 and Table 4: the discount factor and the exploration probability (Poisson, λ = 80)."""
    for gamma in sizes.gammas:
        yield SmallTask(
            "gamma",
            f"gamma-{gamma:g}",
            "poisson-80",
            "exponential",
            80.0,
            f,
            seed,
            SWEEP_POLICIES,
            gamma=gamma,
            extra={"gamma": gamma},
        )
    for eps in sizes.epsilons:
        yield SmallTask(
            "epsilon",
            f"epsilon-{eps:g}",
            "poisson-80",
            "exponential",
            80.0,
            f,
            seed,
            SWEEP_POLICIES,
            epsilon=eps,
            record=True,
            extra={"epsilon": eps},
        )


def small_tasks(sizes: Sizes, seed: int) -> list[SmallTask]:
    """Every small-system task, flow by flow (the rows aggregate in this order)."""
    nlp = _NlpAllocations()
    tasks: list[SmallTask] = []
    for f in range(sizes.flows):
        # Fig. 3: convergence of Q(t1, ·) on a Poisson flow at λ = 80.
        tasks.append(
            SmallTask(
                "convergence", "poisson-80", "poisson-80", "exponential", 80.0, f, seed, LEARNER_VARIANTS, record=True
            )
        )
        tasks += _rate_tasks(sizes, seed, f, nlp)
        tasks += _estimation_tasks(seed, f, nlp)
        tasks += _parameter_tasks(sizes, seed, f)
    return tasks


def _trace_directory(trace_dir: Path | None) -> Path | None:
    if trace_dir is not None:
        return trace_dir
    return Path(os.environ["RLSCHED_TRACE_DIR"]) if os.environ.get("RLSCHED_TRACE_DIR") else None


def lpc_tasks(sizes: Sizes, seed: int, trace_dir: Path | None) -> tuple[list[LpcTask], dict[str, Any]]:
    """The synthetic LPC tasks, and the LPC-EGEE replay's when the trace is found; with what the replay was."""
    tasks = [
        LpcTask(f"lpc-{cpus}", LpcSetting(cpus=cpus, days=sizes.lpc_days), f, seed)
        for cpus in (140, 15)
        for f in range(sizes.lpc_flows)
    ]
    taskshare = LpcSetting(cpus=15, days=sizes.lpc_days, burst_fraction=TASK_SHARE_BURST_FRACTION)
    tasks += [LpcTask("lpc-15-taskshare", taskshare, f, seed) for f in range(sizes.lpc_flows)]
    info: dict[str, Any] = {}
    directory = _trace_directory(trace_dir)
    if directory is None:
        info["replay"] = "skipped: no trace directory (set RLSCHED_TRACE_DIR or pass trace_dir)"
        return tasks, info
    path = directory / TRACE_FILE
    if not path.exists():
        info["replay"] = f"skipped: {path} not found"
        return tasks, info
    try:
        from rlsched.sim.traces.swf import read_swf  # lazy: written by another module owner
    except ImportError as err:
        info["replay"] = f"skipped: SWF reader unavailable ({err})"
        return tasks, info
    replay = lpc_replay_flow(read_swf(path), sizes.replay_days)
    info["replay"] = {
        "trace": TRACE_FILE,
        "tasks": len(replay.flow),
        "groups": list(replay.groups),
        "mean_run_h": replay.mean_run_h.tolist(),
        "dropped": replay.dropped,
        "days": sizes.replay_days,
        "type_share": float(np.mean(replay.flow.task_type == 0)),
    }
    tasks += [
        LpcTask(f"lpc-egee-{cpus}", LpcSetting(cpus=cpus, days=sizes.lpc_days), f, seed, replay)
        for cpus in (140, 15)
        for f in range(sizes.lpc_flows)
    ]
    return tasks, info


# ------------------------------------------------------------------- aggregation
def _aggregate(raw: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in raw:
        groups[r["experiment"], r["setting"], r["policy"]].append(r)
    return [_row(experiment, setting, policy, rs) for (experiment, setting, policy), rs in groups.items()]


def _row(experiment: str, setting: str, policy: str, rs: list[dict[str, Any]]) -> dict[str, Any]:
    """One results.json row: the flows of one setting and policy."""
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
    return row


# ---------------------------------------------------------------------------- run
@dataclass
class TongExperiment(PaperExperiment[SmallTask | LpcTask, list[dict[str, Any]]]):
    """Tong §6 on the experiment template; a task's rows are its flow's rows, one per policy."""

    quick: bool
    seed: int
    trace_dir: Path | None = None
    #: What the LPC-EGEE replay was (or why it was skipped); set by :meth:`plan`.
    replay_info: dict[str, Any] = field(default_factory=dict)
    json_allow_nan = False

    @property
    def sizes(self) -> Sizes:
        return Sizes.make(self.quick)

    def plan(self) -> list[SmallTask | LpcTask]:
        lpc, self.replay_info = lpc_tasks(self.sizes, self.seed, self.trace_dir)
        return [*small_tasks(self.sizes, self.seed), *lpc]

    def run_one(self, task: SmallTask | LpcTask) -> list[dict[str, Any]]:
        return _run_small(task) if isinstance(task, SmallTask) else _run_lpc(task)

    def chunksize(self, n_tasks: int, workers: int) -> int:
        return max(1, n_tasks // (8 * max(workers, 1)))  # about 1/8 of a worker's share

    def aggregate(self, rows: list[list[dict[str, Any]]], run: ExperimentRun) -> dict[str, Any]:
        raw = [row for task_rows in rows for row in task_rows]
        table = _aggregate(raw)
        figures = report.figures(run.out, table, raw, self.sizes)
        return {
            "experiment": "tong",
            "quick": self.quick,
            "seed": self.seed,
            "wall_time_s": run.wall_s(),
            "tasks_per_flow": TASKS_PER_FLOW,
            "warmup_tasks": WARMUP_TASKS,
            "paper_window_tasks": PAPER_WINDOW,
            "flows": self.sizes.flows,
            "published": {
                k: v if not isinstance(v, dict) else {str(a): b for a, b in v.items()} for k, v in PUBLISHED.items()
            },
            "orderings": [{"check": text, "holds": ok} for text, ok in report.orderings(table, self.sizes)],
            "replay": self.replay_info.get("replay"),
            "figures": figures,
            "rows": table,
        }

    def render(self, results: dict[str, Any]) -> str:
        return report.report_markdown(results)


def run(out_dir: Path, *, quick: bool = False, seed: int = 0, trace_dir: Path | None = None) -> dict[str, Any]:
    """Run every Tong §6 experiment; write results.json, report.md and the figures into ``out_dir``."""
    return TongExperiment(quick, seed, trace_dir).run(out_dir, Sizes.make(quick).workers)


EXPERIMENTS = {
    "tong": Experiment(
        "tong",
        "Tong et al. 2014: Q-learning dispatch to heterogeneous units vs Min-Min, Max-Min, "
        "Suffrage, ECT, random and the M/M/1 optimiser (Figs. 3-12, Table 4)",
        run,
        report.report_markdown,
    ),
}
