"""``[leasing]``: the live leasing controller's configuration (docs/leasing-live.md, issue 6).

Every key is checked; a bad one is a one-line error naming the file and the key, like the rest of the
daemon's TOML.  Keys and defaults:

- ``enabled`` (false): without it the daemon leaves the cloud nodes alone (no cap, no reconcile).
- ``nodes``: a Slurm hostlist of the cloud nodes rlsched manages (``"cloud[1-4]"``); each must be a
  ``State=CLOUD`` node in slurm.conf.  Cloud nodes not listed are left alone.
- ``max_nodes``: the hard cap; V never exceeds it, whatever the policy says (default: all ``nodes``).
- ``period_s`` (3600): how often the policy sets V (FH §5 set V once a day; an hour follows the
  one-hour billing granularity of the clouds they priced, FH §2.3).  The budget is checked every cycle.
- ``policy``: ``state-aware`` (our cap, :func:`rlsched.core.leasing.state_aware_cap`, the same code the
  simulator's ``fh-ours`` runs) or ``fixed`` (V = ``max_nodes``: Slurm's plain power saving, bounded by
  the budget).
- ``exchange_rate`` (κ, state-aware only): seconds of job wait one cloud core-second is worth.  In the
  simulator κ = twt_ref/c_ref comes from the reference runs (FH §2.4); live it is the site's own price of
  waiting, e.g. measured with ``rlsched sim experiment fh-ours-file`` on the site's history.
- ``threshold`` (θ = 1) and ``arrival_window_s`` (86 400): :class:`rlsched.core.leasing.StateAwareParams`.
- ``budget_node_hours_per_day`` and/or ``budget_cost_per_day`` (money; with ``price_per_node_hour``):
  the daily budget; the tighter of the two binds.  One must be set when leasing is enabled — an
  unbounded bill is never the default.  Days are UTC calendar days.
- ``price_per_node_hour`` (0): the price of one leased node for one hour, for the cost metrics.
- ``min_lease_s`` (600): the least a new lease is charged for (boot plus Slurm's ``SuspendTime``);
  a new node is allowed only while the day's budget still covers it.
- ``provider_command``: the site's tooling as an argv list (``["/usr/local/bin/cloudctl"]``); called as
  ``CMD list`` by the reconcile loop and ``CMD suspend NODE…`` to end orphans (the Slurm hooks in
  ``plugins/slurm/`` call ``CMD resume|suspend``).  Optional: without it the reconcile loop cannot see
  orphans and only uses Slurm's view.
- ``provider_timeout_s`` (60): per provider call.
- ``power_up_timeout_s`` (600): a node powering up longer than this is powered down and counted as a
  failed launch (keep it below Slurm's ``ResumeTimeout`` so rlsched acts first).
- ``orphan_grace_s`` (60): an instance must be seen running while Slurm has its node powered down for
  this long before it is ended (a resume may be racing the look).
- ``reconcile_every_s`` (60): how often the reconcile loop runs.
- ``max_launch_failures`` (3) and ``launch_backoff_s`` (300): after the k-th consecutive failed launch of
  a node it is kept out of the cap for ``launch_backoff_s``·2^(k−1); after ``max_launch_failures`` it is
  drained (``Reason=rlsched_launch_failed``) until an admin resumes it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rlsched.backends.common.hostlist import expand_hostlist
from rlsched.core.policies import LIVE_LEASE_POLICIES
from rlsched.errors import RlschedError

POLICIES = LIVE_LEASE_POLICIES  # the registry's names (rlsched.core.policies)

_SPEC: dict[str, type | tuple[type, ...]] = {
    "enabled": bool, "nodes": str, "max_nodes": int, "period_s": (int, float), "policy": str,
    "exchange_rate": (int, float), "threshold": (int, float), "arrival_window_s": (int, float),
    "budget_node_hours_per_day": (int, float), "budget_cost_per_day": (int, float),
    "price_per_node_hour": (int, float), "min_lease_s": (int, float), "provider_command": list,
    "provider_timeout_s": (int, float), "power_up_timeout_s": (int, float), "orphan_grace_s": (int, float),
    "reconcile_every_s": (int, float), "max_launch_failures": int, "launch_backoff_s": (int, float),
    "hook_log": str,
}


class LeasingConfigError(RlschedError, ValueError):
    """A bad ``[leasing]`` key: the message is one line naming the file and the key."""


@dataclass(frozen=True)
class LeasingConfig:
    """The checked ``[leasing]`` table (see the module docstring for every key)."""

    enabled: bool = False
    nodes: tuple[str, ...] = ()
    max_nodes: int = 0
    period_s: float = 3600.0
    policy: str = "state-aware"
    exchange_rate: float = 0.0
    threshold: float = 1.0
    arrival_window_s: float = 86_400.0
    budget_node_hours_per_day: float | None = None
    budget_cost_per_day: float | None = None
    price_per_node_hour: float = 0.0
    min_lease_s: float = 600.0
    provider_command: tuple[str, ...] = ()
    provider_timeout_s: float = 60.0
    power_up_timeout_s: float = 600.0
    orphan_grace_s: float = 60.0
    reconcile_every_s: float = 60.0
    max_launch_failures: int = 3
    launch_backoff_s: float = 300.0
    hook_log: str | None = None

    @property
    def budget_node_seconds_per_day(self) -> float:
        """The binding daily budget in node-seconds (the tighter of node-hours and money ÷ price)."""
        limits = []
        if self.budget_node_hours_per_day is not None:
            limits.append(self.budget_node_hours_per_day * 3600.0)
        if self.budget_cost_per_day is not None and self.price_per_node_hour > 0:
            limits.append(self.budget_cost_per_day / self.price_per_node_hour * 3600.0)
        return min(limits) if limits else float("inf")

    @classmethod
    def from_table(cls, table: Mapping[str, Any], source: str = "config") -> LeasingConfig:
        """Check ``[leasing]``; every problem is a :class:`LeasingConfigError` naming ``source`` and the key."""
        def err(key: str, message: str) -> LeasingConfigError:
            return LeasingConfigError(f"{source}: key 'leasing.{key}': {message}")

        kw: dict[str, Any] = {}
        for key, value in table.items():
            if key not in _SPEC:
                raise err(key, f"unknown key (known: {', '.join(sorted(_SPEC))})")
            expected = _SPEC[key]
            if isinstance(value, bool) and expected is not bool:
                raise err(key, "expected a number or string, got a boolean")
            if not isinstance(value, expected):
                want = "a number" if isinstance(expected, tuple) else expected.__name__
                raise err(key, f"expected {want}, got {type(value).__name__}")
            kw[key] = float(value) if isinstance(expected, tuple) and isinstance(value, int | float) else value
        if "nodes" in kw:
            try:
                kw["nodes"] = tuple(expand_hostlist(kw["nodes"]))
            except ValueError as exc:
                raise err("nodes", str(exc)) from None
        if "provider_command" in kw:
            argv = kw["provider_command"]
            if not argv or not all(isinstance(a, str) and a for a in argv):
                raise err("provider_command", "expected a non-empty list of strings (an argv, not a shell line)")
            kw["provider_command"] = tuple(argv)
        if kw.get("policy", cls.policy) not in POLICIES:
            raise err("policy", f"expected one of {', '.join(POLICIES)}, got {kw['policy']!r}")
        for key in ("period_s", "provider_timeout_s", "power_up_timeout_s", "reconcile_every_s",
                    "arrival_window_s", "threshold"):
            if key in kw and not kw[key] > 0:
                raise err(key, f"must be > 0, got {kw[key]:g}")
        for key in ("exchange_rate", "budget_node_hours_per_day", "budget_cost_per_day", "price_per_node_hour",
                    "min_lease_s", "orphan_grace_s", "launch_backoff_s"):
            if key in kw and kw[key] < 0:
                raise err(key, f"must be >= 0, got {kw[key]:g}")
        if kw.get("max_launch_failures", 1) < 1:
            raise err("max_launch_failures", "must be >= 1")
        nodes = kw.get("nodes", ())
        if "max_nodes" in kw:
            if kw["max_nodes"] < 0:
                raise err("max_nodes", f"must be >= 0, got {kw['max_nodes']}")
            if nodes and kw["max_nodes"] > len(nodes):
                raise err("max_nodes", f"{kw['max_nodes']} exceeds the {len(nodes)} nodes of leasing.nodes")
        else:
            kw["max_nodes"] = len(nodes)
        config = cls(**kw)
        if config.enabled:
            if not nodes:
                raise err("nodes", "leasing is enabled but no cloud nodes are named (e.g. \"cloud[1-4]\")")
            if config.budget_node_hours_per_day is None and config.budget_cost_per_day is None:
                raise err("budget_node_hours_per_day", "leasing is enabled without a daily budget: set "
                                                       "budget_node_hours_per_day or budget_cost_per_day")
            if config.budget_cost_per_day is not None and config.price_per_node_hour <= 0:
                raise err("price_per_node_hour", "budget_cost_per_day needs a positive price_per_node_hour")
            if config.policy == "state-aware" and "exchange_rate" not in kw:
                raise err("exchange_rate", "the state-aware policy needs κ, the seconds of wait one cloud "
                                           "core-second is worth (see docs/leasing-live.md)")
        return config
