"""The Slurm backend: :class:`rlsched.core.live.LiveBackend` and :class:`rlsched.core.live.NodeControl`
through Slurm's command-line tools.

Reading: one ``squeue --json`` (pending, running and recently finished jobs) and one ``sinfo --json``
(nodes) per view, plus the completion feed (:mod:`.completions`).

Acting (docs/slurm.md):

- **boost** sets admin ``Nice`` offsets.  Nice is reversible (setting it back undoes it exactly) and
  composes with the multifactor priority (priority = factors − nice): the ranked jobs go first, in order,
  while Slurm keeps computing everything else.  An absolute ``scontrol update Priority=`` would also work
  but freezes the job's priority (multifactor stops updating it), so it is not used.  The offsets are a
  ladder of steps, each step larger than any multifactor priority (the sum of the PriorityWeight*
  settings, or the largest priority seen, rounded up to a power of ten): the top job gets the most.
- **hold**/**release**: ``scontrol hold|release``.
- **lease cap**: cloud nodes (``State=CLOUD``) above the cap are drained (``Reason=rlsched_lease_cap``)
  so that Slurm's power saving will not resume them, and resumed when the cap rises again.

Everything rlsched changes is recorded — the original Nice of each boosted job, the jobs it held, the
cloud nodes it drained — in memory and, when ``state_file`` is set, on disk (written atomically), so that
:meth:`SlurmBackend.undo` can restore it on stop, also after a restart.

A job that disappears between a view and an action (finished, cancelled) is logged and counted as
``vanished_job``, never raised.  Other failures are retried with backoff and then raised as
:class:`~rlsched.backends.slurm.errors.SlurmError`.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import msgspec
import numpy as np

from rlsched.backends.common.base import CLIBackend, record_in_state_dir
from rlsched.backends.common.record import UndoRecord
from rlsched.backends.common.runner import CommandRunner, SubprocessRunner
from rlsched.backends.slurm.completions import CompletionFeed, detect_source
from rlsched.backends.slurm.config import SlurmBackendConfig
from rlsched.backends.slurm.errors import SlurmCommandError, SlurmParseError
from rlsched.backends.slurm.parsers import (
    ACTIVE_STATES,
    HELD_REASONS,
    CompletedJob,
    SlurmJob,
    SlurmNode,
    parse_scontrol_config,
    parse_sinfo_json,
    parse_squeue_json,
)
from rlsched.core.live import CHANGE_KINDS, NodeState, QueueKey
from rlsched.core.view import (
    CloudState,
    ClusterView,
    FinishedJobs,
    JobClass,
    PendingJobs,
    RunningJobs,
    executable_id,
    user_id,
)

log = logging.getLogger(__name__)

#: scontrol's messages for a job that is gone or no longer in a state the action applies to.
_VANISHED_MESSAGES = ("Invalid job id", "already finished", "Job is no longer pending", "completing")
#: Slurm stores nice + NICE_OFFSET (2^31) in 32 bits and takes |nice| <= NICE_OFFSET − 3 (sbatch, scontrol
#: update): 2147483645 is a Nice a user may submit with, and a restore must give it back exactly (issue 24).
_MAX_NICE = 2**31 - 3
_PRIORITY_WEIGHTS = (
    "PriorityWeightAge",
    "PriorityWeightAssoc",
    "PriorityWeightFairShare",
    "PriorityWeightJobSize",
    "PriorityWeightPartition",
    "PriorityWeightQOS",
)
LEASE_DRAIN_REASON = "rlsched_lease_cap"


def _weight_sum(config: dict[str, str]) -> int:
    """The largest multifactor priority the PriorityWeight* settings allow (each factor is in [0, 1])."""
    total = 0
    for key in _PRIORITY_WEIGHTS:
        value = config.get(key, "0")
        total += int(value) if value.isdecimal() else 0
    for item in config.get("PriorityWeightTRES", "").split(","):  # "CPU=1000,Mem=2000"
        _, _, value = item.partition("=")
        total += int(float(value)) if value.replace(".", "", 1).isdecimal() else 0
    return total


class _Memo(dict[Any, Any]):
    """``memo[key]`` is ``function(key)``, computed once per key."""

    def __init__(self, function: Callable[[Any], Any]) -> None:
        super().__init__()
        self.function = function

    def __missing__(self, key: Any) -> Any:
        value = self[key] = self.function(key)
        return value


def slurm_node_state(node: SlurmNode) -> NodeState:
    """A Slurm node's state flags as the leasing controller reads them (FH: what is leased and billed)."""
    flags = node.flags
    powering_up = "POWERING_UP" in flags
    powered_down = "POWERED_DOWN" in flags
    powering_down = "POWERING_DOWN" in flags
    down = node.state in ("down", "error") or "FAIL" in flags
    up = not (powering_up or powered_down or down or powering_down or "NOT_RESPONDING" in flags)
    return NodeState(
        name=node.name,
        cloud=node.cloud,
        leased=not powered_down,
        up=up,
        powering_up=powering_up,
        powering_down=powering_down,
        powered_down=powered_down,
        down=down,
        busy=node.alloc_cpus > 0,
        drained="DRAIN" in flags,
        reason=node.reason,
    )


@dataclass
class SlurmUndoRecord(UndoRecord):
    """What the Slurm backend changed: each boosted job's Nice before rlsched changed it and the Nice it set,
    the cloud nodes it drained (and why), the lease cap it enforces."""

    batch_system: ClassVar[str] = "Slurm"
    original_nice: dict[int, int] = field(default_factory=dict)
    applied_nice: dict[int, int] = field(default_factory=dict)
    drained_by_rlsched: set[str] = field(default_factory=set)
    drain_reasons: dict[str, str] = field(default_factory=dict)
    lease_cap: int | None = None

    def changes(self) -> dict[str, int]:
        counts = (len(self.original_nice), len(self.held_by_rlsched), len(self.drained_by_rlsched))
        return dict(zip(CHANGE_KINDS, counts, strict=True))


class SlurmBackend(CLIBackend[SlurmJob, SlurmUndoRecord]):
    """Slurm through its CLI (see the module docstring).  ``runner`` and ``clock`` are injectable."""

    config: SlurmBackendConfig
    vanished_messages = _VANISHED_MESSAGES
    boost_field = "nice"
    held_fields: ClassVar[dict[str, Any]] = {"reason": "JobHeldAdmin", "priority": 0}
    released_fields: ClassVar[dict[str, Any]] = {"reason": "None"}

    config_class = SlurmBackendConfig
    record_class = SlurmUndoRecord
    command_error = SlurmCommandError
    _jobs: dict[int, SlurmJob]
    _nodes: list[SlurmNode]
    _feed: CompletionFeed | None

    def _runner(self, runner: CommandRunner | None) -> CommandRunner:
        env = {"SLURM_TIME_FORMAT": "%s"}  # epoch seconds from sacct (the JSON has them anyway)
        if self.config.slurm_conf:
            env["SLURM_CONF"] = self.config.slurm_conf
        return runner or SubprocessRunner(env)

    def _setup(self) -> None:
        self._slurm_config: dict[str, str] | None = None
        self._beyond_nice_range: set[int] = set()  # pending jobs no boost can overtake (counted once each)

    # -------------------------------------------------------------------------------------- commands
    def slurm_config(self) -> dict[str, str]:
        """``scontrol show config``, read once (retried at the next call if it failed)."""
        if self._slurm_config is None:
            self._slurm_config = self.executor.run(
                [self._cmd("scontrol"), "show", "config"], lambda r: parse_scontrol_config(r.stdout)
            )
        return self._slurm_config

    def _replace_job(self, job: SlurmJob, changes: dict[str, Any]) -> SlurmJob:
        return msgspec.structs.replace(job, **changes)

    # -------------------------------------------------------------------------------------- view
    def _in_scope(self, partitions: str | Iterable[str]) -> bool:
        if not self.config.partitions:
            return True
        names = partitions.split(",") if isinstance(partitions, str) else partitions
        return not self.config.partitions.isdisjoint(names)

    def poll(self) -> tuple[list[SlurmJob], list[SlurmNode]]:
        """One ``squeue --json`` and one ``sinfo --json`` (parsed, retried)."""
        jobs = self.executor.run(
            [self._cmd("squeue"), "--json"], lambda r: parse_squeue_json(r.stdout_bytes, self._skip_job)
        )
        nodes = self.executor.run([self._cmd("sinfo"), "--json"], lambda r: parse_sinfo_json(r.stdout_bytes))
        self._jobs = {job.job_id: job for job in jobs}
        self._polled = jobs
        self._nodes = nodes
        return jobs, nodes

    def _skip_job(self, exc: SlurmParseError) -> None:
        """One job of ``squeue --json`` is unreadable or absurd: the view goes on without it, counted."""
        self.executor.count("job_skipped")
        # The job is in every view while it is queued: logged once, then at a bounded rate.
        self.executor.faults.failed(f"skip {exc}", logging.WARNING, "view: skipping one job: %s", exc)

    def _completion_feed(self) -> CompletionFeed:
        if self._feed is None:
            source = self.config.completion_source
            jobcomp_path = self.config.jobcomp_path
            if source == "auto" or (source == "jobcomp" and not jobcomp_path):
                config = self.slurm_config()
                jobcomp_path = jobcomp_path or config.get("JobCompLoc")
                if source == "auto":
                    source = detect_source(config, jobcomp_path)
            log.info("completion feed: %s", source if source != "jobcomp" else f"jobcomp ({jobcomp_path})")
            self._feed = CompletionFeed(
                source,
                self.executor,
                self._cmd("sacct"),
                jobcomp_path,
                self.clock,
                self.record.completion_feed,
                wait_for_partition=bool(self.config.partitions),
            )
        return self._feed

    def view(self) -> ClusterView:
        # A job pending in the view had not started when the reads began; the view's time is when they ended.
        polled = self.clock()
        jobs, nodes = self.poll()
        now = self.clock()
        feed = self._completion_feed()
        completed = feed.poll(jobs)
        # The feed's position moved.  An unwritable record must not fail the view: a scheduling decision that
        # needs no write (a release) still goes through; only a restart may read a few completions twice.
        self._try_save_record()
        rule = self.config.class_rule
        unlimited = self.config.unlimited_time_s

        in_scope = self._in_scope if self.config.partitions else None
        pending = [j for j in jobs if j.state == "PENDING" and (in_scope is None or in_scope(j.partition))]
        running = [j for j in jobs if j.state in ACTIVE_STATES and (in_scope is None or in_scope(j.partition))]
        finished = [c for c in completed if self._in_scope(c.partition)]
        # Column by column, names looked up once each: at 50,000 jobs a cycle the few distinct accounts, QOS,
        # partitions and job names (a user resubmits the same script) repeat (benchmarks/bench_cycle.py).
        vo_of = _Memo(self.vo_mapping.index)
        user_of = _Memo(user_id)
        executable_of = _Memo(executable_id)

        def common(items: Sequence[SlurmJob] | Sequence[CompletedJob]) -> tuple[dict[str, np.ndarray], np.ndarray]:
            """The columns every job table of the view has (job id, VO, class, cores, submit time), and the
            time limits (inf: unlimited)."""
            n = len(items)
            limits = np.fromiter((j.time_limit_s for j in items), np.float64, n)
            columns = {
                "job_id": np.fromiter((j.job_id for j in items), np.int64, n),
                "vo": np.fromiter((vo_of[j.account] for j in items), np.int64, n),
                "job_class": rule.classify_columns([j.qos for j in items], [j.partition for j in items], limits),
                "cores": np.fromiter((j.cpus for j in items), np.int64, n),
                "submit_s": np.fromiter((j.submit_s for j in items), np.float64, n),
            }
            return columns, limits

        def req(limits: np.ndarray) -> np.ndarray:
            return np.where(np.isinf(limits), unlimited, limits)

        columns, limits = common(pending)
        pending_view = PendingJobs(
            **columns,
            req_time_s=req(limits),
            oracle_run_s=np.full(len(pending), np.nan),
            held=np.fromiter((j.reason in HELD_REASONS for j in pending), np.bool_, len(pending)),
            user=np.fromiter((user_of[j.user] for j in pending), np.int64, len(pending)),
            executable=np.fromiter((executable_of[j.name] for j in pending), np.int64, len(pending)),
        )
        columns, limits = common(running)
        running_view = RunningJobs(
            **columns,
            req_time_s=req(limits),
            start_s=np.fromiter((j.start_s for j in running), np.float64, len(running)),
            user=np.fromiter((user_of[j.user] for j in running), np.int64, len(running)),
            executable=np.fromiter((executable_of[j.name] for j in running), np.int64, len(running)),
        )
        columns, _ = common(finished)
        finished_view = FinishedJobs(
            **columns,
            start_s=np.array([c.start_s for c in finished], dtype=np.float64),
            end_s=np.array([c.end_s for c in finished], dtype=np.float64),
        )

        scoped = [n for n in nodes if self._in_scope(n.partitions)]
        live = [n for n in scoped if n.live]
        total = sum(n.cpus for n in live)
        idle = sum(n.idle_cpus for n in live if n.accepting)
        cloud_nodes = [n for n in scoped if n.cloud]
        cloud = None
        if cloud_nodes:
            cap = self.record.lease_cap if self.record.lease_cap is not None else len(cloud_nodes)
            cloud = CloudState(
                cap=cap,
                nodes_total=len(cloud_nodes),
                nodes_powered=sum(n.powered for n in cloud_nodes),
                nodes_busy=sum(n.alloc_cpus > 0 for n in cloud_nodes),
                cores_per_node=max(n.cpus for n in cloud_nodes),
            )
        return self._cluster_view(now, total, idle, (pending_view, running_view, finished_view), cloud, polled)

    # -------------------------------------------------------------------------------------- daemon's questions
    def queue_counts(self) -> dict[QueueKey, int]:
        """Jobs of the last poll in scope by (partition, account, class, state) for ``rlsched_queue_jobs``."""
        classify = self.config.class_rule.classify
        class_name = _Memo(lambda key: JobClass(int(classify(*key))).name.lower())
        by_fields: Counter[tuple[str, str, str, float, str]] = Counter()
        for job in self._polled:
            if job.state == "PENDING":
                state = "held" if job.reason in HELD_REASONS else "pending"
            elif job.state in ACTIVE_STATES:
                state = "running"
            else:
                continue
            by_fields[(job.partition, job.account, job.qos, job.time_limit_s, state)] += 1
        counts: Counter[QueueKey] = Counter()
        for (partition, account, qos, limit_s, state), n in by_fields.items():
            if self._in_scope(partition):
                counts[(partition, account, class_name[qos, partition, limit_s], state)] += n
        return dict(counts)

    def job_labels(self) -> dict[int, tuple[str, str]]:
        return {job.job_id: (job.partition, job.account) for job in self._polled}

    def release_gated(self) -> int:
        """Release every held pending job of the gated partitions (``partitions``; none when it is empty)."""
        jobs, _ = self.poll()
        scope = self.config.partitions
        gated = [j.job_id for j in jobs if j.held and not scope.isdisjoint(j.partition.split(","))]
        for job_id in gated:
            self.release(job_id)
        return len(gated)

    def heartbeat_fields(self) -> dict[str, object]:
        """Where the gate watchdog (``plugins/rlsched-gate-watchdog``) finds the gated jobs."""
        return {
            "partitions": sorted(self.config.partitions),
            "slurm_conf": self.config.slurm_conf,
            "bin_dir": self.config.bin_dir,
            "undo_record": self.config.state_file,
        }

    def describe(self) -> str:
        record = self.config.state_file or "memory only"
        return f"Slurm (SLURM_CONF={self.config.slurm_conf or 'default'}, undo record {record})"

    # -------------------------------------------------------------------------------------- boost
    def nice_step(self) -> int:
        """The gap between two ranks: above any multifactor priority, as a power of ten (stable)."""
        config = self.slurm_config()
        # A job whose priority (or Nice) is beyond Slurm's Nice range cannot be overtaken by any boost:
        # it must not widen the step for all the others (`--nice=2147483645`, issue 16).
        beyond = {j.job_id for j in self._jobs.values() if j.pending and j.base_priority > _MAX_NICE}
        if beyond - self._beyond_nice_range:
            # Counted once per job (backend_errors{kind="nice_out_of_range"}): the boost goes on without it.
            self.executor.count("nice_out_of_range", len(beyond - self._beyond_nice_range))
        self._beyond_nice_range = beyond
        bound = max(
            [min(_weight_sum(config), _MAX_NICE)]
            + [p for j in self._jobs.values() if j.state == "PENDING" and (p := j.priority + j.nice) <= _MAX_NICE]
        )  # base priority
        step = int(10 ** math.ceil(math.log10(bound + 1))) if bound > 0 else 1
        return min(step, _MAX_NICE)

    def _set_boost(self, job_id: int, value: int, kind: str) -> bool:
        argv = [self._cmd("scontrol"), "update", f"JobId={job_id}", f"Nice={value}"]
        return self._job_action(job_id, argv, kind)

    def _boost_record(self) -> tuple[dict[int, int], dict[int, int]]:
        return self.record.original_nice, self.record.applied_nice

    def _restorable(self, original: int) -> int:
        # Slurm takes back no Nice outside its range: the nearest (an original is always inside: Slurm gave it).
        return min(max(original, -_MAX_NICE), _MAX_NICE)

    def boost(self, ranked_job_ids: Sequence[int]) -> None:
        """Give the first ``max_boosted`` pending jobs of the ranking decreasing negative Nice offsets;
        jobs boosted before and not now get their original Nice back."""
        ranked = self._ranked_pending(ranked_job_ids)
        step = self.nice_step()
        if step * len(ranked) > _MAX_NICE:
            keep = max(1, _MAX_NICE // step)
            log.warning(
                "boost: %d ranks of %d do not fit in Slurm's Nice range; boosting the top %d", len(ranked), step, keep
            )
            ranked = ranked[:keep]
        # Never outside Slurm's Nice range, whatever the step (a refused update would fail the whole boost).
        self._apply_boosts(
            {job_id: max(-_MAX_NICE, -step * (len(ranked) - rank)) for rank, job_id in enumerate(ranked)}
        )

    # -------------------------------------------------------------------------------------- hold/release
    def _hold_argv(self, job_id: int) -> list[str]:
        return [self._cmd("scontrol"), "hold", str(job_id)]

    def _release_argv(self, job_id: int) -> list[str]:
        return [self._cmd("scontrol"), "release", str(job_id)]

    # -------------------------------------------------------------------------------------- lease cap
    @property
    def last_nodes(self) -> list[SlurmNode]:
        """The nodes of the last poll."""
        return list(self._nodes)

    def nodes(self) -> list[NodeState]:
        """The nodes of the last poll, in the backend-neutral form of :class:`rlsched.core.live.NodeState`."""
        return [slurm_node_state(node) for node in self._nodes]

    def drained_nodes(self) -> frozenset[str]:
        return frozenset(self.record.drained_by_rlsched)

    def forget_drained(self, names: Sequence[str]) -> None:
        self.record.drained_by_rlsched.difference_update(names)
        for name in names:
            self.record.drain_reasons.pop(name, None)
        self._save_record()

    def set_lease_cap(self, n: int) -> None:
        """At most ``n`` cloud nodes may be leased (see :meth:`enforce_lease_cap`, over every cloud node)."""
        self.enforce_lease_cap(n)

    def enforce_lease_cap(
        self, n: int, managed: Sequence[str] | None = None, excluded: Mapping[str, str] | None = None
    ) -> list[str]:
        """Keep at most ``n`` of the ``managed`` cloud nodes usable; returns the allowed ones.

        Allowed are the first ``n`` of the managed nodes that are neither ``excluded`` (name → drain
        reason, e.g. a node backing off after failed launches) nor drained by someone else, busy nodes
        first, then powered ones, then by name (so a lower cap never takes a busy node while an idle one
        can go).  Every other managed node is drained (``Reason=rlsched_lease_cap`` or its exclusion
        reason): running jobs finish, no new job starts there and power saving will not resume it.
        Nodes rlsched drained that are allowed again are resumed.  ``managed`` None: every cloud node
        in scope (partitions).
        """
        if n < 0:
            raise ValueError(f"lease cap must be >= 0, got {n}")
        if not self._nodes:
            self.poll()
        excluded = excluded or {}
        names = set(managed) if managed is not None else None
        # Named nodes are managed wherever their partitions are; else every cloud node rlsched schedules.
        cloud = [
            node
            for node in self._nodes
            if node.cloud and (node.name in names if names is not None else self._in_scope(node.partitions))
        ]
        candidates = [
            node
            for node in cloud
            if node.name not in excluded and ("DRAIN" not in node.flags or node.name in self.record.drained_by_rlsched)
        ]
        candidates.sort(key=lambda node: (node.alloc_cpus == 0, not node.powered, node.name))
        allowed = [node.name for node in candidates[:n]]
        by_reason: dict[str, list[str]] = {}
        for node in cloud:
            if node.name in allowed:
                continue
            reason = excluded.get(node.name, LEASE_DRAIN_REASON)
            drained = "DRAIN" in node.flags
            if drained and node.name not in self.record.drained_by_rlsched:
                continue  # an admin's drain: not ours to change
            if drained and self.record.drain_reasons.get(node.name) == reason:
                continue
            if node.flags & {"POWER_DOWN", "POWERING_DOWN"} and not drained:
                # Slurm 22.05 drops a drain set while a node powers down; the hook's permit refuses the node
                # meanwhile, and the next cycle drains it once it is down.
                continue
            by_reason.setdefault(reason, []).append(node.name)
        to_resume = sorted(name for name in self.record.drained_by_rlsched if name in allowed)
        self.record.lease_cap = n
        try:
            for reason, drain in sorted(by_reason.items()):
                self.drain_nodes(drain, reason)
            if to_resume:
                self.resume_nodes(to_resume)
        finally:
            self._try_save_record()
        return allowed

    def drain_nodes(self, names: Sequence[str], reason: str) -> None:
        """Drain these nodes with ``reason`` and record them as drained by rlsched (undone on stop)."""
        if not names:
            return
        # Recorded first, as holds are: a drain the record does not know would outlive rlsched.
        new = [name for name in names if name not in self.record.drained_by_rlsched]
        self.record.drained_by_rlsched.update(names)
        if not self._try_save_record():
            self.record.drained_by_rlsched.difference_update(new)
            raise OSError(f"not draining {','.join(names)}: the undo record {self.config.state_file} cannot be written")
        try:
            self.executor.run(
                [self._cmd("scontrol"), "update", f"NodeName={','.join(names)}", "State=DRAIN", f"Reason={reason}"],
                lambda r: None,
            )
        except Exception:
            self.record.drained_by_rlsched.difference_update(new)
            self._try_save_record()
            raise
        self.record.drain_reasons.update({name: reason for name in names})
        self.actions["node_drain"] += len(names)
        self._try_save_record()

    def power_down_nodes(self, names: Sequence[str], reason: str) -> None:
        """``State=POWER_DOWN_FORCE``: Slurm requeues the nodes' jobs and runs the SuspendProgram now."""
        if not names:
            return
        self.executor.run(
            [
                self._cmd("scontrol"),
                "update",
                f"NodeName={','.join(names)}",
                "State=POWER_DOWN_FORCE",
                f"Reason={reason}",
            ],
            lambda r: None,
        )
        self.actions["node_power_down"] += len(names)
        # A forced power-down clears the node's DRAIN (seen on Slurm 22.05): rlsched's drain is gone with it,
        # and until the next poll the node has a power-down pending.
        self.record.drained_by_rlsched.difference_update(names)
        for name in names:
            self.record.drain_reasons.pop(name, None)
        self._nodes = [
            dataclasses.replace(n, flags=(n.flags - {"DRAIN", "POWERING_UP"}) | {"POWER_DOWN"})
            if n.name in names
            else n
            for n in self._nodes
        ]
        self._save_record()

    def resume_nodes(self, names: Sequence[str]) -> None:
        """``State=RESUME``: undo a drain (rlsched's record of it goes)."""
        if not names:
            return
        self.executor.run(
            [self._cmd("scontrol"), "update", f"NodeName={','.join(names)}", "State=RESUME"], lambda r: None
        )
        self.record.drained_by_rlsched.difference_update(names)
        for name in names:
            self.record.drain_reasons.pop(name, None)
        self.actions["node_resume"] += len(names)
        self._save_record()

    # -------------------------------------------------------------------------------------- undo
    def undo(self) -> int:
        """Restore everything rlsched changed: Nice values, its holds, its drained nodes.  Returns the
        number of changes undone; what fails stays recorded (and raises) so a later call can finish."""
        try:
            undone = self._undo_jobs()
            if self.record.drained_by_rlsched:
                names = sorted(self.record.drained_by_rlsched)
                self.resume_nodes(names)
                undone += len(names)
            self.record.lease_cap = None
        finally:
            self._save_record()
        return undone


def build_slurm_backend(config: SlurmBackendConfig, state_dir: str | Path | None) -> SlurmBackend:
    """The registry's factory (:mod:`rlsched.backends`): the undo record goes to
    ``<state_dir>/slurm-record.json`` unless ``state_file`` names another place; ``state_dir`` None keeps
    no record (a read-only backend)."""
    return SlurmBackend(record_in_state_dir(config, state_dir, "slurm-record.json"))
