"""The lease ledger: leased node-seconds and their cost, per UTC day, against a hard daily budget.

Pure bookkeeping (the time comes in as an argument).  Charging is conservative so that the budget errs
towards spending less: over each interval between two looks the larger of the two node counts is
charged (a node that came up between looks is charged from the earlier one), and a gap in the looks
(the daemon was down) is charged at that rate too.  Cloud providers bill the instance, not the job,
so every powered cloud node is charged, busy or idle, including while it powers up (FH §2.3 charges
cloud CPU-seconds; we charge the node-seconds the provider bills).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

DAY_S = 86_400.0


def utc_day(time_s: float) -> int:
    """Days since the epoch in UTC: the ledger's budget day."""
    return math.floor(time_s / DAY_S)


@dataclass
class LeaseLedger:
    """Node-seconds and cost, today and in all; see the module docstring for how charging works."""

    budget_node_s_per_day: float
    price_per_node_hour: float = 0.0
    day: int | None = None
    used_today_s: float = 0.0
    total_node_s: float = 0.0
    last_time_s: float | None = None
    last_nodes: int = 0

    def charge(self, now_s: float, leased_nodes: int) -> float:
        """Account the interval since the last look; returns the node-seconds charged for it."""
        if leased_nodes < 0:
            raise ValueError(f"leased_nodes must be >= 0, got {leased_nodes}")
        charged = 0.0
        if self.last_time_s is None or now_s <= self.last_time_s:
            if self.day is None:
                self.day = utc_day(now_s)
        else:
            rate = max(self.last_nodes, leased_nodes)
            t = self.last_time_s
            while t < now_s:  # split at UTC midnights: each day's share goes to that day
                day = utc_day(t)
                if self.day != day:
                    self.day, self.used_today_s = day, 0.0
                end = min(now_s, (day + 1) * DAY_S)
                piece = rate * (end - t)
                self.used_today_s += piece
                charged += piece
                t = end
        if self.day != utc_day(now_s):
            self.day, self.used_today_s = utc_day(now_s), 0.0
        self.total_node_s += charged
        self.last_time_s = max(now_s, self.last_time_s or now_s)
        self.last_nodes = leased_nodes
        return charged

    @property
    def remaining_today_s(self) -> float:
        """Node-seconds left in today's budget (negative when running jobs took the day over it)."""
        return self.budget_node_s_per_day - self.used_today_s

    @property
    def total_cost(self) -> float:
        return self.total_node_s / 3600.0 * self.price_per_node_hour

    @property
    def cost_today(self) -> float:
        return self.used_today_s / 3600.0 * self.price_per_node_hour

    def nodes_affordable(self, reserve_s: float) -> int:
        """How many nodes today's remaining budget covers for ``reserve_s`` more seconds each.

        A new lease costs at least ``reserve_s`` (boot plus Slurm's idle ``SuspendTime``), so a node is
        allowed only while the rest of the day's budget covers that much for it and every other allowed
        node.  0 once the budget is spent: no new lease, no new job on a leased node.
        """
        left = self.remaining_today_s
        if math.isinf(left):
            return 2**31 - 1
        if left <= 0:
            return 0
        return int(left // max(reserve_s, 1.0))

    def to_dict(self) -> dict[str, Any]:
        return {
            "day": self.day,
            "used_today_s": self.used_today_s,
            "total_node_s": self.total_node_s,
            "last_time_s": self.last_time_s,
            "last_nodes": self.last_nodes,
        }

    def restore(self, data: dict[str, Any], source: str) -> None:
        """Load what :meth:`to_dict` wrote (the budget and price stay those of the current config)."""
        try:
            self.day = None if data.get("day") is None else int(data["day"])
            self.used_today_s = float(data.get("used_today_s", 0.0))
            self.total_node_s = float(data.get("total_node_s", 0.0))
            last = data.get("last_time_s")
            self.last_time_s = None if last is None else float(last)
            self.last_nodes = int(data.get("last_nodes", 0))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{source}: bad lease ledger: {exc}") from None
