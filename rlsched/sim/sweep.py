"""Parameter sweeps of the leasing model on a process pool or a Dask cluster.

A sweep is a list of :class:`Task` (setup × policy × V × seed × λ × threshold); every
task is a pure function of its fields (seeded), so the results are identical whatever
runs them: ``serial`` (this process), ``process`` (a local pool, default), or ``dask``
(a ``dask.distributed`` cluster: a ``LocalCluster``, or a scheduler started by hand or
by dask-jobqueue on Slurm/PBS — see docs/leasing.md).  Results come back in task order.

Policies: ``constant`` (cap V all along), ``random`` (V uniform in 0..M each day,
``runs`` runs from ``seed``), ``qlearning`` (FH §5), ``daily`` (the daily learned cap,
:func:`rlsched.sim.hybrid_cloud.daily.daily_learned`), ``state-aware-daily`` (the state-aware rule evaluated
at the day's start and held for the day), ``state-aware`` (the state-aware rule at every scheduling pass,
threshold θ: a per-pass transfer rule, not a daily cap; the live controller's policy of that name).
The former names ``ours-daily`` and ``ours`` still work for one release: :func:`grid` takes them with a
warning, a :class:`Task` as they are.
λ (``cost_weight``) weighs the cost term of the balance: balance_λ = twt_imp% − λ·c%
(FH: λ = 1); it changes what the learners optimise and how every row is scored.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from rlsched.core.leasing import DailyLearnerParams, DailyPrior, StateAwareParams, cost_pct, twt_improvement_pct
from rlsched.core.policies import DEPRECATED_LEASE_POLICIES, SIM_LEASE_POLICIES, lease_policy
from rlsched.sim.experiments.harness import run_in_pool
from rlsched.sim.hybrid_cloud.daily import daily_learned, daily_prior, state_aware_daily
from rlsched.sim.hybrid_cloud.hybrid import UNBOUNDED, day_edges
from rlsched.sim.hybrid_cloud.runs import (
    RunSet,
    Trajectory,
    constant_sweep,
    fh_qlearning,
    random_runs,
    state_aware,
    unbounded_run,
)
from rlsched.sim.hybrid_cloud.setups import load_model

POLICIES = SIM_LEASE_POLICIES  # the registry's names (rlsched.core.policies)
#: The policies with a threshold θ (the state-aware rule, per pass or held for a day).
THRESHOLD_POLICIES = ("state-aware", "state-aware-daily")
EXECUTORS = ("serial", "process", "dask")


@dataclass(frozen=True)
class Task:
    """One simulation job of a sweep.  ``caps`` (constant) may hold several V: they share work."""

    setup: str
    policy: str
    caps: tuple[int, ...] = ()
    seed: int = 0
    runs: int = 1
    cost_weight: float = 1.0
    threshold: float = 1.0
    day_wait: str = "started"
    per_day: bool = False
    #: The policy's step (FH: one day); the references are always accounted per day.
    period_s: float = 86_400.0
    #: The daily learner's hyper-parameters (``daily`` only; see DailyLearnerParams).
    horizon_days: int = 7
    bins: int = 3
    prior_days: float = 3.0
    continuation: str = "held"
    #: Days' worth of a prior from other setups' daily clones (0: start cold), and those setups.
    transfer_days: float = 0.0
    transfer_from: tuple[str, ...] = ()
    #: > 0: a jittered replay of the setup (see rlsched.sim.hybrid_cloud.setups.JITTER_S); the prior's
    #: setups are never jittered.
    jitter_seed: int = 0
    #: ``daily`` only: the learner's estimates are those of its own trace's clones from the start (an upper
    #: reference that knows the whole trace, like the best constant V in hindsight; not a policy).
    hindsight: bool = False

    def __post_init__(self) -> None:
        if self.policy not in POLICIES and self.policy not in DEPRECATED_LEASE_POLICIES:
            raise ValueError(f"unknown policy {self.policy!r}; choose from {', '.join(POLICIES)}")
        if self.policy == "constant" and not self.caps:
            raise ValueError("a constant-V task needs at least one V")
        if self.runs < 1:
            raise ValueError("runs must be >= 1")
        if self.period_s <= 0:
            raise ValueError("period_s must be positive")
        if self.policy == "daily":
            self.daily_params()  # refuses bad hyper-parameters up front
            if self.transfer_days > 0 and not self.transfer_from:
                raise ValueError("a daily task with transfer_days > 0 needs the setups to transfer from")
            if self.setup in self.transfer_from:
                raise ValueError(f"setup {self.setup!r} cannot be its own prior (that is hindsight=True)")
            if self.hindsight and (self.transfer_from or self.jitter_seed):
                raise ValueError("a hindsight task takes no other prior and no jittered replay")

    def daily_params(self) -> DailyLearnerParams:
        return DailyLearnerParams(
            horizon_days=self.horizon_days,
            bins=self.bins,
            prior_days=self.prior_days,
            continuation=self.continuation,
            transfer_days=self.transfer_days,
        )


#: The prior weight of a hindsight run: the trace's own clones outweigh anything it learns on the way.
HINDSIGHT_DAYS = 1e9


@functools.lru_cache(maxsize=8)
def transfer_prior(sources: tuple[str, ...], params: DailyLearnerParams, cost_weight: float) -> DailyPrior:
    """The daily prior of ``sources`` (each run cold with ``params``), once per process: callers pass the
    cold ``params`` (``transfer_days=0``), so settings that differ only in the prior's weight share it."""
    return daily_prior({name: load_model(name) for name in sources}, params, cost_weight=cost_weight)


@functools.lru_cache(maxsize=8)
def references(setup: str, jitter_seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Per-day twt of V = 0 and per-day cost of V → ∞ (FH §2.4 twt_ref, c_ref), once per process."""
    model, edges = load_model(setup, jitter_seed)
    zero = constant_sweep(model, edges, np.array([0]))
    unbounded = unbounded_run(model, edges)
    return zero.twt[0].copy(), unbounded.cost[0].copy()


def _current_name(policy: str) -> str:
    """A task's policy under its name now.  A task keeps a former name as given, without a warning
    (:mod:`rlsched.sim.experiments.fh` plans with them until it moves to the new names)."""
    return DEPRECATED_LEASE_POLICIES.get(policy, policy)


def run_task(task: Task) -> dict[str, Any]:
    """Run one task; returns totals per run (twt, cost, balance against the setup's references)."""
    model, edges = load_model(task.setup, task.jitter_seed)
    if task.period_s != 86_400.0:
        edges = day_edges(model, task.period_s)
    twt_ref_day, c_ref_day = references(task.setup, task.jitter_seed)
    twt_ref, c_ref = float(twt_ref_day.sum()), float(c_ref_day.sum())
    result: RunSet | Trajectory
    policy = _current_name(task.policy)
    if policy == "constant":
        caps = np.array([UNBOUNDED if v < 0 else v for v in task.caps], dtype=np.int64)
        result = constant_sweep(model, edges, caps)
        twt, cost = result.total_twt, result.total_cost
        labels: list[int | None] = list(task.caps)
    elif policy == "random":
        result = random_runs(model, edges, task.runs, task.seed)
        twt, cost = result.total_twt, result.total_cost
        labels = [None] * task.runs
    elif policy == "qlearning":
        result = fh_qlearning(model, edges, cost_weight=task.cost_weight, day_wait=task.day_wait)
        twt, cost = np.array([result.twt.sum()]), np.array([result.cost.sum()])
        labels = [None]
    elif policy == "daily":
        params = task.daily_params()
        cold = dataclasses.replace(params, transfer_days=0.0)  # the prior's key: shared across its weights
        prior: DailyPrior | None = None
        if task.hindsight:
            params = dataclasses.replace(params, transfer_days=HINDSIGHT_DAYS)
            prior = transfer_prior((task.setup,), cold, task.cost_weight)
        elif params.transfer_days > 0:
            prior = transfer_prior(task.transfer_from, cold, task.cost_weight)
        result = daily_learned(model, edges, params, cost_weight=task.cost_weight, prior=prior)
        twt, cost = np.array([result.twt.sum()]), np.array([result.cost.sum()])
        labels = [None]
    elif policy == "state-aware-daily":
        result = state_aware_daily(
            model, edges, StateAwareParams(threshold=task.threshold), cost_weight=task.cost_weight
        )
        twt, cost = np.array([result.twt.sum()]), np.array([result.cost.sum()])
        labels = [None]
    else:
        result = state_aware(model, edges, StateAwareParams(threshold=task.threshold), cost_weight=task.cost_weight)
        twt, cost = np.array([result.twt.sum()]), np.array([result.cost.sum()])
        labels = [None]
    imp = twt_improvement_pct(twt, twt_ref)
    pct = cost_pct(cost, c_ref)
    out: dict[str, Any] = {
        "task": asdict(task),
        "V": labels,
        "twt": twt.tolist(),
        "cost": cost.tolist(),
        "twt_imp_pct": imp.tolist(),
        "cost_pct": pct.tolist(),
        "balance": (imp - task.cost_weight * pct).tolist(),
        "twt_ref": twt_ref,
        "c_ref": c_ref,
        "simulations": int(result.simulations),
        "wall_s": float(result.wall_s),
    }
    if task.per_day:
        out["day_twt"] = np.atleast_2d(result.twt).tolist()
        out["day_cost"] = np.atleast_2d(result.cost).tolist()
        out["day_caps"] = np.atleast_2d(result.caps).tolist()
        out["ref_day_twt"] = twt_ref_day.tolist()  # per day, whatever the policy's period
        out["ref_day_cost"] = c_ref_day.tolist()
    return out


def grid(
    setups: Sequence[str],
    policies: Sequence[str],
    *,
    caps: Sequence[int] = (),
    seeds: Sequence[int] = (0,),
    cost_weights: Sequence[float] = (1.0,),
    thresholds: Sequence[float] = (1.0,),
    runs: int = 1,
    caps_per_task: int = 0,
    period_s: float = 86_400.0,
) -> list[Task]:
    """The Cartesian grid; a policy only varies over the fields it uses.

    ``caps_per_task`` > 0 packs that many constant V per task (they share simulation work);
    0 puts them all in one task per setup.
    """
    tasks: list[Task] = []
    for setup, given, lam in itertools.product(setups, policies, cost_weights):
        policy = lease_policy(given, stacklevel=2)  # warns at the caller of grid()
        if policy == "constant":
            values = list(caps)
            step = caps_per_task or max(len(values), 1)
            for i in range(0, len(values), step):
                tasks.append(Task(setup, policy, caps=tuple(values[i : i + step]), cost_weight=lam, period_s=period_s))
        elif policy == "random":
            tasks.extend(Task(setup, policy, seed=s, runs=runs, cost_weight=lam, period_s=period_s) for s in seeds)
        elif policy == "qlearning":
            tasks.append(Task(setup, policy, cost_weight=lam, period_s=period_s))
        elif policy in THRESHOLD_POLICIES:
            tasks.extend(Task(setup, policy, threshold=th, cost_weight=lam, period_s=period_s) for th in thresholds)
        elif policy == "daily":
            tasks.append(Task(setup, policy, cost_weight=lam, period_s=period_s))
        else:
            raise ValueError(f"unknown policy {policy!r}; choose from {', '.join(POLICIES)}")
    return tasks


def _default_workers() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))


def execute(
    tasks: Sequence[Task],
    *,
    executor: str = "process",
    workers: int | None = None,
    scheduler_address: str | None = None,
    progress: Callable[[int], None] | None = None,
    fn: Callable[[Task], dict[str, Any]] = run_task,
) -> list[dict[str, Any]]:
    """Run ``tasks`` and return their results in task order; ``progress(done)`` after each one."""
    if executor not in EXECUTORS:
        raise ValueError(f"unknown executor {executor!r}; choose from {', '.join(EXECUTORS)}")
    results: list[dict[str, Any] | None] = [None] * len(tasks)
    done = 0

    def finished(index: int, value: dict[str, Any]) -> None:
        nonlocal done
        results[index] = value
        done += 1
        if progress is not None:
            progress(done)

    if executor == "serial":
        for i, task in enumerate(tasks):
            finished(i, fn(task))
    elif executor == "process":
        # The experiments' pool (spawned workers, one BLAS thread each, results in task order).
        def reached(count: int) -> None:
            nonlocal done
            done = count
            if progress is not None:
                progress(count)

        for i, value in enumerate(run_in_pool(fn, list(tasks), workers or _default_workers(), progress=reached)):
            results[i] = value
    else:
        _execute_dask(tasks, fn, scheduler_address, finished)
    return [r for r in results if r is not None]


def _execute_dask(
    tasks: Sequence[Task],
    fn: Callable[[Task], dict[str, Any]],
    scheduler_address: str | None,
    finished: Callable[[int, dict[str, Any]], None],
) -> None:
    try:
        from distributed import Client
        from distributed import as_completed as dask_completed
    except ImportError as exc:  # pragma: no cover - dask is an optional dependency
        raise RuntimeError("the dask executor needs dask[distributed] (pip install 'rlsched[dask]')") from exc
    if not scheduler_address:
        raise ValueError("the dask executor needs --scheduler-address (tcp://host:8786)")
    with Client(scheduler_address) as client:
        # pure=False: a task is cheap to describe but must run even if an equal one ran before.
        futures = client.map(fn, list(tasks), pure=False)
        index = {f.key: i for i, f in enumerate(futures)}
        for future in dask_completed(futures):
            finished(index[future.key], future.result())


def rows(results: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """One flat row per run: setup, policy, V, seed, λ, θ, twt, cost, twt_imp_pct, cost_pct, balance."""
    out: list[dict[str, Any]] = []
    for res in results:
        task = res["task"]
        for i, cap in enumerate(res["V"]):
            out.append(
                {
                    "trace": task["setup"],
                    "policy": task["policy"],
                    "V": cap,
                    "seed": task["seed"] if task["policy"] == "random" else None,
                    "run": i if task["policy"] == "random" else None,
                    "lambda": task["cost_weight"],
                    "threshold": task["threshold"] if _current_name(task["policy"]) in THRESHOLD_POLICIES else None,
                    "twt": res["twt"][i],
                    "cost": res["cost"][i],
                    "twt_imp_pct": res["twt_imp_pct"][i],
                    "cost_pct": res["cost_pct"][i],
                    "balance": res["balance"][i],
                }
            )
    return out
