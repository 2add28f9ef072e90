"""The live seam: what the daemon and the leasing controller need from a batch system, and nothing else.

:class:`~rlsched.core.view.Backend` (the view and the five levers) is what a policy acts through, in the
simulator and live.  A *live* backend also has to answer the daemon around the policy — undo everything it
changed on stop, count its failures and actions for the metrics, give the labels of its queue, release the
jobs waiting in its gate, tell the gate watchdog where to look — which is :class:`LiveBackend`.  A backend
whose cluster has leasable cloud nodes also offers :class:`NodeControl` to the leasing controller.

The Slurm backend (:mod:`rlsched.backends.slurm`) implements both; the simulator
(:class:`rlsched.sim.engine.Simulator`) implements :class:`LiveBackend`.  A new batch system (PBS, …)
implements them, registers its kind in :mod:`rlsched.backends` and runs
:func:`rlsched.core.checker.check_live_backend` against a real cluster; the daemon needs no change.

Pure typing: no I/O here.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from rlsched.core.view import Backend

#: One row of ``rlsched_queue_jobs``: (partition or queue, account, class name, state), state being
#: ``pending``, ``held`` or ``running``.
QueueKey = tuple[str, str, str, str]
#: The kinds of :meth:`LiveBackend.changes`: what a backend may have changed and must undo.
CHANGE_KINDS = ("boosted", "held", "drained")


@runtime_checkable
class LiveBackend(Backend, Protocol):
    """A batch system the daemon can run on: :class:`Backend` plus undo, counters and labels.

    Contract (checked by :func:`rlsched.core.checker.check_live_backend`):

    - a job named in ``boost``/``hold``/``release`` that has finished or never existed is not an error:
      the call returns and ``errors["vanished_job"]`` grows;
    - other failures may raise (the daemon logs and counts them and goes on);
    - ``undo`` restores everything ``boost``/``hold``/``set_lease_cap`` (and, for :class:`NodeControl`,
      drains) changed, so that afterwards :meth:`changes` is all zero.
    """

    @property
    def errors(self) -> Counter[str]:
        """Failures by kind, monotonic (``timeout``, ``nonzero_exit``, ``parse_error``, ``missing_command``,
        ``os_error``, ``vanished_job``: :data:`rlsched.exporter.ERROR_KINDS`)."""
        ...

    @property
    def actions(self) -> Counter[str]:
        """Changes made, by kind, monotonic (``nice_set``, ``nice_restored``, ``hold``, ``release``,
        ``node_drain``, ``node_resume``, ``node_power_down``: :data:`rlsched.exporter.ACTION_KINDS`)."""
        ...

    @property
    def boost_limit(self) -> int | None:
        """How many top-ranked jobs one ``boost`` changes (None: every one)."""
        ...

    def undo(self) -> int:
        """Undo every change this backend made (boosts, its holds, its drains); returns how many.  What
        fails stays recorded (and raises) so that a later call can finish."""
        ...

    def changes(self) -> dict[str, int]:
        """What this backend has changed and not undone, by kind (:data:`CHANGE_KINDS`)."""
        ...

    def release_gated(self) -> int:
        """Release every held pending job of the gate scope (whoever held it: there a hold means "waiting
        for rlsched"); returns how many.  Called on stop in gate mode."""
        ...

    def queue_counts(self) -> dict[QueueKey, int]:
        """The jobs of the last view (pending, held, running, in scope) by :data:`QueueKey`."""
        ...

    def job_labels(self) -> dict[int, tuple[str, str]]:
        """(partition or queue, account) of each job of the last view, for ``rlsched status``."""
        ...

    def heartbeat_fields(self) -> dict[str, object]:
        """What the gate watchdog needs to release the gated jobs by itself (JSON values: for Slurm
        ``partitions``, ``slurm_conf``, ``bin_dir``); merged into the daemon's heartbeat file."""
        ...

    def describe(self) -> str:
        """A short phrase for log lines: the batch system and where its undo record is kept."""
        ...


@runtime_checkable
class LiveBackendConfig(Protocol):
    """The part of a backend's configuration the daemon reads (the rest is the backend's own)."""

    @property
    def kind(self) -> str:
        """The registry name (``[backend] kind``)."""
        ...

    @property
    def vos(self) -> tuple[str, ...]:
        """The fixed VO list (empty: VOs appear as accounts are seen)."""
        ...

    @property
    def vo_shares(self) -> tuple[float, ...] | None: ...

    @property
    def state_file(self) -> str | None:
        """Where the undo record is kept (None: the factory puts it in the daemon's state dir)."""
        ...

    def gate_problem(self) -> tuple[str, str] | None:
        """Why gate mode cannot run with this configuration, as (key, message); None when it can."""
        ...


@dataclass(frozen=True)
class NodeState:
    """One node as the leasing controller sees it, whatever the batch system (FH: the leased cloud nodes).

    ``leased``: billed by the provider — anything but powered down (powering up and down included).
    ``up``: in service (not powering up or down, not powered down, not down, responding).
    ``drained``: no new job may start there.  ``reason``: the batch system's note on the node (rlsched's
    own start with ``rlsched_``).
    """

    name: str
    cloud: bool
    leased: bool
    up: bool
    powering_up: bool
    powering_down: bool
    powered_down: bool
    down: bool
    busy: bool
    drained: bool
    reason: str = ""


@runtime_checkable
class NodeControl(Protocol):
    """What the leasing controller (:mod:`rlsched.leasing.service`) does to nodes.  Drains and resumes are
    recorded by the backend and undone by :meth:`LiveBackend.undo`."""

    def nodes(self) -> list[NodeState]:
        """Every node of the last view (no command run)."""
        ...

    def drained_nodes(self) -> frozenset[str]:
        """The nodes this backend drained and has not resumed (its undo record)."""
        ...

    def forget_drained(self, names: Sequence[str]) -> None:
        """Someone else resumed these nodes: drop them from the undo record (nothing is run)."""
        ...

    def enforce_lease_cap(
        self, n: int, managed: Sequence[str] | None = None, excluded: Mapping[str, str] | None = None
    ) -> list[str]:
        """Keep at most ``n`` of the ``managed`` cloud nodes usable: drain the others (``excluded``: node →
        drain reason, out of the cap whatever ``n``), resume the ones it drained that are allowed again;
        returns the allowed nodes, busy ones first."""
        ...

    def drain_nodes(self, names: Sequence[str], reason: str) -> None:
        """No new job on these nodes (running jobs finish); recorded for undo."""
        ...

    def resume_nodes(self, names: Sequence[str]) -> None:
        """Undo a drain of these nodes."""
        ...

    def power_down_nodes(self, names: Sequence[str], reason: str) -> None:
        """Power these nodes down now (their jobs are requeued), ending their lease."""
        ...
