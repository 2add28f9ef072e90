"""The PBS backend: :class:`rlsched.core.live.LiveBackend` through OpenPBS / PBS Professional's commands.

Reading: one ``qstat -f -t -F json`` (with ``-x`` when the completions come from the job history) and one
``pbsnodes -a -F json`` per view, plus the completion feed (:mod:`.completions`).

Acting (docs/pbs.md):

- **boost**: ``qalter -p`` gives the top-ranked pending jobs priorities 1023, 1022, … (PBS's range is
  -1024…1023).  The scheduler honours it only when ``job_sort_key: "job_priority HIGH"`` comes first in
  ``sched_config``; the backend reads that file once (through the command prefix) and says so in one line
  when it does not (``priority_sort_check = "refuse"``: and then never boosts).
- **hold**/**release**: ``qhold``/``qrls`` (a user hold, ``-h u``).
- No lease cap: OpenPBS has no cloud bursting (leasing on PBS is out of scope).

Every command runs behind ``command_prefix`` (an argument list).  Everything rlsched changes — each boosted
job's original priority, the jobs it held — is recorded in memory and, with ``state_file``, on disk (written
atomically), so that :meth:`PBSBackend.undo` restores it on stop, also after a restart.

A job that disappears between a view and an action is logged and counted as ``vanished_job``, never raised.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from rlsched.backends.common.base import CLIBackend, record_in_state_dir
from rlsched.backends.common.record import UndoRecord
from rlsched.backends.common.runner import CommandResult, CommandRunner, SubprocessRunner
from rlsched.backends.pbs.completions import CompletionFeed
from rlsched.backends.pbs.config import PBSBackendConfig
from rlsched.backends.pbs.errors import PBSCommandError, PBSError, PBSParseError
from rlsched.backends.pbs.parsers import (
    MAX_PRIORITY,
    SUBJOB_ID_BASE,
    PBSJob,
    PBSNode,
    parse_pbsnodes_json,
    parse_qstat_json,
    sched_sort_keys,
)
from rlsched.core.live import CHANGE_KINDS, QueueKey
from rlsched.core.view import (
    ClusterView,
    FinishedJobs,
    JobClass,
    PendingJobs,
    RunningJobs,
    executable_id,
    user_id,
)

log = logging.getLogger(__name__)

#: What qalter/qhold/qrls print for a job that is gone or no longer in a state the action applies to.
_VANISHED_MESSAGES = (
    "Unknown Job Id",
    "Job has finished",
    "Request invalid for state of job",
    "invalid state for job",
    "Job is in wrong state",
)


class PrefixRunner:
    """Runs every command behind a fixed prefix (``ssh headnode``, ``ip netns exec NS``): argument lists only."""

    def __init__(self, prefix: Sequence[str], inner: CommandRunner) -> None:
        self.prefix = tuple(prefix)
        self.inner = inner

    def __call__(self, argv: Sequence[str], timeout_s: float) -> CommandResult:
        result = self.inner([*self.prefix, *argv], timeout_s)
        return result.with_argv(argv)


def pbs_id_of(job_id: int) -> str:
    """The PBS id to name a job rlsched knows only by number (the server's suffix is optional)."""
    if job_id >= SUBJOB_ID_BASE:
        index, seq = divmod(job_id, SUBJOB_ID_BASE)
        return f"{seq}[{index - 1}]"
    return str(job_id)


@dataclass
class PBSUndoRecord(UndoRecord):
    """What the PBS backend changed: each boosted job's priority before rlsched changed it and the one it set,
    and the full PBS id of every job it boosted or held (the undo and the gate watchdog name jobs by it)."""

    batch_system: ClassVar[str] = "PBS"
    original_priority: dict[int, int] = field(default_factory=dict)
    applied_priority: dict[int, int] = field(default_factory=dict)
    pbs_ids: dict[int, str] = field(default_factory=dict)

    def changes(self) -> dict[str, int]:
        return dict(zip(CHANGE_KINDS, (len(self.original_priority), len(self.held_by_rlsched), 0), strict=True))


class PBSBackend(CLIBackend[PBSJob, PBSUndoRecord]):
    """PBS through its CLI (see the module docstring).  ``runner`` and ``clock`` are injectable."""

    config: PBSBackendConfig
    vanished_messages = _VANISHED_MESSAGES
    boost_field = "priority"
    held_fields: ClassVar[dict[str, Any]] = {"state": "H"}
    released_fields: ClassVar[dict[str, Any]] = {"state": "Q"}

    config_class = PBSBackendConfig
    record_class = PBSUndoRecord
    command_error = PBSCommandError
    _jobs: dict[int, PBSJob]
    _nodes: list[PBSNode]
    _feed: CompletionFeed | None

    def _runner(self, runner: CommandRunner | None) -> CommandRunner:
        inner = runner or SubprocessRunner()
        return PrefixRunner(self.config.command_prefix, inner) if self.config.command_prefix else inner

    def _setup(self) -> None:
        self._sort_checked: bool | None = None

    # -------------------------------------------------------------------------------------- commands
    def _pbs_id(self, job_id: int) -> str:
        job = self._jobs.get(job_id)
        return job.pbs_id if job is not None else self.record.pbs_ids.get(job_id, pbs_id_of(job_id))

    def _job_name(self, job_id: int) -> str:
        return self._pbs_id(job_id)

    def _replace_job(self, job: PBSJob, changes: dict[str, Any]) -> PBSJob:
        return dataclasses.replace(job, **changes)

    # -------------------------------------------------------------------------------------- view
    def _in_scope(self, queue: str) -> bool:
        return not self.config.queues or queue in self.config.queues

    def poll(self) -> tuple[list[PBSJob], list[PBSNode]]:
        """One ``qstat -f -t -F json`` (``-x`` too for the history feed) and one ``pbsnodes -a -F json``."""
        history = self.config.completion_source == "history"
        argv = [self._cmd("qstat"), *(["-x"] if history else []), "-f", "-t", "-F", "json"]
        jobs = self.executor.run(argv, lambda r: parse_qstat_json(r.stdout, self._skip_job))
        nodes = self.executor.run([self._cmd("pbsnodes"), "-a", "-F", "json"], lambda r: parse_pbsnodes_json(r.stdout))
        self._polled = jobs
        self._jobs = {job.job_id: job for job in jobs}
        self._nodes = nodes
        return jobs, nodes

    def _skip_job(self, exc: PBSParseError) -> None:
        self.executor.count("job_skipped")
        log.warning("view: skipping one job: %s", exc)

    def _completion_feed(self) -> CompletionFeed:
        if self._feed is None:
            log.info("completion feed: %s", self.config.completion_source)
            if self.config.completion_source == "history":
                self._check_history_enabled()
            self._feed = CompletionFeed(
                self.config.completion_source,
                self.executor,
                self.config.accounting_dir,
                self.clock,
                self.record.completion_feed,
            )
        return self._feed

    def _check_history_enabled(self) -> None:
        """Without ``job_history_enable`` finished jobs leave ``qstat -x`` at once: no completion, no reward."""
        try:
            text = self.executor.run([self._cmd("qstat"), "-B", "-f", "-F", "json"], lambda r: r.stdout)
            servers = json.loads(text).get("Server", {})
            enabled = any(
                str(s.get("job_history_enable", "")).lower() == "true" for s in servers.values() if isinstance(s, dict)
            )
        except (PBSError, ValueError, AttributeError) as exc:
            log.warning("completion feed: cannot tell whether the server keeps job history (%s)", exc)
            return
        if not enabled:
            log.warning(
                "completion feed: the server does not keep job history, so no job completion (and no "
                "reward) will be seen: qmgr -c 'set server job_history_enable = True', or "
                'completion_source = "accounting"'
            )

    def _vo_key(self, job: PBSJob) -> str:
        return job.vo_key(self.config.vo_from)

    def _class(self, job: PBSJob) -> JobClass:
        return self.config.class_rule.classify("", job.queue, job.walltime_s)

    def view(self) -> ClusterView:
        # A job pending in the view had not started when the reads began; the view's time is when they ended.
        polled = self.clock()
        jobs, nodes = self.poll()
        now = self.clock()
        completed = self._completion_feed().poll(jobs)
        self._try_save_record()  # the feed's position moved (a failure only repeats a later window)
        unlimited = self.config.unlimited_time_s

        def req(limit_s: float) -> float:
            return unlimited if math.isinf(limit_s) else limit_s

        pending = [j for j in jobs if j.pending and self._in_scope(j.queue)]
        running = [j for j in jobs if j.active and self._in_scope(j.queue)]
        finished = [j for j in completed if self._in_scope(j.queue)]
        vo = self.vo_mapping.index

        def common(items: Sequence[PBSJob]) -> dict[str, np.ndarray]:
            return {
                "job_id": np.array([j.job_id for j in items], dtype=np.int64),
                "vo": np.array([vo(self._vo_key(j)) for j in items], dtype=np.int64),
                "job_class": np.array([self._class(j) for j in items], dtype=np.int64),
                "cores": np.array([j.cpus for j in items], dtype=np.int64),
                "submit_s": np.array([j.submit_s for j in items], dtype=np.float64),
            }

        pending_view = PendingJobs(
            **common(pending),
            req_time_s=np.array([req(j.walltime_s) for j in pending], dtype=np.float64),
            oracle_run_s=np.full(len(pending), np.nan),
            held=np.array([j.held for j in pending], dtype=np.bool_),
            user=np.array([user_id(j.user) for j in pending], dtype=np.int64),
            executable=np.array([executable_id(j.name) for j in pending], dtype=np.int64),
        )
        running_view = RunningJobs(
            **common(running),
            req_time_s=np.array([req(j.walltime_s) for j in running], dtype=np.float64),
            start_s=np.array([j.start_s for j in running], dtype=np.float64),
            user=np.array([user_id(j.user) for j in running], dtype=np.int64),
            executable=np.array([executable_id(j.name) for j in running], dtype=np.int64),
        )
        finished_view = FinishedJobs(
            **common(finished),
            start_s=np.array([j.start_s for j in finished], dtype=np.float64),
            end_s=np.array([j.end_s for j in finished], dtype=np.float64),
        )
        live = [n for n in nodes if n.live]
        total = sum(n.cpus for n in live)
        idle = sum(n.idle_cpus for n in live if n.accepting)
        return self._cluster_view(now, total, idle, (pending_view, running_view, finished_view), polled=polled)

    # -------------------------------------------------------------------------------------- daemon's questions
    def queue_counts(self) -> dict[QueueKey, int]:
        counts: Counter[QueueKey] = Counter()
        for job in self._polled:
            if job.pending:
                state = "held" if job.held else "pending"
            elif job.active:
                state = "running"
            else:
                continue
            if not self._in_scope(job.queue):
                continue
            counts[(job.queue, self._vo_key(job), self._class(job).name.lower(), state)] += 1
        return dict(counts)

    def job_labels(self) -> dict[int, tuple[str, str]]:
        return {job.job_id: (job.queue, self._vo_key(job)) for job in self._polled}

    def release_gated(self) -> int:
        """Release every held pending job of the gated queues (none when ``queues`` is empty)."""
        jobs, _ = self.poll()
        scope = self.config.queues
        gated = [j.job_id for j in jobs if j.held and j.queue in scope]
        for job_id in gated:
            self.release(job_id)
        return len(gated)

    def heartbeat_fields(self) -> dict[str, object]:
        """Where the gate watchdog (``plugins/rlsched-gate-watchdog``) finds the gated PBS jobs."""
        return {
            "batch_system": "pbs",
            "queues": sorted(self.config.queues),
            "command_prefix": list(self.config.command_prefix),
            "bin_dir": self.config.bin_dir,
            "undo_record": self.config.state_file,
        }

    def describe(self) -> str:
        record = self.config.state_file or "memory only"
        prefix = " ".join(self.config.command_prefix)
        return f"PBS ({'via ' + prefix + ', ' if prefix else ''}undo record {record})"

    # -------------------------------------------------------------------------------------- boost
    def priority_sort_ok(self) -> bool:
        """Whether boosting can work: the scheduler sorts on job priority first (checked once, one log line)."""
        if self._sort_checked is not None:
            return self._sort_checked
        mode = self.config.priority_sort_check
        if mode == "off":
            self._sort_checked = True
            return True
        path = self.config.sched_config
        try:
            text = self.executor.run(["cat", path], lambda r: r.stdout)
        except PBSError as exc:
            log.warning(
                "boost: cannot read %s to check that the scheduler sorts on job priority (%s); boosting anyway",
                path,
                exc,
            )
            self._sort_checked = True
            return True
        keys = sched_sort_keys(text)
        if keys and keys[0].split()[:2] == ["job_priority", "HIGH"]:
            self._sort_checked = True
            return True
        found = keys[0] if keys else "none"
        if mode == "refuse":
            log.error(
                'boost: %s sorts jobs on %r, not "job_priority HIGH": qalter -p would change nothing, so '
                'rlsched does not boost (add job_sort_key: "job_priority HIGH" ALL first and HUP pbs_sched)',
                path,
                found,
            )
            self._sort_checked = False
        else:
            log.warning(
                'boost: %s sorts jobs on %r, not "job_priority HIGH": the scheduler may ignore '
                "rlsched's priorities (docs/pbs.md)",
                path,
                found,
            )
            self._sort_checked = True
        return self._sort_checked

    def _set_boost(self, job_id: int, value: int, kind: str) -> bool:
        return self._job_action(job_id, [self._cmd("qalter"), "-p", str(value), self._pbs_id(job_id)], kind)

    def _boost_record(self) -> tuple[dict[int, int], dict[int, int]]:
        return self.record.original_priority, self.record.applied_priority

    def _remember_boost(self, job_id: int) -> None:
        self.record.pbs_ids[job_id] = self._pbs_id(job_id)  # the undo restores it by its full id

    def _forget_boost(self, job_id: int) -> None:
        super()._forget_boost(job_id)
        if job_id not in self.held_by_rlsched:
            self.record.pbs_ids.pop(job_id, None)

    def boost(self, ranked_job_ids: Sequence[int]) -> None:
        """Give the first ``max_boosted`` pending jobs of the ranking priorities 1023, 1022, …; jobs boosted
        before and not now get their original priority back."""
        if not self.priority_sort_ok():
            return
        ranked = self._ranked_pending(ranked_job_ids)
        self._apply_boosts({job_id: MAX_PRIORITY - rank for rank, job_id in enumerate(ranked)})

    # -------------------------------------------------------------------------------------- hold/release
    def _hold_argv(self, job_id: int) -> list[str]:
        return [self._cmd("qhold"), "-h", "u", self._pbs_id(job_id)]

    def _release_argv(self, job_id: int) -> list[str]:
        return [self._cmd("qrls"), "-h", "u", self._pbs_id(job_id)]

    def _remember_hold(self, job_id: int) -> None:
        self.record.pbs_ids[job_id] = self._pbs_id(job_id)  # the undo record releases it by its full id
        self.held_by_rlsched.add(job_id)

    def _forget_hold(self, job_id: int) -> None:
        self.held_by_rlsched.discard(job_id)
        if job_id not in self.record.original_priority:
            self.record.pbs_ids.pop(job_id, None)

    def set_lease_cap(self, n: int) -> None:
        """PBS has no leasable cloud nodes here: nothing to cap."""

    # -------------------------------------------------------------------------------------- undo
    def undo(self) -> int:
        """Restore every priority rlsched set and release every job it held; returns how many.  What fails
        stays recorded (and raises) so a later call can finish."""
        try:
            return self._undo_jobs()
        finally:
            self._save_record()


def build_pbs_backend(config: PBSBackendConfig, state_dir: str | Path | None) -> PBSBackend:
    """The registry's factory (:mod:`rlsched.backends`): the undo record goes to ``<state_dir>/pbs-record.json``
    unless ``state_file`` names another place; ``state_dir`` None keeps no record (a read-only backend)."""
    return PBSBackend(record_in_state_dir(config, state_dir, "pbs-record.json"))
