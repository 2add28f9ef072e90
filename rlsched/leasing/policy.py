"""The cap V: the leasing policy's choice, clamped by the hard cap and the budget (pure; time is an argument).

``state-aware`` feeds :func:`rlsched.core.leasing.state_aware_cap_from_view` — the same code the
simulator's ``fh-ours`` experiment runs, with the same estimators (:func:`rlsched.core.leasing.arrival_rate_per_s`,
:func:`rlsched.core.leasing.runtime_ratio`) — with what a live controller can know: the arrival rate of the
jobs it has seen over ``arrival_window_s`` and the actual/requested runtime ratio of the jobs it saw
finish.  ``fixed`` is V = ``max_nodes`` (Slurm's power saving alone, within the budget).

The policy is asked once per ``period_s`` (FH §5 fixes V for a period); the clamps are applied at every
cycle, because the budget runs out within a period and a hard cap must hold whatever the policy said.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np

from rlsched.core.leasing import StateAwareParams, arrival_rate_per_s, runtime_ratio, state_aware_cap_from_view
from rlsched.core.view import ClusterView
from rlsched.leasing.budget import LeaseLedger
from rlsched.leasing.config import LeasingConfig

#: Finished jobs kept for the runtime ratio (enough to be stable, recent enough to follow a change).
RATIO_WINDOW_JOBS = 2000


@dataclass
class ArrivalRate:
    """Jobs per second submitted over the last ``window_s``, from the job ids seen in the views.

    Jobs already queued when the controller started are not arrivals it saw: they count only from the
    controller's start, and the window is shortened to the time watched so far.
    """

    window_s: float
    started_s: float | None = None
    _submits: dict[int, float] = field(default_factory=dict)

    def observe(self, view: ClusterView) -> None:
        if self.started_s is None:
            self.started_s = view.time_s
        for ids, submits in (
            (view.pending.job_id, view.pending.submit_s),
            (view.running.job_id, view.running.submit_s),
            (view.finished.job_id, view.finished.submit_s),
        ):
            for job_id, submit in zip(ids.tolist(), submits.tolist(), strict=True):
                self._submits.setdefault(int(job_id), float(submit))
        horizon = view.time_s - self.window_s
        if len(self._submits) > 1024:
            self._submits = {k: v for k, v in self._submits.items() if v >= horizon}

    def rate_per_s(self, now_s: float) -> float:
        if self.started_s is None:
            return 0.0
        submits = np.sort(np.fromiter(self._submits.values(), dtype=np.float64, count=len(self._submits)))
        return arrival_rate_per_s(submits, now_s, self.window_s, watched_since_s=self.started_s)


@dataclass
class RuntimeRatio:
    """Σ actual runtime / Σ requested time of the last finished jobs (1.0 until one is seen)."""

    requested: dict[int, float] = field(default_factory=dict)
    pairs: deque[tuple[float, float]] = field(default_factory=lambda: deque(maxlen=RATIO_WINDOW_JOBS))

    def observe(self, view: ClusterView) -> None:
        self.requested.update(zip(view.running.job_id.tolist(), view.running.req_time_s.tolist(), strict=True))
        fin = view.finished
        for job_id, start, end in zip(fin.job_id.tolist(), fin.start_s.tolist(), fin.end_s.tolist(), strict=True):
            req = self.requested.pop(int(job_id), None)
            if req is not None and req > 0 and np.isfinite(req) and end >= start:
                self.pairs.append((end - start, req))
        if len(self.requested) > 4 * max(len(view.running), 256):  # jobs that vanished unseen
            live = set(view.running.job_id.tolist())
            self.requested = {k: v for k, v in self.requested.items() if k in live}

    @property
    def value(self) -> float:
        if not self.pairs:
            return 1.0
        run_s, req_s = np.array(self.pairs, dtype=np.float64).T
        ratio = runtime_ratio(run_s, req_s)
        return ratio if ratio is not None and ratio > 0 else 1.0


@dataclass(frozen=True)
class CapDecision:
    """One cycle's cap and how it came about (exported as metrics, logged when it changes)."""

    cap: int
    policy_cap: int
    hard_cap: int
    budget_cap: int
    reason: str

    @property
    def budget_binding(self) -> bool:
        """The budget, not the policy or the hard cap, set V."""
        return self.reason == "budget"


@dataclass
class CapPolicy:
    """Per period: the policy's V; per cycle: V clamped by ``max_nodes``, the usable nodes and the budget."""

    config: LeasingConfig
    arrivals: ArrivalRate = field(init=False)
    ratio: RuntimeRatio = field(default_factory=RuntimeRatio)
    policy_cap: int | None = None
    decided_at_s: float | None = None

    def __post_init__(self) -> None:
        self.arrivals = ArrivalRate(self.config.arrival_window_s)

    def observe(self, view: ClusterView) -> None:
        self.arrivals.observe(view)
        self.ratio.observe(view)

    def _policy(self, view: ClusterView) -> int:
        if self.config.policy == "fixed":
            return self.config.max_nodes
        params = StateAwareParams(threshold=self.config.threshold, arrival_window_s=self.config.arrival_window_s)
        return state_aware_cap_from_view(
            view,
            exchange_rate=self.config.exchange_rate,
            runtime_ratio=self.ratio.value,
            arrival_rate_per_s=self.arrivals.rate_per_s(view.time_s),
            params=params,
        )

    def decide(self, view: ClusterView, ledger: LeaseLedger, usable_nodes: int) -> CapDecision:
        """V for this cycle.  ``usable_nodes``: managed cloud nodes not out for failed launches."""
        self.observe(view)
        now = view.time_s
        if self.policy_cap is None or self.decided_at_s is None or now - self.decided_at_s >= self.config.period_s:
            self.policy_cap = max(int(self._policy(view)), 0)
            self.decided_at_s = now
        hard = min(self.config.max_nodes, usable_nodes)
        budget = ledger.nodes_affordable(self.config.min_lease_s)
        cap = min(self.policy_cap, hard, budget)
        if cap == budget and budget < min(self.policy_cap, hard):
            reason = "budget"
        elif cap == hard and hard < self.policy_cap:
            reason = "hard cap" if hard == self.config.max_nodes else "usable nodes"
        else:
            reason = f"policy {self.config.policy}"
        return CapDecision(cap=cap, policy_cap=self.policy_cap, hard_cap=hard, budget_cap=budget, reason=reason)
