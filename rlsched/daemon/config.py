"""The daemon's TOML configuration: ``[backend]``, ``[agent]``, ``[metrics]``, ``[state]``, ``[gate]``, ``[leasing]``,
``[shadow]``, ``[log]``.

Every key is declared once, in :mod:`rlsched.config_schema` (type, default, check, doc), and read by its one
reader: a bad key is a one-line :class:`ConfigError` naming the file and the key.  The daemon reads its own
sections there (``[backend]`` kind, mode and poll_interval_s, ``[agent]``, ``[metrics]``, ``[state]``,
``[gate]``, ``[shadow]``, ``[log]``); the rest of ``[backend]`` belongs to the backend ``kind`` names and is read
by its config class, found through the registry (:func:`rlsched.backends.backend_config_from_table`), and
``[leasing]`` by :meth:`rlsched.leasing.LeasingConfig.from_table`.  The daemon knows no key of a backend.

This module adds the rules between keys and tables (issue 16):

- numbers are finite: ``nan`` and ``inf`` are refused wherever they appear (TOML allows both), policy
  parameters included;
- ``gate.stale_after_s`` exceeds the poll interval plus the longest one retried backend call
  (``retry_attempts × timeout_s`` plus the backoff pauses), so a retrying call cannot make the heartbeat stale;
  in gate mode it exceeds twice the poll interval, and the backend names what it gates;
- the metrics endpoint listens on a loopback address unless ``[metrics] allow_remote = true`` (then a
  warning is logged at start and printed by ``rlsched config check``);
- a learned agent needs ``[backend] vos``; keeping cores idle needs gate mode; leasing's reconcile loop runs
  no more often than the daemon's cycle.

The schema's own checks cover the rest: integers are integers (``retry_attempts = 2.5`` is refused, not
truncated), every path the daemon writes (``state.dir``, ``gate.heartbeat_file``, ``shadow.decision_log``,
``leasing.hook_log``, ``backend.state_file``) is absolute and outside the system directories of
:data:`rlsched.config_schema.SYSTEM_DIRS`, paths it reads are absolute, ``backend.poll_interval_s`` lies in
[:data:`~rlsched.config_schema.MIN_POLL_INTERVAL_S`, :data:`~rlsched.config_schema.MAX_POLL_INTERVAL_S`].
See ``docs/daemon.md`` and ``etc/rlsched.toml``.

A file must be whole (issue 24): it is UTF-8 TOML (a binary file or one nested too deeply is one line
naming the file, not a traceback), it is not empty, and a daemon's (``load_config(require_mode=True)``)
names ``[backend] mode`` explicitly, so that an empty or half-written file is refused instead of running
with every default.  On reload (SIGHUP) a file that drops
a table the running config set, or a key of the table the file ends with, is refused too
(:func:`reload_problem`): an editor or a config-management tool that writes the file in two steps must not
reset what the admin set.
"""

from __future__ import annotations

import ipaddress
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from rlsched.backends import UnknownBackendError, backend_config_from_table
from rlsched.backends.common.runner import RetryPolicy
from rlsched.config_schema import (
    AGENT,
    DAEMON_BACKEND,
    DEFAULT_METRICS_PORT,
    GATE,
    LOG,
    METRICS,
    SHADOW,
    STATE,
    TABLES,
    Section,
    non_finite_numbers,
    written_path,
)
from rlsched.config_schema import SYSTEM_DIRS as SYSTEM_DIRS  # re-exported: where the daemon never writes
from rlsched.config_schema import system_dir_of as system_dir_of
from rlsched.core.classify import VOMapping
from rlsched.core.live import LiveBackendConfig
from rlsched.core.objective import OBJECTIVES, Objective, ObjectiveError
from rlsched.core.policies import POLICIES, PolicyError, PolicySpec, entry, format_policy, resolve
from rlsched.daemon.decision_log import DecisionLogConfig
from rlsched.errors import RlschedError
from rlsched.leasing.config import LeasingConfig

Mode = Literal["shadow", "boost", "gate"]
MODES: tuple[Mode, ...] = ("shadow", "boost", "gate")
#: The daemon's default policy: interactive first, then shortest requested time, then FCFS.
DEFAULT_AGENT_KIND = "interactive-first-sjf"
#: ``[agent] kind`` values of earlier versions, and what to write instead.
RETIRED_AGENT_KINDS = {
    "fixed": 'kind = "interactive-first-sjf"',
    "sarsa": 'kind = "sarsa-esn" (or "sarsa-ffnn", "sarsa-table")',
    "fqi": 'kind = "fqi-esn" (or "fqi-ffnn", "fqi-table")',
}


class ConfigError(RlschedError, ValueError):
    """A bad configuration file: the message is one line naming the file and the key."""


@dataclass(frozen=True)
class AgentConfig:
    """``[agent]``: which policy decides (a name of the policy registry, :mod:`rlsched.core.policies`).

    - ``kind``: any registry policy that can run live (``rlsched sim policies`` lists them):
      rules (``interactive-first-sjf``, the default: interactive first, then shortest requested
      time, then first come; ``fcfs``, ``easy``, ``sjf``, ``easy-sjf``, ``interactive-first``,
      ``interactive-first-keepidle``, ``edf``) or learned policies (``sarsa-esn``, ``fqi-esn``,
      ``sarsa-ffnn``, …: P-grid §3.1–3.3 SARSA and P-fqi Alg. 1 fitted Q).
    - every other key is a parameter of that policy, checked by the registry (for the learned
      ones ``runtime_model`` — ``learned`` (the default), ``user-last2``, ``requested`` or ``estimated``
      live —, ``lam``, ``pretrain_decisions``, ``seed``, ``keep_idle_cores``).
    - ``model``: the path of a saved model (``rlsched sim run --policy NAME --save-model PATH``);
      the model carries its policy and parameters, and must have been built for the
      ``[backend] vos`` of this config.  Relative paths are relative to the config file.
    - ``objective`` (``bsld``, ``wait`` or ``W``) and ``class_weights`` (``{interactive = 3}``): what
      ``rlsched train`` and ``evaluate`` judge policies by (:mod:`rlsched.core.objective`).
    - ``allow_losing_model``: start a model whose verdict (``rlsched train``) is that a rule beats it;
      refused by default.
    """

    kind: str = DEFAULT_AGENT_KIND
    params: Mapping[str, Any] = field(default_factory=dict)
    model: str | None = None
    objective: Objective = field(default_factory=Objective)
    allow_losing_model: bool = False

    @property
    def spec(self) -> PolicySpec:
        """The configured policy, parameters checked and defaulted (a model file's spec is read at start)."""
        return resolve(PolicySpec(self.kind, dict(self.params)))

    @property
    def learning(self) -> bool:
        return self.model is not None or entry(self.kind).family == "learned"

    @property
    def label(self) -> str:
        """What runs: the policy with its non-default parameters, or the model file."""
        if self.model is not None:
            return f"model {self.model}"
        return format_policy(self.kind, dict(self.params))


@dataclass(frozen=True)
class GateConfig:
    """``[gate]``: the failsafe of gate mode (docs/design.md, Reliability).

    - ``heartbeat_file``: written atomically every cycle (pid, time, gated partitions); the watchdog
      ``plugins/rlsched-gate-watchdog`` releases every held job of the gated partitions when it is
      older than ``stale_after_s`` or missing.  Default: ``<state dir>/heartbeat.json``.
    - ``stale_after_s``: how old the heartbeat may get; must exceed the poll interval plus the longest
      cycle (a cycle whose commands time out takes ``retry_attempts × timeout_s`` and more).
    """

    heartbeat_file: str | None = None
    stale_after_s: float = 120.0


@dataclass(frozen=True)
class LogConfig:
    """``[log]``: ``level`` (``debug``, ``info`` — the default —, ``warning``, ``error``) and ``format``
    (``text``, the default, or ``json``: one JSON object a line with ``time``, ``level``, ``logger``,
    ``message``; see :mod:`rlsched.daemon.logs`).  ``rlsched -v``/``-vv`` can only lower the level."""

    level: str = "info"
    format: str = "text"


@dataclass(frozen=True)
class DaemonConfig:
    """The whole daemon configuration (see the module docstring)."""

    source: str
    mode: Mode = "shadow"
    poll_interval_s: float = 10.0
    backend: LiveBackendConfig = field(default_factory=lambda: backend_config_from_table({}))
    agent: AgentConfig = field(default_factory=AgentConfig)
    metrics_host: str = "127.0.0.1"
    metrics_port: int | None = DEFAULT_METRICS_PORT
    metrics_allow_remote: bool = False
    state_dir: str = "/var/lib/rlsched"
    checkpoint_every_s: float = 60.0
    gate: GateConfig = field(default_factory=GateConfig)
    leasing: LeasingConfig = field(default_factory=LeasingConfig)
    max_backoff_s: float = 300.0
    shadow: DecisionLogConfig = field(default_factory=DecisionLogConfig)
    log: LogConfig = field(default_factory=LogConfig)
    #: The tables and keys the file set, in file order (dotted: ``gate``, ``gate.stale_after_s``): what a
    #: reload must not drop (:func:`reload_problem`).
    keys: tuple[str, ...] = field(default=(), compare=False, repr=False)

    @property
    def metrics_remote(self) -> bool:
        """True when the exporter listens beyond loopback (allowed only with ``[metrics] allow_remote``)."""
        return self.metrics_port is not None and not is_loopback(self.metrics_host)

    @property
    def heartbeat_file(self) -> Path:
        return Path(self.gate.heartbeat_file or Path(self.state_dir) / "heartbeat.json")

    @property
    def model_file(self) -> Path:
        return Path(self.state_dir) / "agent.npz"

    @property
    def counters_file(self) -> Path:
        return Path(self.state_dir) / "daemon.json"

    def vo_mapping(self) -> VOMapping:
        """The account → VO mapping a live job's account goes through: the backend's; for a backend kind without
        the common one (a plugin), a VO of the list by its name and any other account the list's first."""
        mapping_of = getattr(self.backend, "vo_mapping", None)
        if callable(mapping_of):
            mapping: VOMapping = mapping_of()
            return mapping
        vos = tuple(self.backend.vos)
        return VOMapping(vos, self.backend.vo_shares, default_vo=vos[0] if vos else None)

    @property
    def predictor_file(self) -> Path:
        """What the runtime predictor of a ``runtime_model=user-last2`` or ``learned`` policy has learned."""
        return Path(self.state_dir) / "predictor.json"

    @property
    def decision_log_file(self) -> Path:
        """The decision log (``[shadow] decision_log``, default ``<state dir>/decisions.jsonl``)."""
        return self.shadow.path(self.state_dir)


def _err(source: str, key: str, message: str) -> ConfigError:
    return ConfigError(f"{source}: key {key!r}: {message}")


def _read(section: Section, data: Mapping[str, Any], source: str) -> dict[str, Any]:
    """The keys of ``section`` the file sets, checked by the schema (each problem a :class:`ConfigError`)."""
    return section.read(data.get(section.table, {}), source, error=ConfigError)


def check_written_path(source: str, key: str, value: str) -> str:
    """``value`` if it is an absolute path outside the system directories; else a one-line :class:`ConfigError`."""
    problem = written_path(value)
    if problem is not None:
        raise _err(source, key, problem)
    return value


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and the loopback addresses (127.0.0.0/8, ::1); names are not resolved (no DNS)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def worst_call_s(backend: LiveBackendConfig) -> float:
    """The longest one backend call can take: every attempt timing out, plus the backoff pauses between them.

    Read from the backend config's ``timeout_s`` and ``retry`` (a :class:`RetryPolicy`) when it has them."""
    timeout = getattr(backend, "timeout_s", None)
    if not isinstance(timeout, int | float):
        return 0.0
    retry = getattr(backend, "retry", None)
    if not isinstance(retry, RetryPolicy):
        return float(timeout)
    pauses = sum(retry.delay_s(k) for k in range(retry.attempts - 1))
    return retry.attempts * float(timeout) + pauses


def parse_listen(value: str) -> tuple[str, int | None]:
    """``"127.0.0.1:9400"`` → (host, port); ``""`` or ``"off"`` turns the exporter off.  The schema checked the
    form (:data:`rlsched.config_schema.LISTEN_ADDRESS`)."""
    if value in ("", "off"):
        return "127.0.0.1", None
    host, _, port = value.rpartition(":")
    return host.strip("[]") or "127.0.0.1", int(port)


def config_from_dict(data: Mapping[str, Any], source: str = "config") -> DaemonConfig:
    """Build a :class:`DaemonConfig` from parsed TOML (``source`` names the file in errors): each table by its
    owner's schema section, then the rules between tables."""
    _check_tables(data, source)
    own = DAEMON_BACKEND.complete(_read(DAEMON_BACKEND, data, source))
    mode, poll = own["mode"], own["poll_interval_s"]
    backend = _backend(data.get("backend", {}), source)
    agent = agent_config(data.get("agent", {}), source)
    _check_agent_fits(agent, backend, mode, source)
    host, port, allow_remote = _metrics(data, source)
    state = STATE.complete(_read(STATE, data, source))
    gate = _gate(GateConfig(**_read(GATE, data, source)), mode, poll, backend, source)
    try:
        leasing = LeasingConfig.from_table(data.get("leasing", {}), source)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    if leasing.enabled and leasing.reconcile_every_s < poll:
        raise _err(
            source,
            "leasing.reconcile_every_s",
            f"must be >= poll_interval_s ({poll:g} s): the reconcile loop runs inside a daemon cycle",
        )
    shadow = shadow_config(data.get("shadow", {}), source)
    log = LOG.complete(_read(LOG, data, source))
    return DaemonConfig(
        source=source,
        mode=mode,
        poll_interval_s=poll,
        backend=backend,
        agent=agent,
        metrics_host=host,
        metrics_port=port,
        metrics_allow_remote=allow_remote,
        state_dir=state["dir"],
        checkpoint_every_s=state["checkpoint_every_s"],
        gate=gate,
        leasing=leasing,
        shadow=shadow,
        log=LogConfig(level=log["level"].lower(), format=log["format"]),
        keys=tuple(_set_keys(data)),
    )


def _check_tables(data: Mapping[str, Any], source: str) -> None:
    """Only the schema's tables, each a table; no ``nan`` or ``inf`` anywhere (policy parameters included)."""
    for key, value in data.items():
        if key not in TABLES:
            raise _err(source, key, f"unknown section (known: {', '.join(sorted(TABLES))})")
        if not isinstance(value, Mapping):
            raise _err(source, key, "expected a table")
    for key, number in non_finite_numbers(data):
        raise _err(source, key, f"expected a finite number, got {number}")


def _backend(table: Mapping[str, Any], source: str) -> LiveBackendConfig:
    """``[backend]`` beyond the daemon's keys: read by the config class of the backend ``kind`` names."""
    try:
        return backend_config_from_table(table, source)
    except UnknownBackendError as exc:
        raise _err(source, "backend.kind", str(exc)) from None
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def _check_agent_fits(agent: AgentConfig, backend: LiveBackendConfig, mode: str, source: str) -> None:
    """A learned agent needs the backend's fixed VO list; keeping cores idle needs gate mode."""
    if agent.learning and not backend.vos:
        raise _err(
            source,
            "backend.vos",
            f"agent {agent.label!r} needs a fixed VO list (the width of its "
            "features); set [backend] vos and default_vo",
        )
    if mode != "gate" and agent.model is None and agent.params.get("keep_idle_cores"):
        raise _err(source, "agent.keep_idle_cores", "keeping cores idle needs gate mode")
    if mode != "gate" and agent.kind == "interactive-first-keepidle":
        raise _err(
            source, "agent.kind", "'interactive-first-keepidle' keeps cores idle by holding jobs: it needs gate mode"
        )


def _metrics(data: Mapping[str, Any], source: str) -> tuple[str, int | None, bool]:
    """``[metrics]``: (host, port or None, allow_remote); a non-loopback address needs ``allow_remote``."""
    metrics = METRICS.complete(_read(METRICS, data, source))
    host, port = parse_listen(metrics["listen"])
    if port is not None and not is_loopback(host) and not metrics["allow_remote"]:
        raise _err(
            source,
            "metrics.listen",
            f"{host!r} is not a loopback address: the exporter would be "
            "reachable from the network; set [metrics] allow_remote = true to "
            "mean it (and firewall the port), or listen on 127.0.0.1",
        )
    return host, port, metrics["allow_remote"]


def _gate(gate: GateConfig, mode: str, poll: float, backend: LiveBackendConfig, source: str) -> GateConfig:
    """``gate`` if its heartbeat limit fits the poll interval and the backend's slowest call, and gate mode's
    backend names what it gates."""
    # Whatever the mode: the watchdog releases gate holds whichever mode wrote the heartbeat, and the leasing
    # hooks refuse leases on a stale one.  One call retried to its end must not make the heartbeat stale.
    slowest = poll + worst_call_s(backend)
    if gate.stale_after_s <= slowest:
        raise _err(
            source,
            "gate.stale_after_s",
            f"must exceed poll_interval_s plus one backend call retried to "
            f"its end (retry_attempts x timeout_s + backoff = "
            f"{slowest - poll:g} s), i.e. {slowest:g} s, got "
            f"{gate.stale_after_s:g}: a slow but working daemon would "
            "look dead",
        )
    if mode == "gate":
        problem = backend.gate_problem()
        if problem is not None:
            raise _err(source, f"backend.{problem[0]}", problem[1])
        if gate.stale_after_s <= 2 * poll:
            raise _err(
                source,
                "gate.stale_after_s",
                f"must exceed twice poll_interval_s ({poll:g} s), or the watchdog releases jobs under a live daemon",
            )
    return gate


def _set_keys(data: Mapping[str, Any], prefix: str = "") -> Iterator[str]:
    """The dotted names of the tables and keys of parsed TOML (not into arrays or inline values)."""
    for key, value in data.items():
        name = f"{prefix}{key}"
        yield name
        if isinstance(value, Mapping):
            yield from _set_keys(value, f"{name}.")


#: Tables whose ``kind`` says what their other keys mean: when it changes, those keys may change freely.
_KINDED_TABLES = ("backend", "agent")


def reload_problem(running: DaemonConfig, new: DaemonConfig) -> str | None:
    """Why ``new`` (re-read on SIGHUP) must not replace ``running``, or None.

    A file caught half-written (an editor saving in two steps, a config-management tool writing it) reads
    as valid TOML with the rest at its defaults, which would silently undo the admin's settings (a gate
    daemon became a shadow one, issue 24).  Such a file has lost the tables after the cut and the keys at
    the end of the table it was cut in, so ``new`` is refused when it lacks a table ``running`` has, or a
    key ``running`` set in the table ``new`` ends with.  A key dropped from another table is a deliberate
    edit (its default applies).  To drop the last table's key, write its default, or restart the daemon.
    The keys of a table whose ``kind`` changed (another backend, another policy) are that kind's.
    """
    changed = {table for table in _KINDED_TABLES if getattr(running, table).kind != getattr(new, table).kind}
    new_keys = set(new.keys)
    tables = [key for key in running.keys if "." not in key and key not in new_keys]
    last = next((key for key in reversed(new.keys) if "." not in key), None)
    cut = [
        key
        for key in running.keys
        if last is not None and last not in changed and key.startswith(f"{last}.") and key not in new_keys
    ]
    shown = tables or cut  # a whole table gone: name the tables, not each of their keys
    if not shown:
        return None
    names = ", ".join(repr(key) for key in shown[:4]) + (f" and {len(shown) - 4} more" if len(shown) > 4 else "")
    what = ("table" if tables else "key") + ("s" if len(shown) > 1 else "")
    verb = "are" if len(shown) > 1 else "is"
    return (
        f"{new.source}: {what} {names} of the running config {verb} missing from the file (half-written?); "
        "write it again (its default value to mean the default), or restart the daemon to drop it"
    )


def shadow_config(table: Mapping[str, Any], source: str) -> DecisionLogConfig:
    """Check ``[shadow]`` (the decision log, :mod:`rlsched.daemon.decision_log`); one-line errors.  A relative
    ``decision_log`` is relative to the config file."""
    kw = SHADOW.read(table, source, error=ConfigError)
    log_path = kw.pop("decision_log", None)
    if log_path == "off":
        kw["enabled"] = False
    elif log_path is not None:
        path = Path(log_path)
        if not path.is_absolute() and Path(source).is_file():
            path = Path(source).resolve().parent / path
        kw["decision_log"] = check_written_path(source, "shadow.decision_log", str(path))
    if "modes" in kw:
        kw["modes"] = tuple(dict.fromkeys(kw["modes"]))
    return DecisionLogConfig(**kw)


def agent_config(table: Mapping[str, Any], source: str) -> AgentConfig:
    """Check ``[agent]``: its own keys by the schema, the others as parameters of the policy by the registry;
    one-line :class:`ConfigError` naming the key."""
    own = AGENT.read(table, source, error=ConfigError)
    kind: str = own.get("kind", DEFAULT_AGENT_KIND)
    model: str | None = own.get("model")
    found = _live_policy(kind, model, source)
    judging = _judging(own, source)
    params = {k: v for k, v in table.items() if k not in AGENT}
    if model is not None:
        if params:
            raise _err(
                source,
                f"agent.{sorted(params)[0]}",
                "a saved model carries its own parameters; remove the key or the model",
            )
        path = Path(model)
        if not path.is_absolute() and Path(source).is_file():
            path = Path(source).resolve().parent / path
        return AgentConfig(kind=kind, model=str(path), **judging)
    checked: dict[str, Any] = {}
    for key, value in params.items():
        try:
            checked[key] = found.param(key).coerce(kind, value)
        except PolicyError as exc:
            message = str(exc).removeprefix(f"policy {kind!r}: ").removeprefix(f"parameter {key!r}: ")
            raise _err(source, f"agent.{key}", message) from None
    if checked.get("runtime_model") == "oracle":
        raise _err(
            source,
            "agent.runtime_model",
            "'oracle' needs the actual runtimes, which only a simulator knows; use 'estimated' or 'requested'",
        )
    if checked.get("elastic"):
        raise _err(source, "agent.elastic", "the elastic pool runs only in the simulator")
    return AgentConfig(kind=found.name, params=checked, **judging)


def _live_policy(kind: str, model: str | None, source: str) -> Any:
    """The registry entry of ``[agent] kind``, if it can run live; retired names say what to write instead."""
    if kind in RETIRED_AGENT_KINDS:
        raise _err(source, "agent.kind", f"{kind!r} is no longer a policy name; write {RETIRED_AGENT_KINDS[kind]}")
    if model in ("esn", "ffnn"):
        raise _err(
            source,
            "agent.model",
            f"the Q-function is now part of the policy name: write kind = "
            f'"sarsa-{model}" (or "fqi-{model}"); model is the path of a saved '
            "model",
        )
    try:
        found = entry(kind)
    except PolicyError:
        raise _err(
            source,
            "agent.kind",
            f"unknown policy {kind!r} (known: {', '.join(n for n, e in POLICIES.items() if e.live)})",
        ) from None
    if not found.live:
        raise _err(source, "agent.kind", f"{kind!r} replays a trace's recorded schedule; it cannot run live")
    return found


def _judging(own: Mapping[str, Any], source: str) -> dict[str, Any]:
    """``[agent] objective``, ``class_weights`` and ``allow_losing_model`` (typed by the schema), checked."""
    name = own.get("objective", AGENT.default("objective"))
    try:
        objective = Objective(name, dict(own.get("class_weights", {})))
    except ObjectiveError as exc:
        raise _err(source, "agent.class_weights" if name in OBJECTIVES else "agent.objective", str(exc)) from None
    return {"objective": objective, "allow_losing_model": own.get("allow_losing_model", False)}


def load_config(path: str | Path, *, require_mode: bool = False) -> DaemonConfig:
    """Read and check a TOML config file; every problem is a one-line :class:`ConfigError`.

    ``require_mode``: the file is to run a daemon (start, reload, ``rlsched config check``), so it must name
    ``[backend] mode`` explicitly; readers of the site settings only (``history import --config``,
    ``train``/``evaluate --config``) do not need it.  An empty file is refused either way.
    """
    source = str(path)
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise ConfigError(f"{source}: cannot read: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        # TOML is UTF-8: a binary file (or one in another encoding) is refused, not a traceback.
        raise ConfigError(
            f"{source}: not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start}): a TOML config is UTF-8"
        ) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source}: not valid TOML: {' '.join(str(exc).split())}") from None
    except RecursionError:
        raise ConfigError(f"{source}: not valid TOML: arrays or tables nested too deeply") from None
    if not data:
        raise ConfigError(
            f"{source}: the file is empty: a config names at least [backend] mode (shadow, boost or gate)"
        )
    backend = data.get("backend")
    if require_mode and (not isinstance(backend, Mapping) or "mode" not in backend):
        # Explicit, never the default: a file cut short before its mode would otherwise run in shadow mode.
        raise _err(
            source,
            "backend.mode",
            "missing: a config names its mode explicitly (shadow, boost or gate); is the file half-written?",
        )
    try:
        return config_from_dict(data, source)
    except RecursionError:
        raise ConfigError(f"{source}: values nested too deeply") from None
