"""The live leasing controller: one :meth:`LeasingService.cycle` per daemon cycle (issue 6).

Each cycle: charge the ledger for the cloud nodes leased now → (every ``reconcile_every_s``) reconcile
the batch system's view with the provider's → decide V (policy per period, clamps per cycle) → enforce it (drain
above, resume under) and write the permit file the ResumeProgram hook checks → checkpoint.  The cap is
enforced twice, by Slurm (drained nodes are never resumed) and by the hook (nodes not in the permit are
refused), so a crashed or hung daemon cannot let more than V nodes be leased: a stale permit or heartbeat
makes the hook refuse every lease.

Shadow mode computes and exports V and the reconcile plan, and changes no node: no drain, no power-down,
no instance ended, and a permit that does not enforce.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlsched.backends.common.runner import BackendError
from rlsched.core.atomic import PUBLIC, write_json_atomic
from rlsched.core.live import NodeControl, NodeState
from rlsched.core.view import ClusterView
from rlsched.leasing.budget import LeaseLedger
from rlsched.leasing.config import LeasingConfig
from rlsched.leasing.policy import CapDecision, CapPolicy
from rlsched.leasing.provider import ProviderClient
from rlsched.leasing.reconcile import CloudNodeStatus, ReconcilePlan, Reconciler

log = logging.getLogger(__name__)

STATE_VERSION = 1
#: The reason plugins/slurm/rlsched-resume marks a refused node DOWN with (its REFUSED_REASON).
REFUSED_REASON = "rlsched_resume_refused"
#: The drain reason of the cloud nodes on a clean stop.
STOPPED_REASON = "rlsched_stopped"


def node_status(node: NodeState) -> CloudNodeStatus:
    """What the reconciler reads of a node."""
    return CloudNodeStatus(
        name=node.name,
        powering_up=node.powering_up,
        powered_down=node.powered_down,
        powering_down=node.powering_down,
        up=node.up,
        down=node.down,
    )


@dataclass
class LeaseStatus:
    """The controller's state after a cycle, for the exporter and ``rlsched status``."""

    decision: CapDecision | None = None
    enforcing: bool = False
    leased: int = 0
    busy: int = 0
    powering_up: int = 0
    excluded: int = 0
    allowed: list[str] = field(default_factory=list)
    budget_exhausted: bool = False


class LeasingService:
    """Owns the ledger, the policy and the reconciler; acts through ``nodes`` (the batch system's
    :class:`~rlsched.core.live.NodeControl`, e.g. the Slurm backend) and the provider."""

    def __init__(
        self,
        config: LeasingConfig,
        nodes: NodeControl,
        state_dir: Path,
        enforce: bool,
        provider: ProviderClient | None = None,
    ) -> None:
        self.config = config
        self.nodes = nodes
        self.enforce = enforce
        self.state_file = Path(state_dir) / "leasing.json"
        self.permit_file = Path(state_dir) / "lease-permit.json"
        self.ledger = LeaseLedger(config.budget_node_seconds_per_day, config.price_per_node_hour)
        self.policy = CapPolicy(config)
        self.reconciler = Reconciler(config)
        self.provider = (
            provider
            if provider is not None or not config.provider_command
            else ProviderClient(config.provider_command, config.provider_timeout_s)
        )
        self.reconcile_events: Counter[str] = Counter()
        self.last_reconcile_s: float | None = None
        self.status = LeaseStatus()
        self._load()

    # -------------------------------------------------------------------------------------- state
    def _load(self) -> None:
        if not self.state_file.exists():
            return
        source = str(self.state_file)
        try:
            data = json.loads(self.state_file.read_text())
            self.ledger.restore(data.get("ledger", {}), source)
            self.reconciler.restore(data.get("reconcile", {}), source)
            self.reconcile_events = Counter({str(k): int(v) for k, v in data.get("reconcile_events", {}).items()})
            cap = data.get("policy_cap")
            self.policy.policy_cap = None if cap is None else int(cap)
            at = data.get("decided_at_s")
            self.policy.decided_at_s = None if at is None else float(at)
        except (OSError, ValueError, TypeError, AttributeError) as exc:
            raise ValueError(f"{source}: unreadable leasing state: {exc}") from None

    def save(self) -> None:
        """Atomic: the ledger (money) and the failure counts survive a crash."""
        write_json_atomic(
            self.state_file,
            {
                "version": STATE_VERSION,
                "ledger": self.ledger.to_dict(),
                "reconcile": self.reconciler.to_dict(),
                "reconcile_events": dict(self.reconcile_events),
                "policy_cap": self.policy.policy_cap,
                "decided_at_s": self.policy.decided_at_s,
            },
        )

    def write_permit(self, now_s: float, allowed: list[str], cap: int, reason: str) -> None:
        # Public: the hooks read it as SlurmUser, which need not be root.
        write_json_atomic(
            self.permit_file,
            {
                "version": 1,
                "time": now_s,
                "enforce": self.enforce,
                "allowed": sorted(allowed),
                "cap": cap,
                "reason": reason,
            },
            mode=PUBLIC,
        )

    # -------------------------------------------------------------------------------------- cycle
    def managed_nodes(self) -> list[NodeState]:
        names = set(self.config.nodes)
        return [n for n in self.nodes.nodes() if n.name in names and n.cloud]

    def cycle(self, view: ClusterView) -> LeaseStatus:
        now = view.time_s
        nodes = self.managed_nodes()
        leased = [n for n in nodes if n.leased]
        self.ledger.charge(now, len(leased))
        self._notice_admin_resumes(nodes)
        if self.last_reconcile_s is None or now - self.last_reconcile_s >= self.config.reconcile_every_s:
            self.last_reconcile_s = now
            self._reconcile(nodes, now)
        excluded = self.reconciler.excluded(now)
        usable = sum(1 for n in nodes if n.name not in excluded)
        decision = self.policy.decide(view, self.ledger, usable)
        was_exhausted = self.status.budget_exhausted
        exhausted = decision.budget_cap == 0
        allowed: list[str] = []
        if self.enforce:
            # A node outside the cap that is still leased (a stuck one powering down, one an admin drained
            # while it runs jobs) is billed like the others: it holds a place under the cap until it is
            # down, so the replacement of a stuck node never brings the leases above the cap meanwhile.
            ours = self.nodes.drained_nodes()
            held = sum(1 for n in nodes if n.leased and (n.name in excluded or (n.drained and n.name not in ours)))
            allowed = self.nodes.enforce_lease_cap(max(0, decision.cap - held), list(self.config.nodes), excluded)
            self._resume_refused(nodes, allowed)
        self.write_permit(now, allowed, decision.cap, decision.reason)
        if exhausted and not was_exhausted:
            log.warning(
                "leasing: budget exhausted: %.3f of %.3f node-hours used today, too little left for one "
                "more %g s lease: no new lease and no new job on a leased node until 00:00 UTC; running "
                "jobs continue",
                self.ledger.used_today_s / 3600,
                self.config.budget_node_seconds_per_day / 3600,
                self.config.min_lease_s,
            )
        elif was_exhausted and not exhausted:
            log.info(
                "leasing: budget available again (%.2f node-hours left today)", self.ledger.remaining_today_s / 3600
            )
        previous = self.status.decision
        if previous is None or previous.cap != decision.cap:
            log.info(
                "leasing: cap V = %d (%s; policy %d, hard %d, budget %d)%s",
                decision.cap,
                decision.reason,
                decision.policy_cap,
                decision.hard_cap,
                decision.budget_cap,
                "" if self.enforce else " [shadow]",
            )
        self.status = LeaseStatus(
            decision=decision,
            enforcing=self.enforce,
            leased=len(leased),
            busy=sum(1 for n in nodes if n.busy),
            powering_up=sum(1 for n in nodes if n.powering_up),
            excluded=len(excluded),
            allowed=allowed,
            budget_exhausted=exhausted,
        )
        self.save()
        return self.status

    def _resume_refused(self, nodes: list[NodeState], allowed: list[str]) -> None:
        """Nodes the resume hook refused (marked DOWN with :data:`REFUSED_REASON` while the daemon was not
        working, or in the race before a permit) go back to service once the permit allows them."""
        refused = [n for n in nodes if n.down and n.reason.startswith(REFUSED_REASON) and n.name in allowed]
        # Slurm 22.05 keeps a refused node powering up (DOWN#) until ResumeTimeout, and RESUME would leave it
        # waiting for a boot that never comes: powered down first (it stays DOWN, DOWN~), resumed next cycle.
        stuck = [n.name for n in refused if n.powering_up]
        ready = [n.name for n in refused if n.powered_down and not n.powering_down and not n.powering_up]
        if stuck:
            self.nodes.power_down_nodes(stuck, f"{REFUSED_REASON}: powered down before it goes back to service")
        if ready:
            log.info("leasing: %s refused by the resume hook before, allowed now: back in service", ",".join(ready))
            self.nodes.resume_nodes(ready)

    def stop(self) -> None:
        """On a clean stop (gate or boost mode): drain the managed nodes.  The resume hook refuses every lease
        once the heartbeat says stopped, so an undrained powered-down node would only be picked by Slurm and
        refused; drained, no job waits for it.  Busy nodes finish their jobs.  The drains are recorded: the
        next start resumes those its cap allows (``rlsched daemon --undo`` resumes them all)."""
        if not self.enforce:
            return
        # The last poll still shows the cap's drains that the undo just lifted: ours (reason rlsched_…) are
        # drained again; another's drain is left alone.
        names = [n.name for n in self.managed_nodes() if not n.drained or n.reason.startswith("rlsched_")]
        if names:
            self.nodes.drain_nodes(names, STOPPED_REASON)
            log.info(
                "stop: drained the cloud nodes %s (%s): no lease while rlsched is stopped",
                ",".join(names),
                STOPPED_REASON,
            )

    def _notice_admin_resumes(self, nodes: list[NodeState]) -> None:
        """A node rlsched drained that is no longer drained, with rlsched's reason gone, was resumed by
        someone else (``State=RESUME`` clears the reason): forget its failures.  A drain that Slurm dropped
        around a power-down keeps rlsched's reason and is set again by the enforcement instead."""
        drained = self.nodes.drained_nodes()
        undrained = [
            n.name for n in nodes if n.name in drained and not n.drained and not n.reason.startswith("rlsched_")
        ]
        if undrained:
            log.info("leasing: %s resumed by someone else; its launch failures are forgotten", ",".join(undrained))
            self.nodes.forget_drained(undrained)
            self.reconciler.admin_resumed(undrained)

    def _reconcile(self, nodes: list[NodeState], now: float) -> None:
        instances: list[str] | None = None
        if self.provider is not None:
            try:
                instances = self.provider.list_instances()
            except BackendError as exc:
                log.warning("leasing: cannot list the provider's instances: %s (orphans not checked)", exc)
        plan = self.reconciler.plan([node_status(n) for n in nodes], instances, now)
        if plan.empty:
            return
        for message in plan.messages:
            log.warning("leasing reconcile%s: %s", "" if self.enforce else " [shadow, not acted on]", message)
        if not self.enforce:
            return
        self._act(plan)

    def _act(self, plan: ReconcilePlan) -> None:
        try:
            self.nodes.power_down_nodes(plan.power_down, "rlsched_stuck_power_up")
        finally:
            self.reconcile_events.update(plan.events)
        if plan.terminate and self.provider is not None:
            self.provider.suspend(plan.terminate)

    def snapshot(self) -> dict[str, Any]:
        """What the exporter serves (see :mod:`rlsched.exporter`)."""
        d = self.status.decision
        return {
            "cap": None if d is None else d.cap,
            "policy_cap": None if d is None else d.policy_cap,
            "hard_cap": None if d is None else d.hard_cap,
            "budget_cap": None if d is None else d.budget_cap,
            "leased": self.status.leased,
            "busy": self.status.busy,
            "powering_up": self.status.powering_up,
            "excluded": self.status.excluded,
            "node_seconds_total": self.ledger.total_node_s,
            "cost_total": self.ledger.total_cost,
            "used_today_s": self.ledger.used_today_s,
            "budget_left_s": self.ledger.remaining_today_s,
            "budget_left_node_hours": self.ledger.remaining_today_s / 3600.0,
            "budget_exhausted": self.status.budget_exhausted,
            "enforcing": self.enforce,
            "reconcile": dict(self.reconcile_events),
            "provider_errors": dict(self.provider.errors) if self.provider is not None else {},
        }
