"""Whole runs of the hybrid model under the FH leasing policies, with per-day accounting.

* :func:`grouped_runs` replays many runs that each follow a per-day cap schedule
  (every constant V of FH §3's brute-force sweep, or the 1000 random-V runs of FH
  Table 3).  Runs whose states coincide at a day boundary are simulated once; within
  a group, caps are covered by certificates (see :mod:`.evaluate`).  Exact: identical
  to simulating every run on its own (a test checks it).
* :func:`fh_qlearning` is FH §5's learner: every V simulated each day from the chosen
  clone, rewards rescaled to [0, 1], all Q-values updated, greedy next V.
* :func:`state_aware` runs our policy (:func:`rlsched.core.leasing.state_aware_cap`).

Every run returns per-day twt and cost (accrued within the day, see :mod:`.hybrid`),
so whole-trace totals, the balance over time (FH Fig. 6) and V over time all come
from the same arrays.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from rlsched.core.leasing import (
    FHQLearner,
    StateAwareParams,
    arrival_rate_per_s,
    balance,
    runtime_ratio,
    state_aware_cap_from_state,
)
from rlsched.core.view import FloatArray, IntArray
from rlsched.sim.hybrid_cloud.evaluate import state_for, sweep_caps
from rlsched.sim.hybrid_cloud.hybrid import INF, UNBOUNDED, HybridModel, HybridState


@dataclass
class RunSet:
    """Per-day accruals of R runs over D days: ``twt[r, d]``, ``cost[r, d]``; caps used ``caps[r, d]``."""

    twt: FloatArray
    cost: FloatArray
    caps: IntArray
    simulations: int
    wall_s: float
    info: dict[str, float] = field(default_factory=dict)

    @property
    def total_twt(self) -> FloatArray:
        return np.asarray(self.twt.sum(axis=1))

    @property
    def total_cost(self) -> FloatArray:
        return np.asarray(self.cost.sum(axis=1))


def _period_end(edges: FloatArray, d: int) -> float:
    """End of period d; the last period runs until every job has finished."""
    return float(edges[d + 1]) if d + 1 < len(edges) - 1 else INF


Group = tuple[HybridState, IntArray]


def advance_groups(
    model: HybridModel, groups: list[Group], caps: IntArray, until: float
) -> tuple[list[Group], FloatArray, FloatArray, int]:
    """One period for runs grouped by shared state: run r uses cap ``caps[r]`` until ``until``.

    A group is split into the certificate intervals its members' caps fall in (one simulation
    each, see :mod:`.evaluate`); at the end groups whose states are equal merge again (their
    futures are identical).  Returns the new groups, each run's twt and cost for the period
    (indexed by run) and the number of simulations.
    """
    twt = np.zeros(len(caps))
    cost = np.zeros(len(caps))
    sims = 0
    merged: dict[tuple[object, ...], tuple[HybridState, list[IntArray]]] = {}
    for state, members in groups:
        day_caps = caps[members]
        order = np.argsort(day_caps, kind="stable")
        members, day_caps = members[order], day_caps[order]
        idx = 0
        while idx < len(members):
            clone = state.copy()
            result = model.advance(clone, int(day_caps[idx]), until)
            sims += 1
            stop = int(np.searchsorted(day_caps, result.cap_hi, side="right"))
            covered = members[idx:stop]
            twt[covered] = result.twt
            cost[covered] = result.cost
            idx = stop
            key = clone.key()
            if key in merged:
                merged[key][1].append(covered)
            else:
                merged[key] = (clone, [covered])
    return [(s, np.concatenate(parts)) for s, parts in merged.values()], twt, cost, sims


def grouped_runs(model: HybridModel, edges: FloatArray, caps: IntArray) -> RunSet:
    """Replay R runs; run r uses cap ``caps[r, d]`` during period d (``edges[d]..edges[d+1]``).

    Runs are grouped by state (:func:`advance_groups`): simulated once per certificate interval,
    merged again when their states meet at a day's end.
    """
    t0 = time.perf_counter()
    runs, days = caps.shape
    if days != len(edges) - 1:
        raise ValueError(f"caps cover {days} periods, the edges {len(edges) - 1}")
    twt = np.zeros((runs, days))
    cost = np.zeros((runs, days))
    groups: list[Group] = [(model.initial_state(), np.arange(runs))]
    sims = 0
    max_groups = 1
    for d in range(days):
        groups, twt[:, d], cost[:, d], n = advance_groups(model, groups, caps[:, d], _period_end(edges, d))
        sims += n
        max_groups = max(max_groups, len(groups))
    return RunSet(
        twt=twt,
        cost=cost,
        caps=caps.astype(np.int64),
        simulations=sims,
        wall_s=time.perf_counter() - t0,
        info={"max_groups": float(max_groups)},
    )


def constant_sweep(model: HybridModel, edges: FloatArray, caps: IntArray | None = None) -> RunSet:
    """FH §3 brute force: one run per constant V (default 0..M); row i is ``caps[i]``."""
    values = np.arange(model.cores + 1) if caps is None else np.asarray(caps, dtype=np.int64)
    days = len(edges) - 1
    return grouped_runs(model, edges, np.repeat(values[:, None], days, axis=1))


def unbounded_run(model: HybridModel, edges: FloatArray) -> RunSet:
    """V → ∞ for the whole trace: ``c_ref`` of FH §2.4."""
    return constant_sweep(model, edges, np.array([UNBOUNDED]))


def random_caps(max_cap: int, runs: int, days: int, seed: int) -> IntArray:
    """FH §3 lower reference: V drawn uniformly from 0..M for every day of every run."""
    rng = np.random.default_rng(seed)
    return rng.integers(0, max_cap + 1, size=(runs, days), dtype=np.int64)


def random_runs(model: HybridModel, edges: FloatArray, runs: int, seed: int) -> RunSet:
    return grouped_runs(model, edges, random_caps(model.cores, runs, len(edges) - 1, seed))


@dataclass
class Trajectory:
    """One policy's run: per-day twt, cost and V (for the state-aware policy, which sets its cap at every
    pass: the day's peak cloud nodes in use)."""

    twt: FloatArray
    cost: FloatArray
    caps: IntArray
    simulations: int
    wall_s: float
    evaluated_caps: int = 0
    info: dict[str, float] = field(default_factory=dict)


def fh_qlearning(
    model: HybridModel,
    edges: FloatArray,
    *,
    alpha: float = 0.1,
    gamma: float = 0.1,
    cost_weight: float = 1.0,
    brute_force: bool = False,
    day_wait: str = "started",
    on_day: Callable[[int, int], None] | None = None,
    max_cap: int | None = None,
) -> Trajectory:
    """FH §5: each day simulate every V ∈ 0..M (and V = 0, V → ∞ as the day's references)
    from the chosen clone, reward the rescaled day balances, update all Q-values, go greedy.

    ``cost_weight`` λ weighs the cost term of the balance (FH: 1).  ``day_wait`` is how a
    clone's day is counted for its reward: ``started`` (the default: the waits of the jobs
    started that day and the full cost of the jobs sent that day) or ``accrued`` (∫ waiting
    jobs dt and ∫ cloud nodes in use dt within the day); see docs/leasing.md.  ``max_cap``: the
    largest V (a site's cloud nodes; default M, FH's action set 0..M).
    """
    if day_wait not in ("accrued", "started"):
        raise ValueError(f"day_wait must be 'accrued' or 'started', not {day_wait!r}")
    t0 = time.perf_counter()
    days = len(edges) - 1
    top = model.cores if max_cap is None else max_cap
    learner = FHQLearner(top, alpha=alpha, gamma=gamma)
    state = model.initial_state()
    cap = learner.choose()
    twt = np.zeros(days)
    cost = np.zeros(days)
    caps = np.zeros(days, dtype=np.int64)
    sims = 0
    for d in range(days):
        until = _period_end(edges, d)
        sweep = sweep_caps(model, state, until, top, keep=frozenset([cap]), brute_force=brute_force)
        sims += sweep.simulations
        caps[d] = cap
        twt[d] = sweep.twt[cap]
        cost[d] = sweep.cost[cap]
        # The day's references come from the clones: V = 0 and V → ∞ (FH §5).
        if day_wait == "accrued":
            day_twt, day_cost, day_cost_inf = sweep.twt, sweep.cost, sweep.cost_inf
        else:
            day_twt, day_cost, day_cost_inf = sweep.started_wait, sweep.started_cost, sweep.started_cost_inf
        day_balance = balance(day_twt, cost_weight * day_cost, float(day_twt[0]), cost_weight * day_cost_inf)
        state = state_for(sweep, cap)
        cap = learner.step(day_balance)
        if on_day is not None:
            on_day(d, sweep.simulations)
    return Trajectory(
        twt=twt,
        cost=cost,
        caps=caps,
        simulations=sims,
        wall_s=time.perf_counter() - t0,
        evaluated_caps=days * (top + 1),
    )


#: Jobs submitted this long before the current time count as finished for the runtime ratio.
RATIO_LAG_S = 7 * 86_400.0


class _StateAwareController:
    """Feeds :func:`state_aware_cap` from the simulator state; κ from the reference runs so far."""

    def __init__(self, model: HybridModel, params: StateAwareParams, ratio: float) -> None:
        self.params = params
        self.ratio = ratio
        self.exchange_rate = 0.0
        #: Peak cloud nodes in use seen at the passes of the current period (for "V over time").
        self.peak_used = 0
        procs = np.asarray(model.procs, dtype=np.int64)
        self.procs = procs
        self.req = np.asarray(model.req, dtype=np.float64)
        self.submit = np.asarray(model.submit, dtype=np.float64)

    def __call__(self, model: HybridModel, s: HybridState) -> int:
        rows = np.fromiter(s.queue, dtype=np.int64, count=len(s.queue))
        now = s.now
        # The jobs submitted so far (every one of them by ``now``): what a live controller has seen.
        rate = arrival_rate_per_s(self.submit[: s.next_submit], now, self.params.arrival_window_s)
        run_rows = np.fromiter(s.rjob, dtype=np.int64, count=len(s.rjob))
        rexp = np.fromiter(s.rexp, dtype=np.float64, count=len(s.rexp))
        cap = state_aware_cap_from_state(
            cores=model.cores,
            cloud_used=s.cloud_used,
            queue_cores=self.procs[rows],
            queue_req_s=self.req[rows],
            running_cores=self.procs[run_rows],
            running_expected_end_s=rexp,
            now_s=now,
            runtime_ratio=self.ratio,
            arrival_rate_per_s=rate,
            exchange_rate=self.exchange_rate,
            params=self.params,
        )
        if s.cloud_used > self.peak_used:
            self.peak_used = s.cloud_used
        return cap


def _capped(
    policy: Callable[[HybridModel, HybridState], int], max_cap: int
) -> Callable[[HybridModel, HybridState], int]:
    """``policy``'s cap, never above ``max_cap`` (the cloud nodes a site has)."""
    return lambda model, s: min(policy(model, s), max_cap)


def state_aware(
    model: HybridModel,
    edges: FloatArray,
    params: StateAwareParams,
    *,
    cost_weight: float = 1.0,
    max_cap: int | None = None,
) -> Trajectory:
    """Our policy: the cap is set at every scheduling pass from the state (see :func:`state_aware_cap`).

    κ = twt_ref/c_ref is estimated online from the V = 0 and V → ∞ reference runs driven by
    the arrivals seen so far (a live controller can run the same two shadow simulations);
    the expected runtime is the requested time times the mean actual/requested ratio of the
    jobs finished so far.  Nothing about the future is used.  ``max_cap``: the cloud nodes there
    are (the cap is never set above it; default unbounded).
    """
    t0 = time.perf_counter()
    days = len(edges) - 1
    state = model.initial_state()
    ref0, ref_inf = model.initial_state(), model.initial_state()
    twt_ref = c_ref = 0.0
    submit = np.asarray(model.submit, dtype=np.float64)
    run = np.asarray(model.run, dtype=np.float64)
    req = np.asarray(model.req, dtype=np.float64)
    controller = _StateAwareController(model, params, ratio=1.0)
    twt = np.zeros(days)
    cost = np.zeros(days)
    caps = np.zeros(days, dtype=np.int64)
    for d in range(days):
        until = _period_end(edges, d)
        controller.exchange_rate = cost_weight * twt_ref / c_ref if c_ref > 0 else 0.0
        controller.peak_used = state.cloud_used
        result = model.advance(state, 0, until, policy=controller if max_cap is None else _capped(controller, max_cap))
        twt[d], cost[d] = result.twt, result.cost
        caps[d] = max(controller.peak_used, state.cloud_used)
        twt_ref += model.advance(ref0, 0, until).twt
        c_ref += model.advance(ref_inf, UNBOUNDED, until).cost
        # Actual/requested runtime of the jobs submitted over a week before: they have finished
        # under any cap (the longest requests in these traces are a few days), so this is known online.
        if math.isfinite(until):
            known = int(np.searchsorted(submit, until - RATIO_LAG_S, side="left"))
            ratio = runtime_ratio(run[:known], req[:known])
            if ratio is not None:
                controller.ratio = ratio
    return Trajectory(twt=twt, cost=cost, caps=caps, simulations=3 * days, wall_s=time.perf_counter() - t0)
