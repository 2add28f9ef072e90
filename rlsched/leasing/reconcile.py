"""The reconcile loop's decisions, pure: compare Slurm's view of the cloud nodes with the provider's.

"Decide" is separated from "reconcile" as in AWS ParallelCluster's ``slurm_plugin`` (clustermgtd): the
Slurm hooks only start and stop instances; this module looks at both sides every
``reconcile_every_s`` and says what to fix (docs/leasing-live.md):

- **stuck power-up**: a node powering up for longer than ``power_up_timeout_s`` is powered down (Slurm
  requeues its jobs and calls the SuspendProgram, which ends the instance) and counts as a failed launch;
- **failed launch**: a node that stopped powering up without ever coming up (Slurm's own
  ``ResumeTimeout`` set it down, or it was powered down) counts as one too;
- **backoff**: after the k-th consecutive failed launch a node is kept out of the cap for
  ``launch_backoff_s``·2^(k−1); after ``max_launch_failures`` it is given up (drained until an admin
  resumes it) — repeated failures usually mean a quota, an image or a network problem;
- **orphan**: an instance the provider reports while Slurm has its node powered down (for longer than
  ``orphan_grace_s``, since a resume may be racing the look) is ended through the provider.

A node that comes up (powered, answering, not powering up) clears its failure count.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rlsched.leasing.config import LeasingConfig

RECONCILE_KINDS = ("stuck_power_up", "failed_launch", "launch_backoff", "launch_given_up", "orphan")


@dataclass(frozen=True)
class CloudNodeStatus:
    """What the reconcile loop needs of one cloud node in Slurm (from ``sinfo --json``)."""

    name: str
    powering_up: bool
    powered_down: bool
    powering_down: bool
    up: bool  # powered, answering, not powering up: a usable lease
    down: bool  # DOWN / FAIL: Slurm gave up on it


@dataclass
class ReconcilePlan:
    """What to fix now.  ``events``: counts by kind (see :data:`RECONCILE_KINDS`) for the metrics."""

    power_down: list[str] = field(default_factory=list)
    terminate: list[str] = field(default_factory=list)
    give_up: list[str] = field(default_factory=list)
    events: dict[str, int] = field(default_factory=dict)
    messages: list[str] = field(default_factory=list)

    def count(self, kind: str, message: str) -> None:
        self.events[kind] = self.events.get(kind, 0) + 1
        self.messages.append(message)

    @property
    def empty(self) -> bool:
        return not (self.power_down or self.terminate or self.give_up or self.events)


@dataclass
class Reconciler:
    """Per-node memory of the reconcile loop (checkpointed by the daemon) and :meth:`plan`."""

    config: LeasingConfig
    powering_up_since: dict[str, float] = field(default_factory=dict)
    orphan_since: dict[str, float] = field(default_factory=dict)
    failures: dict[str, int] = field(default_factory=dict)
    backoff_until: dict[str, float] = field(default_factory=dict)
    given_up: set[str] = field(default_factory=set)

    def excluded(self, now_s: float) -> dict[str, str]:
        """Nodes kept out of the cap now, with the drain reason to show in Slurm."""
        out = {name: "rlsched_launch_failed" for name in self.given_up}
        for name, until in self.backoff_until.items():
            if until > now_s and name not in out:
                out[name] = "rlsched_launch_backoff"
        return out

    def _failed(self, plan: ReconcilePlan, name: str, now_s: float, why: str) -> None:
        k = self.failures.get(name, 0) + 1
        self.failures[name] = k
        if k >= self.config.max_launch_failures:
            self.given_up.add(name)
            self.backoff_until.pop(name, None)
            plan.give_up.append(name)
            plan.count(
                "launch_given_up",
                f"{name}: {why}; launch failed {k} times in a row, giving up on it "
                f"(drained as rlsched_launch_failed until an admin resumes it)",
            )
        else:
            delay = self.config.launch_backoff_s * 2.0 ** (k - 1)
            self.backoff_until[name] = now_s + delay
            plan.count(
                "launch_backoff",
                f"{name}: {why}; failed launch {k} of {self.config.max_launch_failures}, "
                f"kept out of the cap for {delay:g} s",
            )

    def plan(self, nodes: Iterable[CloudNodeStatus], instances: Iterable[str] | None, now_s: float) -> ReconcilePlan:
        """Compare the two views; ``instances`` is None when the provider could not be asked."""
        plan = ReconcilePlan()
        by_name = {n.name: n for n in nodes}
        for name, node in by_name.items():
            if node.powering_up:
                since = self.powering_up_since.setdefault(name, now_s)
                if now_s - since > self.config.power_up_timeout_s:
                    plan.power_down.append(name)
                    plan.count(
                        "stuck_power_up",
                        f"{name}: powering up for {now_s - since:.0f} s "
                        f"(limit {self.config.power_up_timeout_s:g} s): powering it down",
                    )
                    self.powering_up_since.pop(name)
                    self._failed(plan, name, now_s, "stuck powering up")
                continue
            was_powering_up = self.powering_up_since.pop(name, None) is not None
            if node.up:
                if self.failures.pop(name, None):
                    self.backoff_until.pop(name, None)
            elif was_powering_up and (node.down or node.powered_down):
                plan.count("failed_launch", f"{name}: stopped powering up without coming up")
                self._failed(plan, name, now_s, "did not come up")
        for name in [n for n in self.backoff_until if self.backoff_until[n] <= now_s]:
            del self.backoff_until[name]  # served its time: eligible again (failures still counted)
        if instances is not None:
            seen = set()
            for name in instances:
                status = by_name.get(name)
                if status is None or not status.powered_down or status.powering_up or status.powering_down:
                    continue
                seen.add(name)
                since = self.orphan_since.setdefault(name, now_s)
                if now_s - since >= self.config.orphan_grace_s:
                    plan.terminate.append(name)
                    plan.count(
                        "orphan",
                        f"{name}: the provider runs it while Slurm has it powered down "
                        f"(seen for {now_s - since:.0f} s): ending the instance",
                    )
                    self.orphan_since.pop(name)
            for name in set(self.orphan_since) - seen:
                del self.orphan_since[name]
        return plan

    def admin_resumed(self, names: Iterable[str]) -> None:
        """Nodes an admin put back (no longer drained for launch failures): forget their failures."""
        for name in names:
            self.given_up.discard(name)
            self.failures.pop(name, None)
            self.backoff_until.pop(name, None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "powering_up_since": self.powering_up_since,
            "orphan_since": self.orphan_since,
            "failures": self.failures,
            "backoff_until": self.backoff_until,
            "given_up": sorted(self.given_up),
        }

    def restore(self, data: Mapping[str, Any], source: str) -> None:
        try:
            self.powering_up_since = {str(k): float(v) for k, v in dict(data.get("powering_up_since", {})).items()}
            self.orphan_since = {str(k): float(v) for k, v in dict(data.get("orphan_since", {})).items()}
            self.failures = {str(k): int(v) for k, v in dict(data.get("failures", {})).items()}
            self.backoff_until = {str(k): float(v) for k, v in dict(data.get("backoff_until", {})).items()}
            self.given_up = {str(x) for x in data.get("given_up", [])}
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{source}: bad reconcile state: {exc}") from None
