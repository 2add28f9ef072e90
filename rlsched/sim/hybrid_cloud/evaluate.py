"""Evaluate every cap V of one period from one state — the inner loop of FH's learner (FH §5).

FH clone the schedule and queue for every V ∈ 0..M at the start of each day and
simulate all clones through the day: M+1 simulations a day (1665 on SDSC-DS).
Here the clones are not simulated one by one.  Each simulation returns a
certificate ``[cap_lo, cap_hi]`` (see :meth:`HybridModel.advance`): every cap in it
makes the same transfer decisions, hence the same trajectory, twt and cost.  The
sweep therefore simulates V = 0, jumps to ``cap_hi + 1``, and so on; the last
interval usually reaches V = ∞ (caps above the day's peak useful cloud demand all
behave alike).  The results are *identical* to brute force (a test checks it on a
trace cut); only the number of simulations changes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rlsched.core.view import FloatArray, IntArray
from rlsched.sim.hybrid_cloud.hybrid import UNBOUNDED, HybridModel, HybridState


@dataclass
class CapSweep:
    """One period evaluated for caps 0..max_cap and for V = ∞.

    ``twt[V]``/``cost[V]`` for V in 0..max_cap (``started_wait[V]``: the waits of the jobs
    started in the period, the alternative day accounting); ``twt_inf``/``cost_inf`` for V → ∞;
    ``group[V]`` the index of V's distinct outcome (equal index ⇒ identical trajectory);
    ``states[g]`` the end state of outcome g when kept; ``simulations`` the count run.
    """

    twt: FloatArray
    cost: FloatArray
    started_wait: FloatArray
    started_cost: FloatArray
    twt_inf: float
    started_cost_inf: float
    cost_inf: float
    group: IntArray
    bounds: list[tuple[int, int]]
    states: list[HybridState | None]
    simulations: int


def sweep_caps(
    model: HybridModel,
    state: HybridState,
    until: float,
    max_cap: int,
    *,
    keep: frozenset[int] | None = None,
    brute_force: bool = False,
) -> CapSweep:
    """Simulate the period ``[state.now, until)`` for every cap 0..max_cap and ∞ from ``state``.

    ``keep``: caps whose end state is returned (None: all distinct end states).
    ``brute_force``: one simulation per cap, ignoring the certificates (for tests and timing).
    ``state`` itself is not modified.
    """
    if max_cap < 0:
        raise ValueError("max_cap must be >= 0")
    size = max_cap + 1
    twt = np.empty(size)
    cost = np.empty(size)
    started = np.empty(size)
    started_cost = np.empty(size)
    started_cost_inf = float("nan")
    group = np.empty(size, dtype=np.int64)
    bounds: list[tuple[int, int]] = []
    states: list[HybridState | None] = []
    twt_inf = cost_inf = float("nan")
    cap = 0
    sims = 0
    while cap <= max_cap or cap == UNBOUNDED:
        clone = state.copy()
        result = model.advance(clone, cap, until)
        sims += 1
        lo, hi = (cap, cap) if brute_force else (result.cap_lo, result.cap_hi)
        if not lo <= cap <= hi:
            raise AssertionError(f"certificate [{lo}, {hi}] does not contain the simulated cap {cap}")
        g = len(bounds)
        bounds.append((lo, hi))
        last = min(hi, max_cap)
        if cap <= max_cap:
            twt[cap : last + 1] = result.twt
            cost[cap : last + 1] = result.cost
            started[cap : last + 1] = result.started_wait
            started_cost[cap : last + 1] = result.started_cost
            group[cap : last + 1] = g
        wanted = keep is None or any(cap <= k <= hi for k in keep)
        states.append(clone if wanted else None)
        if hi >= UNBOUNDED:
            twt_inf, cost_inf, started_cost_inf = result.twt, result.cost, result.started_cost
            break
        cap = hi + 1 if hi + 1 <= max_cap else UNBOUNDED
    return CapSweep(
        twt=twt,
        cost=cost,
        started_wait=started,
        started_cost=started_cost,
        started_cost_inf=started_cost_inf,
        twt_inf=twt_inf,
        cost_inf=cost_inf,
        group=group,
        bounds=bounds,
        states=states,
        simulations=sims,
    )


def state_for(sweep: CapSweep, cap: int) -> HybridState:
    """The end state the sweep kept for ``cap`` (caps above max_cap map to the ∞ outcome)."""
    g = int(sweep.group[cap]) if cap < len(sweep.group) else len(sweep.bounds) - 1
    found = sweep.states[g]
    if found is None:
        raise KeyError(f"the sweep did not keep the end state of cap {cap}")
    return found
