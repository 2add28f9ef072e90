"""Task flows for the heterogeneous-units model (Tong et al., 2014, §6).

A :class:`~rlsched.sim.dispatch.model.Flow` holds, per task, its arrival time (hours), its
type and its *work*: the service time of the task on unit ``j`` is
``work / mu[type, j]``.  Synthetic flows draw the work from Exp(1), so service times are
exponential with rate ``mu[type, j]`` as in Tong §6.1; a trace replay sets the work so that
the service time is the recorded runtime.  Every policy run on the same flow sees the same
arrivals and the same work (common random numbers), so policy differences are paired.

Settings:

- the small system of §6.1: 3 units, 5 types with probabilities 0.4/0.2/0.1/0.1/0.2 and the
  service-rate matrix of Table 3; inter-arrival laws exponential, constant, uniform and
  chi-square with the same mean 1/λ (§6.2);
- service-rate estimation errors (§6.2, Figs. 6–7): every rate shifted by ±n tasks/hour;
- the LPC cluster of §6.3.2: homogeneous CPUs, Dteam (p=0.52, 10/h) and Biomed (p=0.48,
  0.67/h) tasks arriving in a 6-hour cycle (one third of the cycle at 66/h, the rest at 9/h,
  which gives the paper's mean of 28/h);
- a replay of the real LPC-EGEE trace (Dteam and Biomed jobs of the SWF log).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from rlsched.core.view import FloatArray
from rlsched.sim.dispatch.model import Flow
from rlsched.sim.workload import Workload

#: Tong Table 3, service rates in tasks/hour, transposed to ``[type, unit]`` (rows t1..t5,
#: columns P1..P3).
TONG_SERVICE_RATES: FloatArray = np.array(
    [[60.0, 50.0, 40.0, 45.0, 55.0], [30.0, 35.0, 30.0, 40.0, 40.0], [15.0, 55.0, 50.0, 35.0, 45.0]]
).T.copy()
#: Tong §6.1: types t1..t5 arrive with probabilities 0.4, 0.2, 0.1, 0.1, 0.2.
TONG_TYPE_PROBS: FloatArray = np.array([0.4, 0.2, 0.1, 0.1, 0.2])
#: Tong §6.1: "the arrival rate λ = 80 tasks per hour".
TONG_ARRIVAL_RATE = 80.0

ArrivalLaw = Literal["exponential", "constant", "uniform", "chisquare"]
ARRIVAL_LAWS: tuple[ArrivalLaw, ...] = ("exponential", "constant", "uniform", "chisquare")
#: Degrees of freedom of the chi-square inter-arrival law.  The paper does not give them;
#: k = 2 would be the exponential law itself, so we take k = 1 (squared coefficient of
#: variation 2, burstier than Poisson) to make the law genuinely different.
CHI_SQUARE_DOF = 1


def interarrival_times(
    law: ArrivalLaw, rate_per_h: float, n: int, rng: np.random.Generator, chi2_dof: int = CHI_SQUARE_DOF
) -> FloatArray:
    """``n`` inter-arrival times (hours) of mean ``1/rate_per_h`` under ``law`` (Tong §6.2).

    ``uniform`` is U(0, 2/λ); ``constant`` is exactly 1/λ; ``chisquare`` is χ²_k · (1/λ)/k.
    """
    if rate_per_h <= 0:
        raise ValueError(f"arrival rate {rate_per_h} must be positive")
    mean = 1.0 / rate_per_h
    if law == "exponential":
        return rng.exponential(mean, n)
    if law == "constant":
        return np.full(n, mean)
    if law == "uniform":
        return rng.uniform(0.0, 2.0 * mean, n)
    if law == "chisquare":
        return rng.chisquare(chi2_dof, n) * (mean / chi2_dof)
    raise ValueError(f"unknown arrival law {law!r}; expected one of {', '.join(ARRIVAL_LAWS)}")


def synthetic_flow(
    n_tasks: int,
    rate_per_h: float,
    type_probs: FloatArray,
    rng: np.random.Generator,
    law: ArrivalLaw = "exponential",
    name: str | None = None,
) -> Flow:
    """A flow of ``n_tasks`` typed tasks: arrivals by ``law``, i.i.d. types, Exp(1) work (§6.1)."""
    probs = np.asarray(type_probs, dtype=np.float64)
    if probs.ndim != 1 or np.any(probs < 0) or not np.isclose(probs.sum(), 1.0):
        raise ValueError(f"type probabilities {probs.tolist()} must be non-negative and sum to 1")
    arrival = np.cumsum(interarrival_times(law, rate_per_h, n_tasks, rng))
    types = rng.choice(len(probs), size=n_tasks, p=probs).astype(np.int64)
    work = rng.exponential(1.0, n_tasks)
    return Flow(arrival, types, work, name or f"{law}-{rate_per_h:g}")


def tong_flow(n_tasks: int, rate_per_h: float, rng: np.random.Generator, law: ArrivalLaw = "exponential") -> Flow:
    """The small-scale flow of Tong §6.1–§6.3.1 (Table 3 setting)."""
    return synthetic_flow(n_tasks, rate_per_h, TONG_TYPE_PROBS, rng, law)


def shifted_rates(rates: FloatArray, shift_per_h: float) -> FloatArray:
    """Service-rate estimates off by ``shift_per_h`` tasks/hour (Tong §6.2, Figs. 6–7).

    "n-overestimated" is ``+n``, "n-underestimated" is ``-n``.  Rates are kept positive.
    """
    shifted = np.asarray(rates, dtype=np.float64) + shift_per_h
    if np.any(shifted <= 0):
        raise ValueError(f"a shift of {shift_per_h}/h makes a service rate non-positive")
    return shifted


#: Tong §6.2 estimation-error cases (label, shift in tasks/hour), the x-axis of Figs. 6–7.
ESTIMATION_ERRORS: tuple[tuple[str, float], ...] = (
    ("correct", 0.0),
    ("5-under", -5.0),
    ("5-over", 5.0),
    ("10-over", 10.0),
)


@dataclass(frozen=True)
class LpcSetting:
    """The synthetic LPC cluster of Tong §6.3.2 (defaults are the paper's numbers)."""

    cpus: int = 140
    days: float = 163.0
    #: Dteam, Biomed.
    type_names: tuple[str, ...] = ("dteam", "biomed")
    type_probs: tuple[float, ...] = (0.52, 0.48)
    service_rates_per_h: tuple[float, ...] = (10.0, 0.67)
    cycle_h: float = 6.0
    #: One third of each cycle at the burst rate, the rest at the base rate: 66/3 + 9·2/3 = 28/h.
    burst_fraction: float = 1.0 / 3.0
    burst_rate_per_h: float = 66.0
    base_rate_per_h: float = 9.0

    @property
    def mean_rate_per_h(self) -> float:
        return self.burst_fraction * self.burst_rate_per_h + (1 - self.burst_fraction) * self.base_rate_per_h

    @property
    def service_rates(self) -> FloatArray:
        """``[type, unit]`` rates: the CPUs are homogeneous."""
        return np.repeat(np.asarray(self.service_rates_per_h)[:, None], self.cpus, axis=1)

    @property
    def offered_load(self) -> float:
        """Mean busy CPUs over the CPU count: above 1 the queues grow without bound."""
        demand = sum(p / mu for p, mu in zip(self.type_probs, self.service_rates_per_h, strict=True))
        return self.mean_rate_per_h * demand / self.cpus


def burst_time_fraction(task_share: float, burst_rate_per_h: float, base_rate_per_h: float) -> float:
    """Fraction of each cycle spent at the burst rate so that ``task_share`` of the tasks
    arrive in bursts: solves ``f·r_b / (f·r_b + (1 − f)·r_0) = share`` for ``f``.

    Tong §6.3.2 reads "one third tasks arrive continuously at the rate of 66/h while the
    rest tasks at 9/h": taken literally (a third of the *tasks*), f = 3/47 ≈ 0.064 and the
    mean rate is 12.6/h, not the 28/h the same paragraph derives from the log (108,651 jobs
    in 163 days), which needs a third of the *time* at 66/h.  :class:`LpcSetting` defaults
    to the time reading; this gives the task reading (see docs/tong.md).
    """
    if not 0.0 < task_share < 1.0 or burst_rate_per_h <= 0 or base_rate_per_h <= 0:
        raise ValueError(f"burst_time_fraction: share {task_share} must be in (0, 1) and rates positive")
    return task_share * base_rate_per_h / (burst_rate_per_h * (1.0 - task_share) + task_share * base_rate_per_h)


def lpc_flow(setting: LpcSetting, rng: np.random.Generator) -> Flow:
    """Tong §6.3.2 LPC flow: a Poisson process whose rate repeats every 6 h (burst, then base).

    Within each constant-rate segment the count is Poisson and the times are uniform, which
    is exactly a piecewise-constant-rate Poisson process.
    """
    horizon = setting.days * 24.0
    n_cycles = int(np.ceil(horizon / setting.cycle_h))
    burst_len = setting.burst_fraction * setting.cycle_h
    starts = np.repeat(np.arange(n_cycles) * setting.cycle_h, 2) + np.tile([0.0, burst_len], n_cycles)
    lengths = np.tile([burst_len, setting.cycle_h - burst_len], n_cycles)
    ends = np.minimum(starts + lengths, horizon)
    lengths = np.maximum(ends - starts, 0.0)
    rates = np.tile([setting.burst_rate_per_h, setting.base_rate_per_h], n_cycles)
    counts = rng.poisson(rates * lengths)
    offsets = rng.uniform(0.0, 1.0, int(counts.sum()))
    arrival = np.sort(np.repeat(starts, counts) + offsets * np.repeat(lengths, counts))
    n = len(arrival)
    types = rng.choice(len(setting.type_probs), size=n, p=np.asarray(setting.type_probs)).astype(np.int64)
    work = rng.exponential(1.0, n)
    return Flow(arrival, types, work, f"lpc-{setting.cpus}")


@dataclass(frozen=True)
class ReplayFlow:
    """A trace replay: the flow, the per-type mean runtimes (hours) and what was left out."""

    flow: Flow
    mean_run_h: FloatArray
    type_names: tuple[str, ...]
    groups: tuple[int, ...]
    dropped: dict[str, int]


def lpc_replay_flow(workload: Workload, days: float | None = 163.0) -> ReplayFlow:
    """The Dteam and Biomed jobs of the LPC-EGEE SWF log as a flow of two task types.

    The SWF group id stands for the VO.  The log does not name its groups; the two most
    frequent groups with positive runtimes are taken, and the one with the shorter mean
    runtime is Dteam (short monitoring jobs, 0.1 h in Tong §6.3.2), the other Biomed
    (CPU-intensive, 1.5 h).  Jobs of other groups and jobs with zero runtime (cancelled
    before running; their reward 1/response would be undefined) are dropped and counted.
    ``days`` keeps the first ``days`` days (Tong replays 163 days); None keeps everything.
    Work is set so that each job's service time on any CPU is its recorded runtime.
    """
    dropped: dict[str, int] = {}
    positive = workload.run > 0
    dropped["zero_runtime"] = int((~positive).sum())
    groups, counts = np.unique(workload.group[positive], return_counts=True)
    if len(groups) < 2:
        raise ValueError(f"workload {workload.name!r}: fewer than two groups with running jobs")
    top = groups[np.argsort(-counts, kind="stable")[:2]]
    means = [float(workload.run[positive & (workload.group == g)].mean()) for g in top]
    ordered = top[np.argsort(means)]  # shorter mean first: Dteam, then Biomed
    keep = positive & np.isin(workload.group, ordered)
    dropped["other_groups"] = int((positive & ~keep).sum())
    submit = workload.submit[keep]
    run_h = workload.run[keep] / 3600.0
    types = np.where(workload.group[keep] == ordered[0], 0, 1).astype(np.int64)
    arrival = (submit - submit[0]) / 3600.0 if len(submit) else submit
    if days is not None:
        inside = arrival < days * 24.0
        dropped["after_window"] = int((~inside).sum())
        arrival, run_h, types = arrival[inside], run_h[inside], types[inside]
    mean_run = np.array([run_h[types == k].mean() for k in range(2)])
    work = run_h / mean_run[types]  # service = work / (1/mean_run) = recorded runtime
    flow = Flow(arrival, types, work, "lpc-egee-replay")
    return ReplayFlow(flow, mean_run, ("dteam", "biomed"), (int(ordered[0]), int(ordered[1])), dropped)
