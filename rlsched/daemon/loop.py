"""The rlsched daemon: view → decide → act → learn → checkpoint → export, every ``poll_interval_s``.

- **Modes** (``[backend] mode``): ``shadow`` (the default) decides, logs and exports but changes nothing
  in Slurm; ``boost`` steers Slurm's order with Nice offsets (see ``docs/slurm.md``); ``gate`` releases
  held jobs of the gated partitions in the agent's order as cores free (see ``docs/daemon.md``).
- **Learning**: the core's learning agents learn from ``view.finished`` at the start of ``decide``
  (rewards of finished jobs, batch re-fits; P-grid §3.3); the daemon's ``learn`` phase accounts the
  rewards received and the finished jobs' responsiveness for the metrics.
- **Failures** (docs/design.md, Reliability): each phase runs under its own ``try``; an error is logged, counted
  (``rlsched_cycle_failures_total{phase}``, and by kind in ``rlsched_backend_errors_total``) and the
  loop goes on.  Commands are already retried with backoff by the backend; on top of that, consecutive
  failed cycles back off exponentially (poll interval × 2^k, at most ``max_backoff_s``).
- **Heartbeat**: its ``time`` is when the last cycle whose view, decisions, actions and lease all worked
  ended — not when the loop was last alive.  A daemon that loops but cannot see or act (Slurm unreachable,
  garbage output, an unwritable undo record) lets it go stale, and the watchdog releases the gated jobs.
  It also names the partitions a gate-mode run left held (``gated_partitions``): a restart in another mode
  after a crash carries them on, so the watchdog still releases them.
- **Stop** (SIGTERM, SIGINT): the cycle in progress finishes, then every held job of the gated
  partitions is released and the backend undoes what it changed (Nice values, its holds, drained nodes),
  a last checkpoint is written, and the heartbeat is marked stopped.
- **Reload** (SIGHUP): the cycle in progress finishes and the config file is read again.  A bad file is
  logged, counted and the running config kept — and so is a file that looks cut short (a table of the
  running config missing, or a key of the table it ends with: :func:`rlsched.daemon.config.reload_problem`).
  Same mode, state dir and backend: the checkpoint is written and the new config goes on from it (holds and
  boosts stay); anything else: a full stop first (release, undo).
- **Crash** (kill -9): checkpoints are atomic, so the previous one loads; in gate mode the watchdog
  releases the held jobs once the heartbeat goes stale.
"""

from __future__ import annotations

import logging
import math
import os
import signal
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

import numpy as np

from rlsched.backends import build_backend
from rlsched.core.atomic import PUBLIC, write_json_atomic
from rlsched.core.live import LiveBackend, NodeControl, QueueKey
from rlsched.core.measures import responsiveness
from rlsched.core.runtime import PredictedRuntime
from rlsched.core.view import ClusterView, Decisions, apply
from rlsched.daemon.agents import policy_info, start_agent
from rlsched.daemon.config import ConfigError, DaemonConfig, load_config, reload_problem
from rlsched.daemon.decision_log import DecisionLog, decision_record
from rlsched.daemon.notify import Notifier
from rlsched.daemon.state import load_counters, read_heartbeat, restore_predictor, save_counters, save_predictor
from rlsched.exporter import CLASS_NAMES, Exporter
from rlsched.faultlog import FaultLog
from rlsched.leasing import LeaseStatus, LeasingService

log = logging.getLogger(__name__)


@dataclass
class CycleReport:
    """What one cycle did (returned by :meth:`Daemon.cycle`, logged, used by tests)."""

    view: ClusterView | None = None
    decisions: Decisions | None = None
    acted: bool = False
    failed: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    new_rewards: int = 0
    lease: LeaseStatus | None = None
    #: Whether this cycle's ranking reached the decision log.
    logged: bool = False

    @property
    def working(self) -> bool:
        """Whether the phases that schedule (view, decide, act, lease) all worked: what the heartbeat's
        ``time`` stands for.  A failed checkpoint, export or decision log does not stop scheduling."""
        return not {"view", "decide", "act", "lease"} & set(self.failed)


class Daemon:
    """One daemon: build it from a :class:`DaemonConfig`, then :meth:`run` (or :meth:`cycle` by hand).

    ``backend``, ``clock`` are injectable for tests and benchmarks; by default the backend is the one
    ``[backend] kind`` names (:func:`rlsched.backends.build_backend`).  The daemon knows it only through
    :class:`rlsched.core.live.LiveBackend` (and :class:`~rlsched.core.live.NodeControl` for leasing).
    """

    def __init__(
        self, config: DaemonConfig, backend: LiveBackend | None = None, clock: Callable[[], float] = time.time
    ) -> None:
        self.config = config
        self.clock = clock
        state_dir = config.state_dir
        backend_config = config.backend
        self.backend: LiveBackend = backend if backend is not None else build_backend(backend_config, state_dir)
        # The class rule a loaded model must have been trained for (backends without one: not checked).
        class_rule = getattr(backend_config, "class_rule", None)
        self.agent, agent_origin = start_agent(
            config.agent,
            config.mode,
            backend_config.vos,
            backend_config.vo_shares,
            config.model_file,
            class_rule.to_dict() if class_rule is not None else None,
        )
        log.info("agent: %s", agent_origin)
        for warning in self.agent.warnings:
            log.warning("agent: %s", warning)
        #: What runs (policy, model path, sha256, when trained): in the heartbeat and every decision log line.
        self.policy_info = policy_info(self.agent, config.agent)
        shadow = config.shadow
        self.decision_log: DecisionLog | None = (
            DecisionLog(config.decision_log_file, shadow.max_bytes, shadow.keep)
            if shadow.enabled and config.mode in shadow.modes
            else None
        )
        #: Persistent faults (a phase failing every cycle, the decision log), logged once then at a bounded rate.
        self.faults = FaultLog(log)
        self.counters, self.model_saved_s = load_counters(config.counters_file)
        #: Whether the runtime predictor went on from what a previous run learned (``predictor.json``).
        self.predictor_restored = self._restore_predictor()
        self.stop_event = threading.Event()
        self.leasing: LeasingService | None = None
        if config.leasing.enabled:
            if not isinstance(self.backend, NodeControl):
                raise ValueError(
                    f"{config.source}: [leasing] is enabled but the {backend_config.kind} backend cannot control nodes"
                )
            self.leasing = LeasingService(
                config.leasing, self.backend, Path(state_dir), enforce=config.mode != "shadow"
            )
        leasing = self.leasing
        self.exporter = Exporter(
            self.agent.state_names,
            lambda: self.counters,
            config.mode,
            clock=clock,
            lease_snapshot=None if leasing is None else leasing.snapshot,
            verdict=self.agent.verdict if config.agent.model is not None else None,
            model=config.agent.model is not None,
            predictor_restored=None if self._predicted_runtime() is None else self.predictor_restored,
        )
        self.exporter.last_checkpoint_s = self.model_saved_s
        self.consecutive_failures = 0
        self._seen_errors: Counter[str] = Counter(self.backend.errors)
        self._seen_actions: Counter[str] = Counter(self.backend.actions)
        self._last_checkpoint_mono: float | None = None
        self._dirty = False
        #: When the last working cycle ended (the heartbeat's ``time``); the start counts as one, so that a
        #: daemon that never manages a cycle goes stale ``stale_after_s`` after it started.
        self.last_working_s = clock()
        self.gated_partitions = self._gated_partitions()
        #: Set by SIGHUP: :meth:`run` re-reads the config after the cycle in progress.
        self.reload_requested = False
        #: The config a reload read (:func:`run_daemon` starts a new daemon with it).
        self.reload_config: DaemonConfig | None = None

    # ------------------------------------------------------------------------------------- one cycle
    @contextmanager
    def _phase(self, name: str, report: CycleReport) -> Iterator[None]:
        t0 = time.perf_counter()
        try:
            yield
        except Exception as exc:  # never fatal (docs/design.md, Reliability): log, count, carry on
            report.failed.append(name)
            with self.exporter.lock:
                self.counters.cycle_failures[name] += 1
            # Once with its traceback, then a reminder at a bounded rate: a fault of every cycle (an unwritable
            # checkpoint) must not bury the rest of the log.  Every failure is counted all the same.
            self.faults.failed(
                f"phase {name}",
                logging.WARNING if name == "view" else logging.ERROR,
                "cycle: %s failed: %s",
                name,
                exc,
                exc_info=name != "view",
            )
        else:
            self.faults.recovered(f"phase {name}", "cycle: %s works again", name)
        finally:
            report.seconds[name] = time.perf_counter() - t0

    def cycle(self) -> CycleReport:
        """One pass of view → decide → act → learn → checkpoint → export."""
        report = CycleReport()
        t0 = time.perf_counter()
        with self._phase("view", report):
            report.view = self.backend.view()
        view = report.view
        if view is not None:
            with self._phase("decide", report):
                report.decisions = self.agent.decide(view)
                self._count_decisions(report.decisions)
            if report.decisions is not None and self.config.mode != "shadow":
                with self._phase("act", report):
                    apply(self._scoped(report.decisions), self.backend)
                    report.acted = True
            if self.decision_log is not None and "decide" not in report.failed:
                report.logged = self._log_decisions(view, report.decisions)
            with self._phase("learn", report):
                report.new_rewards = self._account_learning(view)
            if self.leasing is not None:
                with self._phase("lease", report):  # not under the exporter's lock: it runs commands
                    report.lease = self.leasing.cycle(view)
        # Counted before the checkpoint so that it holds this cycle too.
        self._sync_backend_counters()
        with self.exporter.lock:
            self.counters.cycles += 1
        with self._phase("checkpoint", report):
            self._checkpoint(force=False)
        with self._phase("export", report):
            self._export(view, report)
        self.exporter.cycle.observe(time.perf_counter() - t0)
        self.exporter.set_phases(report.seconds)
        self.exporter.cycle_finished(view, failed=bool(report.failed))
        if report.decisions is not None and not report.decisions.empty:
            d = report.decisions
            log.debug(
                "cycle: %s release=%s hold=%s boost=%s",
                "acted" if report.acted else "shadow",
                list(d.release),
                list(d.hold),
                None if d.boost is None else list(d.boost[:10]),
            )
        return report

    def _scoped(self, decisions: Decisions) -> Decisions:
        """What the mode allows: boost mode never releases or holds, gate mode never boosts.  Cloud nodes are
        the leasing controller's alone (``[leasing]``, with its hard cap and budget): a lease cap from the job
        agent is never applied."""
        if self.config.mode == "boost":
            return Decisions(boost=decisions.boost)
        return Decisions(release=decisions.release, hold=decisions.hold)

    def _log_decisions(self, view: ClusterView, decisions: Decisions | None) -> bool:
        """Append this cycle's ranking to the decision log.  Never raises: a full disk or an unwritable file
        is logged (once until it works again) and counted, and scheduling goes on."""
        assert self.decision_log is not None
        try:
            order, scores = self.agent.ranking(view)
            record = decision_record(
                view,
                order,
                scores,
                self.agent.state(view).tolist(),
                self.agent.state_names,
                decisions,
                self.config.mode,
                self.policy_info,
                self.config.shadow.max_jobs,
            )
            self.decision_log.append(record)
        except Exception as exc:
            with self.exporter.lock:
                self.counters.decision_log["failed"] += 1
                self._dirty = True
            self.faults.failed(
                "decision log",
                logging.ERROR,
                "decision log %s: cannot append (counted in "
                'rlsched_decision_log_lines_total{outcome="failed"}; scheduling goes on): %s',
                self.decision_log.path,
                exc,
            )
            return False
        self.faults.recovered("decision log", "decision log %s: appends work again", self.decision_log.path)
        with self.exporter.lock:
            self.counters.decision_log["written"] += 1
            self._dirty = True
        return True

    def _count_decisions(self, d: Decisions) -> None:
        with self.exporter.lock:
            c = self.counters.decisions
            if d.boost is not None:
                c["boost"] += 1  # one ranking of the whole queue
            c["release"] += len(d.release)
            c["hold"] += len(d.hold)
            if d.lease_cap is not None:
                c["lease_cap"] += 1
            self._dirty = True

    def _account_learning(self, view: ClusterView) -> int:
        count, total = self.agent.new_rewards()
        fin = view.finished
        w = responsiveness(fin.run_s, fin.wait_s) if len(fin) else np.zeros(0)
        with self.exporter.lock:
            self.counters.rewards += count
            self.counters.reward_sum += total
            for cls, value in zip(fin.job_class.tolist(), np.asarray(w, dtype=np.float64).tolist(), strict=True):
                name = CLASS_NAMES[cls] if 0 <= cls < len(CLASS_NAMES) else str(cls)
                self.counters.finished[name] += 1
                if math.isfinite(value):
                    sums = self.counters.responsiveness_sum
                    sums[name] = sums.get(name, 0.0) + value
            if count or len(fin):
                self._dirty = True
        return count

    # ------------------------------------------------------------------------------------- checkpoints
    def _predicted_runtime(self) -> PredictedRuntime | None:
        """The agent's runtime model when it learns from finished jobs (``runtime_model=user-last2``, ``learned``)."""
        runtime = self.agent.runtime
        return runtime if isinstance(runtime, PredictedRuntime) else None

    def _restore_predictor(self) -> bool:
        """Go on from the runtime predictor the previous run checkpointed (:func:`restore_predictor`)."""
        runtime = self._predicted_runtime()
        if runtime is None:
            return False
        restored, warning = restore_predictor(self.config.predictor_file, runtime)
        if warning is not None:
            log.warning("%s", warning)
        elif restored:
            log.info("runtime predictor %s: resumed from %s", runtime.name, self.config.predictor_file)
        return restored

    def _checkpoint(self, force: bool) -> None:
        now = time.monotonic()
        due = self._last_checkpoint_mono is None or now - self._last_checkpoint_mono >= self.config.checkpoint_every_s
        if not force and not (due and self._dirty):
            return
        if self.agent.save(self.config.model_file):
            self.model_saved_s = self.clock()
        with self.exporter.lock:
            save_counters(self.config.counters_file, self.counters, self.model_saved_s)
        runtime = self._predicted_runtime()
        if runtime is not None:
            save_predictor(self.config.predictor_file, runtime.state())
        self.exporter.last_checkpoint_s = self.clock()
        self._last_checkpoint_mono = now
        self._dirty = False

    # ------------------------------------------------------------------------------------- export
    def _sync_backend_counters(self) -> None:
        with self.exporter.lock:
            for source, seen, target in (
                (self.backend.errors, self._seen_errors, self.counters.backend_errors),
                (self.backend.actions, self._seen_actions, self.counters.actions),
            ):
                for kind, n in source.items():
                    if n > seen[kind]:
                        target[kind] += n - seen[kind]
                        seen[kind] = n
                        self._dirty = True

    def _export(self, view: ClusterView | None, report: CycleReport) -> None:
        self.exporter.backend_up.set(0.0 if view is None else 1.0)
        if view is None:
            return
        self.exporter.set_state(self.agent.state(view).tolist())
        self.exporter.set_queue(self.queue_counts())
        d = report.decisions
        chosen: list[int] = []
        if d is not None:
            chosen = list(d.release[-1:]) if d.release else list(d.boost[:1]) if d.boost else []
        if chosen and self.agent.learning:
            rows = np.nonzero(np.isin(view.pending.job_id, chosen))[0]
            q = self.agent.q_values(view, rows)
            if q.size:
                self.exporter.q_value.set(float(q[-1]))

    def queue_counts(self) -> dict[QueueKey, int]:
        """Jobs of the last view by (partition, account, class, state) for ``rlsched_queue_jobs``."""
        return self.backend.queue_counts()

    # ------------------------------------------------------------------------------------- heartbeat
    def _gated_partitions(self) -> list[str]:
        """The partitions whose held jobs wait for rlsched: this run's in gate mode; otherwise those a
        previous gate-mode run left behind without a clean stop (a crash, then a restart in shadow or boost
        mode), carried on until a gate-mode run stops cleanly."""
        fields = self.backend.heartbeat_fields()
        own = fields.get("partitions", fields.get("queues"))  # Slurm partitions, PBS queues
        if self.config.mode == "gate":
            return sorted(str(p) for p in own) if isinstance(own, list) else []
        previous = read_heartbeat(self.config.heartbeat_file)
        if previous is None or previous.get("stopped"):
            return []
        carried = previous.get("gated_partitions")
        if carried is None and previous.get("mode") == "gate":  # a heartbeat from before this field
            carried = previous.get("partitions")
        if not isinstance(carried, list) or not carried:
            return []
        log.warning(
            "the previous run (mode %s, pid %s) gated %s and did not stop cleanly: the watchdog releases "
            "their held jobs",
            previous.get("mode"),
            previous.get("pid"),
            ",".join(map(str, carried)),
        )
        return sorted(str(p) for p in carried)

    def write_heartbeat(self, stopped: bool = False) -> None:
        """Tell the watchdog and the leasing hook when the daemon last worked (or that it stopped on purpose,
        after releasing its jobs).  ``time`` is the end of the last working cycle, ``written`` now."""
        write_json_atomic(
            self.config.heartbeat_file,
            {
                "pid": os.getpid(),
                "host": socket.gethostname(),
                "time": self.last_working_s,
                "written": self.clock(),
                "consecutive_failures": self.consecutive_failures,
                "mode": self.config.mode,
                **self.backend.heartbeat_fields(),
                "gated_partitions": self.gated_partitions,
                **self.policy_info,
                "decision_log": None if self.decision_log is None else str(self.decision_log.path),
                "stale_after_s": self.config.gate.stale_after_s,
                "stopped": stopped,
            },
            mode=PUBLIC,
        )

    def _heartbeat_safely(self, stopped: bool = False) -> None:
        try:
            self.write_heartbeat(stopped)
        except OSError as exc:
            log.error("cannot write heartbeat %s: %s", self.config.heartbeat_file, exc)

    # ------------------------------------------------------------------------------------- the loop
    def request_stop(self, signum: int | None = None, frame: FrameType | None = None) -> None:
        if signum is not None:
            log.warning("received %s: stopping after this cycle", signal.Signals(signum).name)
        self.stop_event.set()

    def request_reload(self, signum: int | None = None, frame: FrameType | None = None) -> None:
        log.warning("received SIGHUP: reloading %s after this cycle", self.config.source)
        self.reload_requested = True
        self.stop_event.set()

    def install_signal_handlers(self) -> None:
        signal.signal(signal.SIGTERM, self.request_stop)
        signal.signal(signal.SIGINT, self.request_stop)
        signal.signal(signal.SIGHUP, self.request_reload)

    def _take_reload(self) -> bool:
        """Read the config again after a SIGHUP: True to stop this daemon for the new config, False to go on
        (no reload asked, or the file is bad: logged, the running config kept)."""
        if not self.reload_requested:
            return False
        self.reload_requested = False
        try:
            new = load_config(self.config.source, require_mode=True)
            problem = reload_problem(self.config, new)
            if problem is not None:
                raise ConfigError(problem)
        except Exception as exc:  # never fatal: whatever the file holds, the running config stays
            reason = str(exc) if isinstance(exc, ConfigError) else f"{self.config.source}: {type(exc).__name__}: {exc}"
            log.error("reload refused, the running config stays: %s", " ".join(reason.split()))
            with self.exporter.lock:  # rlsched_cycle_failures_total{phase="reload"}
                self.counters.cycle_failures["reload"] += 1
                self._dirty = True
            self.stop_event.clear()
            return False
        self.reload_config = new
        return True

    def _reload_keeps_changes(self) -> bool:
        """Whether the new config can take over what this one changed in the batch system as it is."""
        new = self.reload_config
        return new is not None and (new.mode, new.state_dir, new.backend) == (
            self.config.mode,
            self.config.state_dir,
            self.config.backend,
        )

    def next_delay_s(self, failed: bool) -> float:
        """The pause before the next cycle: the poll interval, doubled per consecutive failed view."""
        self.consecutive_failures = self.consecutive_failures + 1 if failed else 0
        if not failed:
            return self.config.poll_interval_s
        return min(self.config.poll_interval_s * 2.0 ** (self.consecutive_failures - 1), self.config.max_backoff_s)

    def _wait(self, seconds: float) -> None:
        """Sleep until the next cycle or a stop.  The heartbeat is not refreshed here: a sleeping loop is not
        a working daemon (the heartbeat's ``time`` moves only after a working cycle)."""
        self.stop_event.wait(seconds)

    def run(self, once: bool = False, serve_metrics: bool = True) -> int:
        """Run until stopped; returns an exit status.

        ``once``: one cycle, then exit leaving what it did in place (boosts and holds stay, recorded in the
        backend's state file; the next run continues from them; ``rlsched daemon --undo`` undoes them); the
        heartbeat is marked stopped (no loop goes on) and the status is 1 when a phase of the cycle failed.
        After a SIGHUP whose config loads, it returns 0 with :attr:`reload_config` set (see :func:`run_daemon`).
        """
        if self.config.gate.stale_after_s <= self.config.poll_interval_s:
            log.warning(
                "gate.stale_after_s (%g s) does not exceed poll_interval_s (%g s): the heartbeat goes stale "
                "between two working cycles",
                self.config.gate.stale_after_s,
                self.config.poll_interval_s,
            )
        if serve_metrics and self.config.metrics_port is not None:
            port = self.exporter.serve(self.config.metrics_host, self.config.metrics_port)
            log.info("metrics on http://%s:%d/metrics", self.config.metrics_host, port)
        log.info(
            "rlsched daemon: mode %s, agent %s, poll every %g s, state in %s",
            self.config.mode,
            self.config.agent.label,
            self.config.poll_interval_s,
            self.config.state_dir,
        )
        status = 0
        final = not once
        notifier = Notifier()  # systemd Type=notify: READY/WATCHDOG only after cycles that worked
        try:
            self._heartbeat_safely()
            while not self.stop_event.is_set():
                report = self.cycle()
                if report.working:
                    self.last_working_s = self.clock()
                self._heartbeat_safely()
                notifier.cycle_done(report.failed, None if report.view is None else len(report.view.pending))
                if once:
                    status = 1 if report.failed else 0
                    break
                self._wait(self.next_delay_s("view" in report.failed))
                if self.stop_event.is_set() and self._take_reload():
                    final = not self._reload_keeps_changes()
                    log.info(
                        "reload: %s",
                        "the new config goes on from this one's changes"
                        if not final
                        else "mode, state dir or backend changed: releasing and undoing first",
                    )
        finally:
            if self.reload_config is not None:
                # The next daemon of this process sends READY=1 after its first working cycle.
                notifier.send(RELOADING=1, STATUS=f"reloading {self.config.source}")
            else:
                notifier.stopping()
            self.shutdown(final=final)
            if once:
                # No loop goes on after --once: the watchdog must not wait for it (shutdown marks it on a
                # full stop only).
                self._heartbeat_safely(stopped=True)
            self.exporter.close()
        return status

    def shutdown(self, final: bool = True, drain_cloud: bool = True) -> None:
        """Checkpoint; with ``final``, first leave the batch system as rlsched found it: release the gated jobs (gate
        mode), undo Nice values, holds and drained nodes, and mark the heartbeat stopped.  Each step is
        tried even if another fails; what could not be undone stays recorded for the next start.  With leasing
        enforced and ``drain_cloud``, the cloud nodes are left drained (the resume hook refuses every lease while
        the daemon is stopped; ``rlsched daemon --undo`` passes False)."""
        if final and self.config.mode == "gate":
            try:
                released = self.release_gated_jobs()
                log.info("stop: released %d held jobs of the gated partitions", released)
            except Exception as exc:
                log.error("stop: could not release the gated jobs (the watchdog will): %s", exc)
        if final:
            try:
                undone = self.backend.undo()
                log.info("stop: undid %d changes in %s", undone, self.backend.describe())
            except Exception as exc:
                left = {kind: n for kind, n in self.backend.changes().items() if n}
                log.error(
                    "stop: undo incomplete, %s left for the next start (%s): %s", left, self.backend.describe(), exc
                )
        if final and drain_cloud and self.leasing is not None:
            try:
                self.leasing.stop()
            except Exception as exc:
                log.error(
                    "stop: could not drain the cloud nodes (the resume hook marks them DOWN if Slurm picks them): %s",
                    exc,
                )
        self._sync_backend_counters()
        try:
            self._checkpoint(force=True)
        except Exception as exc:
            log.error("stop: final checkpoint failed: %s", exc)
        if final:
            self._heartbeat_safely(stopped=True)

    def release_gated_jobs(self) -> int:
        """Release every held pending job of the gate scope (whoever held it: there a hold means "waiting
        for rlsched")."""
        return self.backend.release_gated()


def run_daemon(config: DaemonConfig, once: bool = False, daemon: Daemon | None = None) -> int:
    """Run daemons until one stops for good: SIGHUP starts a new one with the re-read config (the CLI's
    ``rlsched daemon``).  ``daemon``: an already built first daemon for ``config``."""
    runner = daemon if daemon is not None else Daemon(config)
    while True:
        runner.install_signal_handlers()
        status = runner.run(once=once)
        new = runner.reload_config
        if new is None:
            return status
        try:
            runner = Daemon(new)
        except (ConfigError, ValueError, OSError) as exc:
            # The old daemon is gone (it checkpointed, or released and undid): the new one cannot start.
            log.error("reload: cannot start with %s: %s", new.source, exc)
            return 2
        log.info("reload: running with %s (mode %s)", new.source, new.mode)
