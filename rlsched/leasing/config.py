"""``[leasing]``: the live leasing controller's configuration (docs/leasing-live.md, issue 6).

Each key (type, default, range) is declared in :data:`rlsched.config_schema.LEASING` and read by the schema's one
reader, so a bad one is a one-line error naming the file and the key, like the rest of the daemon's TOML, in the
daemon and in the Slurm hooks alike; :meth:`LeasingConfig.from_table` adds the rules between keys (the nodes'
hostlist, ``max_nodes`` within it, what enabled leasing needs).  What the keys mean:

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
from rlsched.config_schema import LEASING
from rlsched.core.policies import LIVE_LEASE_POLICIES
from rlsched.errors import RlschedError

POLICIES = LIVE_LEASE_POLICIES  # the registry's names (rlsched.core.policies; the schema's choices are these)


class LeasingConfigError(RlschedError, ValueError):
    """A bad ``[leasing]`` key: the message is one line naming the file and the key."""


@dataclass(frozen=True)
class LeasingConfig:
    """The checked ``[leasing]`` table (keys, types, defaults and ranges: :data:`rlsched.config_schema.LEASING`;
    the module docstring says what each key means)."""

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
        """Check ``[leasing]``: each key by the schema, then the rules between keys; every problem is a
        one-line :class:`LeasingConfigError` naming ``source`` and the key."""
        kw = LEASING.read(table, source, error=LeasingConfigError)
        if "nodes" in kw:
            try:
                kw["nodes"] = tuple(expand_hostlist(kw["nodes"]))
            except ValueError as exc:
                raise _error(source, "nodes", str(exc)) from None
        nodes = kw.get("nodes", ())
        if "max_nodes" not in kw:
            kw["max_nodes"] = len(nodes)
        elif nodes and kw["max_nodes"] > len(nodes):
            raise _error(source, "max_nodes", f"{kw['max_nodes']} exceeds the {len(nodes)} nodes of leasing.nodes")
        config = cls(**kw)
        if config.enabled:
            _check_enabled(config, "exchange_rate" in kw, source)
        return config


def _error(source: str, key: str, message: str) -> LeasingConfigError:
    return LeasingConfigError(f"{source}: key 'leasing.{key}': {message}")


def _check_enabled(config: LeasingConfig, exchange_rate_set: bool, source: str) -> None:
    """What enabled leasing needs: nodes, a daily budget (never unbounded by default), its price, and κ."""
    if not config.nodes:
        raise _error(source, "nodes", 'leasing is enabled but no cloud nodes are named (e.g. "cloud[1-4]")')
    if config.budget_node_hours_per_day is None and config.budget_cost_per_day is None:
        raise _error(
            source,
            "budget_node_hours_per_day",
            "leasing is enabled without a daily budget: set budget_node_hours_per_day or budget_cost_per_day",
        )
    if config.budget_cost_per_day is not None and config.price_per_node_hour <= 0:
        raise _error(source, "price_per_node_hour", "budget_cost_per_day needs a positive price_per_node_hour")
    if config.policy == "state-aware" and not exchange_rate_set:
        raise _error(
            source,
            "exchange_rate",
            "the state-aware policy needs κ, the seconds of wait one cloud "
            "core-second is worth (see docs/leasing-live.md)",
        )
