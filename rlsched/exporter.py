"""The Prometheus exporter of the rlsched daemon (prometheus-client), on 127.0.0.1 by default.

Names follow the Slurm exporters' conventions where they overlap (docs/slurm.md): an ``rlsched_`` prefix,
``_total`` for counters, ``_seconds`` for durations, labels ``partition``, ``account`` and ``class``.

The metrics (types and labels; ``docs/daemon.md`` has the full table):

- ``rlsched_state{feature}`` (gauge): the state vector of P-grid §3.2, normalised as the agent sees it;
- ``rlsched_queue_jobs{partition,account,class,state}`` (gauge): jobs ``pending``, ``held``, ``running``;
- ``rlsched_decisions_total{kind}``: the agent's decisions (``boost`` = one ranking, ``release``/``hold`` =
  one per job, ``lease_cap``), counted in shadow mode too;
- ``rlsched_actions_total{kind}``: changes made in Slurm (``nice_set``, ``nice_restored``, ``hold``,
  ``release``, ``node_drain``, ``node_resume``);
- ``rlsched_reward`` (summary, ``_count``/``_sum``): rewards R_s received by the learner (P-grid §3.2);
- ``rlsched_job_responsiveness{class}`` (summary): W = run / (run + wait) of finished jobs (P-grid Eq. 1);
- ``rlsched_finished_jobs_total{class}``; ``rlsched_chosen_job_q_value`` (gauge): Q(s, a) of the last
  chosen job (learning agents);
- ``rlsched_cycle_seconds`` (histogram), ``rlsched_cycle_phase_seconds{phase}`` (gauge: ``view``,
  ``decide``, ``act``, ``learn``, ``checkpoint``, ``export`` of the last cycle), ``rlsched_cycles_total``,
  ``rlsched_cycle_failures_total{phase}``;
- ``rlsched_backend_errors_total{kind}`` (``timeout``, ``nonzero_exit``, ``parse_error``,
  ``vanished_job``, …; retried ones included), ``rlsched_backend_up`` (gauge);
- ``rlsched_decision_log_lines_total{outcome}``: decision log appends, ``written`` or ``failed`` (docs/daemon.md);
- ``rlsched_checkpoint_age_seconds`` (gauge), ``rlsched_mode{mode}`` (gauge, 1 for the daemon's mode);
- ``rlsched_build_info{version}`` (gauge, always 1): the running rlsched version;
- ``rlsched_last_successful_cycle_timestamp_seconds`` (gauge, seconds since the epoch; 0 until the first
  cycle without a failed phase): ``time() - …`` is how long the daemon has not worked;
- ``rlsched_model_verdict{outcome,rule,objective}`` (gauge, 1): the verdict ``rlsched train`` wrote into
  the ``[agent] model`` — ``beats``, ``ties`` or ``loses`` against the best rule ``rule`` on the validation
  window by ``objective``, ``none`` for a model without one, ``no_model`` when a registry policy runs — and
  ``rlsched_model_verdict_gain`` (gauge): the model's relative gain over that rule (> 0: the model is
  better; NaN without a verdict);
- ``rlsched_runtime_predictor_restored`` (gauge, only for a policy with ``runtime_model=user-last2`` or
  ``learned``): 1 when its runtime predictor went on at start from ``predictor.json``, 0 when it started cold;
- ``rlsched_held_job_oldest_seconds`` (gauge): how long the oldest held pending job of the last view has
  waited since its submission (0 when none is held) — in gate mode, the longest a gated job has been kept;
- leasing (served when ``[leasing] enabled``): ``rlsched_lease_cap{source}`` (gauge: ``enforced`` V and
  the ``policy``, ``hard`` and ``budget`` bounds it is the minimum of), ``rlsched_lease_nodes{state}``
  (``leased``, ``busy``, ``powering_up``, ``excluded``), ``rlsched_lease_node_seconds_total``,
  ``rlsched_lease_cost_total``, ``rlsched_lease_budget_left_seconds`` (node-seconds left today, base units),
  ``rlsched_lease_budget_left_node_hours`` (deprecated: the same in node-hours, kept for existing dashboards;
  it goes in a later release), ``rlsched_lease_budget_exhausted``,
  ``rlsched_lease_enforcing``, ``rlsched_lease_reconcile_actions_total{kind}`` and
  ``rlsched_lease_provider_errors_total{kind}``.

The alert rules of ``etc/prometheus/rlsched-alerts.yml`` use these names (``tests/test_alerts.py`` runs
``promtool test rules`` on them).

Counters live in :class:`Counters`, which the daemon checkpoints with its model, so they continue across
restarts instead of dropping to zero.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry, Gauge, Histogram, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric, SummaryMetricFamily
from prometheus_client.registry import Collector

from rlsched import __version__
from rlsched.core.view import ClusterView
from rlsched.leasing.reconcile import RECONCILE_KINDS

PREFIX = "rlsched_"
PHASES = ("view", "decide", "act", "learn", "lease", "checkpoint", "export")
CLASS_NAMES = ("batch", "interactive")  # JobClass.BATCH = 0, JobClass.INTERACTIVE = 1
#: Label values served at 0 before they first happen, so that rate() and the dashboard see every series.
DECISION_KINDS = ("boost", "release", "hold", "lease_cap")
ACTION_KINDS = ("nice_set", "nice_restored", "hold", "release", "node_drain", "node_resume", "node_power_down")
LEASE_NODE_STATES = ("leased", "busy", "powering_up", "excluded")
LEASE_CAP_SOURCES = ("enforced", "policy", "hard", "budget")
ERROR_KINDS = ("timeout", "nonzero_exit", "parse_error", "missing_command", "os_error", "vanished_job")

#: Every metric name the exporter serves (a test checks the Grafana dashboard against it).
METRIC_NAMES = frozenset(
    {
        "rlsched_state",
        "rlsched_queue_jobs",
        "rlsched_decisions_total",
        "rlsched_actions_total",
        "rlsched_reward_count",
        "rlsched_reward_sum",
        "rlsched_job_responsiveness_count",
        "rlsched_job_responsiveness_sum",
        "rlsched_finished_jobs_total",
        "rlsched_chosen_job_q_value",
        "rlsched_cycle_seconds_bucket",
        "rlsched_cycle_seconds_count",
        "rlsched_cycle_seconds_sum",
        "rlsched_cycle_phase_seconds",
        "rlsched_cycles_total",
        "rlsched_cycle_failures_total",
        "rlsched_backend_errors_total",
        "rlsched_backend_up",
        "rlsched_checkpoint_age_seconds",
        "rlsched_mode",
        "rlsched_lease_cap",
        "rlsched_lease_nodes",
        "rlsched_lease_node_seconds_total",
        "rlsched_lease_cost_total",
        "rlsched_lease_budget_left_node_hours",
        "rlsched_lease_budget_exhausted",
        "rlsched_lease_enforcing",
        "rlsched_lease_reconcile_actions_total",
        "rlsched_lease_provider_errors_total",
        "rlsched_decision_log_lines_total",
        "rlsched_build_info",
        "rlsched_last_successful_cycle_timestamp_seconds",
        "rlsched_held_job_oldest_seconds",
        "rlsched_lease_budget_left_seconds",
        "rlsched_model_verdict",
        "rlsched_model_verdict_gain",
    }
)
#: Outcomes of a decision log append (``rlsched_decision_log_lines_total{outcome}``).
DECISION_LOG_OUTCOMES = ("written", "failed")


@dataclass
class Counters:
    """Everything that only grows; checkpointed by the daemon (:meth:`to_dict` / :meth:`from_dict`)."""

    cycles: int = 0
    decisions: Counter[str] = field(default_factory=Counter)
    actions: Counter[str] = field(default_factory=Counter)
    backend_errors: Counter[str] = field(default_factory=Counter)
    cycle_failures: Counter[str] = field(default_factory=Counter)
    rewards: int = 0
    reward_sum: float = 0.0
    finished: Counter[str] = field(default_factory=Counter)
    responsiveness_sum: dict[str, float] = field(default_factory=dict)
    decision_log: Counter[str] = field(default_factory=Counter)

    def to_dict(self) -> dict[str, Any]:
        return {
            "cycles": self.cycles,
            "decisions": dict(self.decisions),
            "actions": dict(self.actions),
            "backend_errors": dict(self.backend_errors),
            "cycle_failures": dict(self.cycle_failures),
            "rewards": self.rewards,
            "reward_sum": self.reward_sum,
            "finished": dict(self.finished),
            "responsiveness_sum": dict(self.responsiveness_sum),
            "decision_log": dict(self.decision_log),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str = "counters") -> Counters:
        """Inverse of :meth:`to_dict`; a bad entry is a one-line error naming the key."""
        out = cls()
        for key, value in data.items():
            if key not in out.__dataclass_fields__:
                raise ValueError(f"{source}: unknown key {key!r}")
            try:
                if key == "responsiveness_sum":
                    out.responsiveness_sum = {str(k): float(v) for k, v in dict(value).items()}
                elif isinstance(getattr(out, key), Counter):
                    setattr(out, key, Counter({str(k): int(v) for k, v in dict(value).items()}))
                elif key == "reward_sum":
                    out.reward_sum = float(value)
                else:
                    setattr(out, key, int(value))
            except (TypeError, ValueError) as exc:
                raise ValueError(f"{source}: key {key!r}: {exc}") from None
        return out


class _CounterCollector(Collector):
    """Serves the monotonic values of a :class:`Counters` (read under the exporter's lock)."""

    def __init__(self, counters: Callable[[], Counters], lock: threading.Lock) -> None:
        self._counters = counters
        self._lock = lock

    def collect(self) -> Iterable[Metric]:
        with self._lock:
            c = self._counters()
            yield _by_label(
                "decisions",
                "Job decisions of the agent by kind (shadow mode included).",
                "kind",
                c.decisions,
                DECISION_KINDS,
            )
            yield _by_label("actions", "Changes rlsched made in Slurm by kind.", "kind", c.actions, ACTION_KINDS)
            yield _by_label(
                "backend_errors",
                "Backend failures by kind, retried ones included.",
                "kind",
                c.backend_errors,
                ERROR_KINDS,
            )
            yield _by_label(
                "cycle_failures", "Cycles cut short by an error, by phase.", "phase", c.cycle_failures, PHASES
            )
            yield _by_label(
                "finished_jobs",
                "Finished jobs seen by the completion feed, by class.",
                "class",
                c.finished,
                CLASS_NAMES,
            )
            yield _by_label(
                "decision_log_lines",
                "Decision log appends by outcome (failed: disk full, unwritable; the loop goes on).",
                "outcome",
                c.decision_log,
                DECISION_LOG_OUTCOMES,
            )
            cycles = CounterMetricFamily(PREFIX + "cycles", "Daemon cycles run.")
            cycles.add_metric([], c.cycles)
            yield cycles
            reward = SummaryMetricFamily(PREFIX + "reward", "Rewards R_s received by the learner (P-grid §3.2).")
            reward.add_metric([], c.rewards, c.reward_sum)
            yield reward
            w = SummaryMetricFamily(
                PREFIX + "job_responsiveness",
                "W = run / (run + wait) of finished jobs (P-grid Eq. 1).",
                labels=["class"],
            )
            for cls in sorted(set(CLASS_NAMES) | set(c.finished)):
                w.add_metric([cls], c.finished[cls], c.responsiveness_sum.get(cls, 0.0))
            yield w


class _LeaseCollector(Collector):
    """Serves the leasing controller's snapshot (``LeasingService.snapshot``); nothing while it is off."""

    def __init__(self, snapshot: Callable[[], Mapping[str, Any] | None], lock: threading.Lock) -> None:
        self._snapshot = snapshot
        self._lock = lock

    def collect(self) -> Iterable[Metric]:
        with self._lock:
            snap = self._snapshot()
            if snap is None:
                return
            cap = GaugeMetricFamily(
                PREFIX + "lease_cap",
                "Cap V on leased cloud nodes: the enforced value and "
                "the policy, hard and budget bounds it is the minimum of.",
                labels=["source"],
            )
            for source, key in zip(LEASE_CAP_SOURCES, ("cap", "policy_cap", "hard_cap", "budget_cap"), strict=True):
                if snap.get(key) is not None:
                    cap.add_metric([source], float(min(snap[key], 2**31 - 1)))
            yield cap
            nodes = GaugeMetricFamily(PREFIX + "lease_nodes", "Managed cloud nodes by state.", labels=["state"])
            for state in LEASE_NODE_STATES:
                nodes.add_metric([state], float(snap.get(state, 0)))
            yield nodes
            node_s = CounterMetricFamily(PREFIX + "lease_node_seconds", "Leased cloud node-seconds charged.")
            node_s.add_metric([], float(snap["node_seconds_total"]))
            yield node_s
            cost = CounterMetricFamily(PREFIX + "lease_cost", "Cost of the leased node-seconds (price_per_node_hour).")
            cost.add_metric([], float(snap["cost_total"]))
            yield cost
            left_s = float(snap["budget_left_s"])
            for name, help_text, value in (
                ("lease_budget_left_seconds", "Node-seconds left in today's (UTC) leasing budget.", left_s),
                (
                    "lease_budget_left_node_hours",
                    "Deprecated: rlsched_lease_budget_left_seconds / 3600.",
                    left_s / 3600.0,
                ),
                (
                    "lease_budget_exhausted",
                    "1 when today's budget allows no new lease.",
                    float(bool(snap["budget_exhausted"])),
                ),
                ("lease_enforcing", "1 when the cap is enforced (0 in shadow mode).", float(bool(snap["enforcing"]))),
            ):
                gauge = GaugeMetricFamily(PREFIX + name, help_text)
                gauge.add_metric([], value)
                yield gauge
            yield _by_label(
                "lease_reconcile_actions",
                "Reconcile loop actions by kind.",
                "kind",
                snap.get("reconcile", {}),
                RECONCILE_KINDS,
            )
            yield _by_label(
                "lease_provider_errors",
                "Provider command failures by kind.",
                "kind",
                snap.get("provider_errors", {}),
                ERROR_KINDS,
            )


def _by_label(
    name: str, help_text: str, label: str, values: Mapping[str, float], known: Iterable[str]
) -> CounterMetricFamily:
    family = CounterMetricFamily(PREFIX + name, help_text, labels=[label])
    for key in sorted(set(known) | set(values)):
        family.add_metric([key], values.get(key, 0))
    return family


QueueKey = tuple[str, str, str, str]  # partition, account, class, state


class Exporter:
    """The daemon's metrics in their own registry; :meth:`serve` starts the HTTP endpoint.

    The daemon updates the gauges once per cycle; counters are read from ``counters()`` at scrape time.
    """

    def __init__(
        self,
        state_names: Sequence[str],
        counters: Callable[[], Counters],
        mode: str,
        registry: CollectorRegistry | None = None,
        clock: Callable[[], float] = time.time,
        lease_snapshot: Callable[[], Mapping[str, Any] | None] | None = None,
        verdict: Mapping[str, Any] | None = None,
        model: bool = False,
        predictor_restored: bool | None = None,
    ) -> None:
        self.registry = registry or CollectorRegistry(auto_describe=True)
        self.lock = threading.Lock()
        self.clock = clock
        self.state_names = tuple(state_names)
        self.last_checkpoint_s: float | None = None
        r = self.registry
        self.state = Gauge(
            PREFIX + "state", "State vector of the scheduling MDP (P-grid §3.2), normalised.", ["feature"], registry=r
        )
        self.queue = Gauge(
            PREFIX + "queue_jobs",
            "Jobs by partition, account, class and state.",
            ["partition", "account", "class", "state"],
            registry=r,
        )
        self.q_value = Gauge(PREFIX + "chosen_job_q_value", "Q(s, a) of the last chosen job.", registry=r)
        self.cycle = Histogram(
            PREFIX + "cycle_seconds",
            "Duration of a daemon cycle.",
            registry=r,
            buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120),
        )
        self.phase = Gauge(
            PREFIX + "cycle_phase_seconds", "Duration of each phase of the last cycle.", ["phase"], registry=r
        )
        self.backend_up = Gauge(
            PREFIX + "backend_up", "1 when the last view of the batch system succeeded.", registry=r
        )
        age = Gauge(PREFIX + "checkpoint_age_seconds", "Seconds since the last checkpoint was written.", registry=r)
        age.set_function(self._checkpoint_age)
        Gauge(PREFIX + "build_info", "The running rlsched version (always 1).", ["version"], registry=r).labels(
            version=__version__
        ).set(1.0)
        self.last_success = Gauge(
            PREFIX + "last_successful_cycle_timestamp_seconds",
            "When the last cycle without a failed phase ended (seconds since the epoch; 0: none yet).",
            registry=r,
        )
        self.held_oldest = Gauge(
            PREFIX + "held_job_oldest_seconds",
            "Wait since submission of the oldest held pending job of the last view (0: none held).",
            registry=r,
        )
        modes = Gauge(PREFIX + "mode", "1 for the daemon's mode.", ["mode"], registry=r)
        for name in ("shadow", "boost", "gate"):
            modes.labels(mode=name).set(1.0 if name == mode else 0.0)
        self._export_verdict(verdict, model)
        if predictor_restored is not None:  # only for a policy whose runtime predictor learns (docs/daemon.md)
            Gauge(
                PREFIX + "runtime_predictor_restored",
                "1 when the runtime predictor went on at start from what the previous run learned, 0 when it "
                "started cold.",
                registry=r,
            ).set(1.0 if predictor_restored else 0.0)
        r.register(_CounterCollector(counters, self.lock))
        if lease_snapshot is not None:
            r.register(_LeaseCollector(lease_snapshot, self.lock))
        self._queue_keys: set[QueueKey] = set()
        self.server: Any = None

    def _export_verdict(self, verdict: Mapping[str, Any] | None, model: bool) -> None:
        """The loaded model's verdict (set once: a model does not change under a running daemon)."""
        v = verdict or {"outcome": "none" if model else "no_model"}
        objective = v.get("objective")
        Gauge(
            PREFIX + "model_verdict",
            "The model's verdict (rlsched train) against the best rule on its "
            "validation window: outcome beats/ties/loses (none: a model without one; no_model: a registry "
            "policy runs).",
            ["outcome", "rule", "objective"],
            registry=self.registry,
        ).labels(
            outcome=str(v.get("outcome", "none")),
            rule=str(v.get("rule", "")),
            objective=str(objective.get("name", "")) if isinstance(objective, Mapping) else "",
        ).set(1.0)
        gain = v.get("gain")
        Gauge(
            PREFIX + "model_verdict_gain",
            "The model's relative gain over the best rule on validation (> 0: the model is better; NaN: no verdict).",
            registry=self.registry,
        ).set(float(gain) if isinstance(gain, int | float) and not isinstance(gain, bool) else float("nan"))

    def _checkpoint_age(self) -> float:
        return float("nan") if self.last_checkpoint_s is None else max(self.clock() - self.last_checkpoint_s, 0.0)

    def set_state(self, values: Sequence[float]) -> None:
        for name, value in zip(self.state_names, values, strict=True):
            self.state.labels(feature=name).set(float(value))

    def set_queue(self, counts: Mapping[QueueKey, int]) -> None:
        """Replace the queue sizes; label sets that emptied are dropped, not left at their last value."""
        for key in self._queue_keys - set(counts):
            self.queue.remove(*key)
        for key, n in counts.items():
            self.queue.labels(*key).set(n)
        self._queue_keys = set(counts)

    def set_phases(self, seconds: Mapping[str, float]) -> None:
        for name in PHASES:
            self.phase.labels(phase=name).set(seconds.get(name, 0.0))

    def cycle_finished(self, view: ClusterView | None, failed: bool) -> None:
        """After each cycle: the last-success time (a cycle with no failed phase) and the oldest held job."""
        if not failed:
            self.last_success.set(self.clock())
        if view is None:
            return
        pend = view.pending
        held = pend.held.astype(bool)
        oldest = float((view.time_s - pend.submit_s[held]).max()) if held.any() else 0.0
        self.held_oldest.set(max(oldest, 0.0))

    def serve(self, host: str, port: int) -> int:
        """Start the HTTP endpoint (a daemon thread); returns the port (useful with port 0).

        A busy port or an address that is not this host's is an :class:`OSError` whose message is one line
        naming ``metrics.listen`` (the command line prints it as is)."""
        try:
            server, _ = start_http_server(port, addr=host, registry=self.registry)
        except OSError as exc:
            reason = exc.strerror or str(exc)
            raise OSError(exc.errno, f"key 'metrics.listen': cannot listen on {host}:{port}: {reason}") from None
        self.server = server
        return int(server.server_port)

    def close(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None
