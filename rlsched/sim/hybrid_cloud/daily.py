"""Policies that fix the cap V for a whole day from what is seen at the day's start.

FH's policies (constant V, random V, their Q-learner) set V once a day.  Two policies here do
the same, so that they compare like for like:

* :func:`daily_learned` — :class:`rlsched.core.leasing.DailyCapLearner`: a contextual learner over
  daily features (:func:`day_features`), trained online with FH's daily clones run a few days on;
* :func:`state_aware_daily` — the per-pass state-aware rule evaluated once at the day's start and
  held for the day.

Everything a decision uses is known at the day's start: the state (queue, running jobs), the
jobs submitted so far, and the actual runtimes of jobs submitted over a week earlier.  A clone's
counterfactual cost for day d is only computed at the end of day d + H, when those days are over.
"""

from __future__ import annotations

import dataclasses
import math
import time

import numpy as np

from rlsched.core.leasing import (
    DailyCapLearner,
    DailyLearnerParams,
    DailyPrior,
    StateAwareParams,
    cap_fraction_index,
    daily_cap_set,
    remaining_work,
    runtime_ratio,
)
from rlsched.core.view import FloatArray, IntArray
from rlsched.sim.hybrid_cloud.hybrid import UNBOUNDED, HybridModel, HybridState
from rlsched.sim.hybrid_cloud.runs import (
    RATIO_LAG_S,
    Group,
    Trajectory,
    _period_end,
    _StateAwareController,
    advance_groups,
)

DAY_S = 86_400.0
#: The daily features, in order (see :func:`day_features`).
DAY_FEATURES = ("backlog", "arrivals")


class _Observer:
    """What a live controller knows at an instant: the runtime ratio of old jobs, the arrivals so far,
    and the running references V = 0 and V → ∞ (for κ)."""

    def __init__(self, model: HybridModel, cost_weight: float) -> None:
        self.model = model
        self.cost_weight = cost_weight
        self.submit = np.asarray(model.submit, dtype=np.float64)
        self.run = np.asarray(model.run, dtype=np.float64)
        self.req = np.asarray(model.req, dtype=np.float64)
        self.procs = np.asarray(model.procs, dtype=np.float64)
        self.ratio = 1.0
        self.ref0, self.ref_inf = model.initial_state(), model.initial_state()
        self.twt_ref = 0.0
        self.c_ref = 0.0
        self.days = 0

    @property
    def exchange_rate(self) -> float:
        """κ = twt_ref / c_ref so far (λ-weighted: the wait one cloud core-second is worth)."""
        return self.cost_weight * self.twt_ref / self.c_ref if self.c_ref > 0 else 0.0

    @property
    def per_day(self) -> tuple[float, float]:
        """The references' wait and cloud cost per day so far (0 before the first day is over)."""
        return (self.twt_ref / self.days, self.c_ref / self.days) if self.days else (0.0, 0.0)

    def day_over(self, until: float) -> None:
        """Advance the references to ``until`` and refresh the runtime ratio (jobs older than a week)."""
        self.twt_ref += self.model.advance(self.ref0, 0, until).twt
        self.c_ref += self.model.advance(self.ref_inf, UNBOUNDED, until).cost
        self.days += 1
        if math.isfinite(until):
            known = int(np.searchsorted(self.submit, until - RATIO_LAG_S, side="left"))
            ratio = runtime_ratio(self.run[:known], self.req[:known])
            if ratio is not None:
                self.ratio = ratio


def day_features(
    model: HybridModel, s: HybridState, ratio: float, submit: FloatArray, procs: FloatArray, req: FloatArray
) -> FloatArray:
    """The day's context, in days of the whole local machine's work (so traces compare):

    * ``backlog``: expected work of the queue plus the running jobs' remaining work;
    * ``arrivals``: expected work of the jobs submitted over the last day.

    Expected work = cores × requested time × the actual/requested ratio of old jobs.
    """
    scale = model.cores * DAY_S
    rows = np.fromiter(s.queue, dtype=np.int64, count=len(s.queue))
    queued = float((procs[rows] * req[rows]).sum()) * ratio
    running = (
        remaining_work(
            np.asarray([model.procs[j] for j in s.rjob], dtype=np.float64), np.asarray(s.rexp, dtype=np.float64), s.now
        )
        * ratio
    )
    first = int(np.searchsorted(submit, s.now - DAY_S, side="left"))
    recent = float((procs[first : s.next_submit] * req[first : s.next_submit]).sum()) * ratio
    return np.array([(queued + running) / scale, recent / scale])


def _counterfactual(
    model: HybridModel,
    starts: list[HybridState],
    edges: FloatArray,
    day: int,
    last: int,
    caps: tuple[int, ...],
    followed: list[int],
    actual_twt: FloatArray,
    actual_cost: FloatArray,
) -> tuple[FloatArray, FloatArray]:
    """Wait and cloud cost over days ``day`` … ``last`` for each cap of ``caps`` on ``day``, then the caps
    ``followed[k]`` actually used on the days after.

    ``starts[k]``: the actual state at the start of day ``day + k`` (one more than the days, the last
    being the state at the end of ``last``); ``actual_twt[k]``/``actual_cost[k]``: what day ``day + k``
    actually cost.  Caps that act alike on ``day`` (the same certificate) share one simulation; equal
    end states share their continuation; a clone whose state meets the actual one at a day's end has
    the actual future from there on, so it stops and takes the actual costs.
    """
    # Clones that end the day in the same state share their continuation (their day's costs may differ).
    outcomes, waits, cloud, _ = advance_groups(
        model, [(starts[0], np.arange(len(caps)))], np.asarray(caps, dtype=np.int64), _period_end(edges, day)
    )
    for clone, members in outcomes:
        wait = spent = 0.0
        for k, d in enumerate(range(day, last + 1)):
            if k > 0:
                step = model.advance(clone, followed[k - 1], _period_end(edges, d))
                wait += step.twt
                spent += step.cost
            if clone.key() == starts[k + 1].key():
                wait += float(actual_twt[k + 1 :].sum())
                spent += float(actual_cost[k + 1 :].sum())
                break
        waits[members] += wait
        cloud[members] += spent
    return waits, cloud


def _held_counterfactual(
    model: HybridModel, start: HybridState, edges: FloatArray, day: int, last: int, caps: tuple[int, ...]
) -> tuple[FloatArray, FloatArray]:
    """Wait and cloud cost over days ``day`` … ``last`` for each cap of ``caps`` held over all those days.

    Runs that share a state are simulated once per certificate interval, and runs whose states
    meet again at a day's end merge (as in :func:`rlsched.sim.hybrid_cloud.runs.grouped_runs`).
    """
    values = np.asarray(caps, dtype=np.int64)
    waits = np.zeros(len(caps))
    cloud = np.zeros(len(caps))
    groups: list[Group] = [(start, np.arange(len(caps)))]
    for d in range(day, last + 1):
        groups, twt, cost, _ = advance_groups(model, groups, values, _period_end(edges, d))
        waits += twt
        cloud += cost
    return waits, cloud


def daily_learned(
    model: HybridModel,
    edges: FloatArray,
    params: DailyLearnerParams,
    *,
    cost_weight: float = 1.0,
    max_cap: int | None = None,
    prior: DailyPrior | None = None,
    collect: DailyPrior | None = None,
) -> Trajectory:
    """The daily learned cap (:class:`DailyCapLearner`) over the whole trace, learning online.

    Day d: features from the state at the day's start → context bin → greedy cap, held all day.
    At the end of day d + H the clones of day d (every cap of the action set, then the caps
    actually chosen on days d+1 … d+H) give the counterfactual costs the learner is updated with.
    κ is the running references' λ·twt_ref / c_ref at decision time.

    ``prior``: other traces' daily clones the estimates start from (``params.transfer_days`` days'
    worth).  ``collect``: a :class:`DailyPrior` this run's own clones are added to, each divided by
    this trace's reference wait and cost per day over the whole run (known once the run is over),
    so that another trace can start from them.
    """
    t0 = time.perf_counter()
    days = len(edges) - 1
    caps_set = daily_cap_set(model.cores, max_cap)
    fractions = cap_fraction_index(caps_set, model.cores, max_cap)
    unknown = set(params.features) - set(DAY_FEATURES)
    if unknown:
        raise ValueError(
            f"unknown daily feature(s) {', '.join(sorted(unknown))}; choose from {', '.join(DAY_FEATURES)}"
        )
    picked = [DAY_FEATURES.index(f) for f in params.features]
    learner = DailyCapLearner(caps_set, len(picked), params, prior=prior, fraction_index=fractions)
    seen = _Observer(model, cost_weight)
    state = model.initial_state()
    twt = np.zeros(days)
    cost = np.zeros(days)
    caps = np.zeros(days, dtype=np.int64)
    starts: dict[int, HybridState] = {}  # the actual state at the start of each day not yet learned from
    contexts: dict[int, int] = {}
    samples: list[tuple[int, FloatArray, FloatArray]] = []
    sims = 0
    for d in range(days):
        context = learner.observe(day_features(model, state, seen.ratio, seen.submit, seen.procs, seen.req)[picked])
        cap = learner.choose(context, seen.exchange_rate, *seen.per_day)
        caps[d] = cap
        starts[d], contexts[d] = state.copy(), context
        until = _period_end(edges, d)
        result = model.advance(state, cap, until)
        twt[d], cost[d] = result.twt, result.cost
        seen.day_over(until)
        first = min(contexts) if contexts else d + 1
        while contexts and (first + params.horizon_days <= d or d == days - 1):
            waits, cloud = _day_clones(model, params, starts, state, edges, first, d, caps_set, caps, twt, cost)
            context_first = contexts.pop(first)
            learner.update(context_first, waits, cloud)
            if collect is not None:
                samples.append((context_first, waits, cloud))
            del starts[first]
            sims += len(caps_set)
            first += 1
    if collect is not None:
        wait_per_day, cost_per_day = seen.per_day
        for context, waits, cloud in samples:
            collect.add(
                context,
                waits / wait_per_day if wait_per_day > 0 else np.zeros_like(waits),
                cloud / cost_per_day if cost_per_day > 0 else np.zeros_like(cloud),
                fractions,
            )
    return Trajectory(
        twt=twt,
        cost=cost,
        caps=caps,
        simulations=sims,
        wall_s=time.perf_counter() - t0,
        info={"actions": float(len(caps_set))},
    )


def _day_clones(
    model: HybridModel,
    params: DailyLearnerParams,
    starts: dict[int, HybridState],
    state: HybridState,
    edges: FloatArray,
    first: int,
    d: int,
    caps_set: tuple[int, ...],
    caps: IntArray,
    twt: FloatArray,
    cost: FloatArray,
) -> tuple[FloatArray, FloatArray]:
    """Day ``first``'s clones for :func:`daily_learned` at the end of day ``d`` (``params.continuation``)."""
    if params.continuation == "held":
        return _held_counterfactual(model, starts[first], edges, first, d, caps_set)
    window = [starts[k] for k in range(first, d + 1)] + [state]
    return _counterfactual(
        model,
        window,
        edges,
        first,
        d,
        caps_set,
        caps[first + 1 : d + 1].tolist(),
        twt[first : d + 1],
        cost[first : d + 1],
    )


def daily_prior(
    sources: dict[str, tuple[HybridModel, FloatArray]], params: DailyLearnerParams, *, cost_weight: float = 1.0
) -> DailyPrior:
    """The prior other traces give: each source run once by the cold learner (no prior) with ``params``,
    its daily clones collected in normalised units (see :class:`DailyPrior`)."""
    cold = dataclasses.replace(params, transfer_days=0.0)
    prior = DailyPrior(params.bins, len(params.features), sources=tuple(sources))
    for model, edges in sources.values():
        daily_learned(model, edges, cold, cost_weight=cost_weight, collect=prior)
    return prior


def state_aware_daily(
    model: HybridModel,
    edges: FloatArray,
    params: StateAwareParams,
    *,
    cost_weight: float = 1.0,
    max_cap: int | None = None,
) -> Trajectory:
    """The per-pass state-aware rule evaluated once, at the day's start, and that cap held for the day."""
    t0 = time.perf_counter()
    days = len(edges) - 1
    seen = _Observer(model, cost_weight)
    controller = _StateAwareController(model, params, ratio=1.0)
    state = model.initial_state()
    twt = np.zeros(days)
    cost = np.zeros(days)
    caps = np.zeros(days, dtype=np.int64)
    for d in range(days):
        controller.ratio = seen.ratio
        controller.exchange_rate = seen.exchange_rate
        cap = controller(model, state)
        if max_cap is not None:
            cap = min(cap, max_cap)
        caps[d] = cap
        until = _period_end(edges, d)
        result = model.advance(state, cap, until)
        twt[d], cost[d] = result.twt, result.cost
        seen.day_over(until)
    return Trajectory(twt=twt, cost=cost, caps=caps, simulations=3 * days, wall_s=time.perf_counter() - t0)
