"""The daemon's TOML configuration: ``[backend]``, ``[agent]``, ``[metrics]``, ``[state]``, ``[gate]``, ``[leasing]``,
``[shadow]``, ``[log]``.

Every key is checked; a bad one is a one-line :class:`ConfigError` naming the file and the key.  Checks that
hold for every section (issue 16):

- numbers are finite: ``nan`` and ``inf`` are refused wherever they appear (TOML allows both);
- integers are integers (``retry_attempts = 2.5`` is refused, not truncated);
- every path the daemon writes (``state.dir``, ``gate.heartbeat_file``, ``shadow.decision_log``,
  ``leasing.hook_log``, ``backend.state_file``) is absolute and outside the system directories of
  :data:`SYSTEM_DIRS`; ``backend.bin_dir`` is absolute (a relative one would depend on the working directory);
- ``backend.poll_interval_s`` lies in [:data:`MIN_POLL_INTERVAL_S`, :data:`MAX_POLL_INTERVAL_S`];
- ``gate.stale_after_s`` exceeds the poll interval plus the longest one retried backend call
  (``retry_attempts × timeout_s`` plus the backoff pauses), so a retrying call cannot make the heartbeat stale;
- the metrics endpoint listens on a loopback address unless ``[metrics] allow_remote = true`` (then a
  warning is logged at start and printed by ``rlsched config check``).  The
``[backend]`` table beyond ``mode`` and ``poll_interval_s`` belongs to the backend ``kind`` names
(``slurm`` by default) and is checked by its config class, found through the registry
(:func:`rlsched.backends.backend_config_from_table`; Slurm's is
:meth:`rlsched.backends.slurm.config.SlurmBackendConfig.from_table`).  See ``docs/daemon.md`` and
``etc/rlsched.toml``.  ``[leasing]`` is checked by :meth:`rlsched.leasing.LeasingConfig.from_table`.

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
import math
import os
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from rlsched.backends import UnknownBackendError, backend_config_from_table
from rlsched.backends.common.runner import RetryPolicy
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
DEFAULT_METRICS_PORT = 9400
#: The shortest poll interval: each cycle runs several batch-system commands (squeue, sinfo, sacct, …), and
#: a site's controller serves every user's commands too.
MIN_POLL_INTERVAL_S = 1.0
#: The longest poll interval (one hour): beyond it the heartbeat and the gate are meaningless.
MAX_POLL_INTERVAL_S = 3600.0
#: Where the daemon never writes: the operating system's own trees and the package managers' databases.
#: A path inside one (after resolving symbolic links) is refused for every file the daemon writes.
SYSTEM_DIRS: tuple[str, ...] = (
    "/etc", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/boot", "/proc", "/sys", "/dev",
    "/snap", "/var/lib/dpkg", "/var/lib/apt", "/var/lib/rpm", "/var/lib/dnf", "/var/lib/yum",
    "/var/cache/apt", "/var/spool/cron", "/var/spool/slurm", "/var/spool/pbs", "/var/lib/slurm",
)
#: ``[log] level`` values (Python's logging level names, lower case) and ``[log] format`` values.
LOG_LEVELS = ("debug", "info", "warning", "error")
LOG_FORMATS = ("text", "json")


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
      ones ``runtime_model`` — ``estimated`` or ``requested`` live —, ``lam``,
      ``pretrain_decisions``, ``seed``, ``keep_idle_cores``).
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
      ``plugins/slurm/rlsched-gate-watchdog`` releases every held job of the gated partitions when it is
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

    @property
    def decision_log_file(self) -> Path:
        """The decision log (``[shadow] decision_log``, default ``<state dir>/decisions.jsonl``)."""
        return self.shadow.path(self.state_dir)


def _err(source: str, key: str, message: str) -> ConfigError:
    return ConfigError(f"{source}: key {key!r}: {message}")


def _take(table: Mapping[str, Any], source: str, section: str,
          spec: Mapping[str, type | tuple[type, ...]]) -> dict[str, Any]:
    """Checked copies of the keys of ``table`` named in ``spec`` (unknown keys are errors)."""
    out: dict[str, Any] = {}
    for key, value in table.items():
        name = f"{section}.{key}"
        if key not in spec:
            raise _err(source, name, f"unknown key (known: {', '.join(sorted(spec))})")
        expected = spec[key]
        if isinstance(value, bool) and expected is not bool:
            raise _err(source, name, f"expected {_type_name(expected)}, got a boolean")
        if not isinstance(value, expected):
            raise _err(source, name, f"expected {_type_name(expected)}, got {type(value).__name__}")
        out[key] = float(value) if isinstance(expected, tuple) and isinstance(value, int | float) else value
    return out


def _type_name(expected: type | tuple[type, ...]) -> str:
    if isinstance(expected, tuple):
        return "a number"
    names: dict[type, str] = {str: "a string", int: "an integer", bool: "true or false"}
    return names.get(expected, expected.__name__)


def _positive(source: str, key: str, value: float) -> None:
    if not value > 0:
        raise _err(source, key, f"must be > 0, got {value:g}")


def _finite_numbers(data: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, float]]:
    """Every ``nan`` or ``inf`` in the parsed TOML, as (dotted key, value); lists included (``key[2]``)."""
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            yield from _finite_numbers(value, f"{name}.")
        elif isinstance(value, list):
            for i, item in enumerate(value):
                if isinstance(item, float) and not math.isfinite(item):
                    yield f"{name}[{i}]", item
                elif isinstance(item, Mapping):
                    yield from _finite_numbers(item, f"{name}[{i}].")
        elif isinstance(value, float) and not math.isfinite(value):
            yield name, value


def system_dir_of(path: str | Path) -> str | None:
    """The entry of :data:`SYSTEM_DIRS` that holds ``path`` (symbolic links resolved), or None.

    ``/`` itself counts as a system directory: a daemon must not write its files at the root."""
    resolved = os.path.realpath(path)
    if resolved == "/":
        return "/"
    for folder in SYSTEM_DIRS:
        real = os.path.realpath(folder)
        for root in dict.fromkeys((folder, real)):
            if resolved == root or resolved.startswith(root.rstrip("/") + "/"):
                return folder
    return None


def check_written_path(source: str, key: str, value: str) -> str:
    """``value`` if it is an absolute path outside the system directories; else a one-line :class:`ConfigError`."""
    if not value:
        raise _err(source, key, "expected a path, got an empty string")
    if "\0" in value:
        raise _err(source, key, "the path holds a NUL character")
    if not os.path.isabs(value):
        raise _err(source, key, f"expected an absolute path, got {value!r}")
    system = system_dir_of(value)
    if system is not None:
        raise _err(source, key, f"{value!r} lies in the system directory {system}: rlsched writes there; choose "
                                "a directory of its own (e.g. /var/lib/rlsched, /var/log/rlsched)")
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


def parse_listen(source: str, value: str) -> tuple[str, int | None]:
    """``"127.0.0.1:9400"`` → (host, port); ``""`` or ``"off"`` turns the exporter off."""
    if value in ("", "off"):
        return "127.0.0.1", None
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdecimal() or not 0 <= int(port) <= 65535:
        raise _err(source, "metrics.listen", f"expected HOST:PORT, got {value!r}")
    host = host.strip("[]") or "127.0.0.1"
    if not host.isprintable() or any(c.isspace() for c in host):
        raise _err(source, "metrics.listen", f"expected HOST:PORT, got {value!r}")
    return host, int(port)


def config_from_dict(data: Mapping[str, Any], source: str = "config") -> DaemonConfig:
    """Build a :class:`DaemonConfig` from parsed TOML (``source`` names the file in errors)."""
    sections = {"backend", "agent", "metrics", "state", "gate", "leasing", "shadow", "log"}
    for key, value in data.items():
        if key not in sections:
            raise _err(source, key, f"unknown section (known: {', '.join(sorted(sections))})")
        if not isinstance(value, Mapping):
            raise _err(source, key, "expected a table")
    for key, value in _finite_numbers(data):
        raise _err(source, key, f"expected a finite number, got {value}")
    backend_table = dict(data.get("backend", {}))
    mode = backend_table.get("mode", "shadow")
    if mode not in MODES:
        raise _err(source, "backend.mode", f"expected one of {', '.join(MODES)}, got {mode!r}")
    poll = backend_table.get("poll_interval_s", 10.0)
    if isinstance(poll, bool) or not isinstance(poll, int | float):
        raise _err(source, "backend.poll_interval_s", f"expected a number, got {poll!r}")
    if not MIN_POLL_INTERVAL_S <= float(poll) <= MAX_POLL_INTERVAL_S:
        raise _err(source, "backend.poll_interval_s", f"must lie in [{MIN_POLL_INTERVAL_S:g}, "
                                                      f"{MAX_POLL_INTERVAL_S:g}] seconds, got {float(poll):g}")
    for key in ("bin_dir", "slurm_conf", "jobcomp_path"):     # read, not written: absolute is enough
        value = backend_table.get(key)
        if isinstance(value, str) and not os.path.isabs(value):
            raise _err(source, f"backend.{key}", f"expected an absolute path, got {value!r}")
    if isinstance(backend_table.get("state_file"), str):
        check_written_path(source, "backend.state_file", backend_table["state_file"])
    try:
        backend = backend_config_from_table(backend_table, f"{source}: [backend]")
    except UnknownBackendError as exc:
        raise _err(source, "backend.kind", str(exc)) from None
    except ValueError as exc:
        raise ConfigError(str(exc)) from None

    agent = agent_config(data.get("agent", {}), source)
    if agent.learning and not backend.vos:
        raise _err(source, "backend.vos", f"agent {agent.label!r} needs a fixed VO list (the width of its "
                                          "features); set [backend] vos and default_vo")
    if mode != "gate" and agent.model is None and agent.params.get("keep_idle_cores"):
        raise _err(source, "agent.keep_idle_cores", "keeping cores idle needs gate mode")
    if mode != "gate" and agent.kind == "interactive-first-keepidle":
        raise _err(source, "agent.kind", "'interactive-first-keepidle' keeps cores idle by holding jobs: it "
                                         "needs gate mode")

    metrics_kw = _take(data.get("metrics", {}), source, "metrics", {"listen": str, "allow_remote": bool})
    host, port = parse_listen(source, metrics_kw.get("listen", f"127.0.0.1:{DEFAULT_METRICS_PORT}"))
    allow_remote = bool(metrics_kw.get("allow_remote", False))
    if port is not None and not is_loopback(host) and not allow_remote:
        raise _err(source, "metrics.listen", f"{host!r} is not a loopback address: the exporter would be "
                                             "reachable from the network; set [metrics] allow_remote = true to "
                                             "mean it (and firewall the port), or listen on 127.0.0.1")

    state_kw = _take(data.get("state", {}), source, "state",
                     {"dir": str, "checkpoint_every_s": (int, float)})
    if "checkpoint_every_s" in state_kw and state_kw["checkpoint_every_s"] < 0:
        raise _err(source, "state.checkpoint_every_s", "must be >= 0")
    state_dir = check_written_path(source, "state.dir", state_kw.get("dir", DaemonConfig.state_dir))

    gate_kw = _take(data.get("gate", {}), source, "gate",
                    {"heartbeat_file": str, "stale_after_s": (int, float)})
    gate = GateConfig(**gate_kw)
    _positive(source, "gate.stale_after_s", gate.stale_after_s)
    if gate.heartbeat_file is not None:
        check_written_path(source, "gate.heartbeat_file", gate.heartbeat_file)
    # Whatever the mode: the watchdog releases gate holds whichever mode wrote the heartbeat, and the leasing
    # hooks refuse leases on a stale one.  One call retried to its end must not make the heartbeat stale.
    slowest = float(poll) + worst_call_s(backend)
    if gate.stale_after_s <= slowest:
        raise _err(source, "gate.stale_after_s", f"must exceed poll_interval_s plus one backend call retried to "
                                                  f"its end (retry_attempts x timeout_s + backoff = "
                                                  f"{slowest - float(poll):g} s), i.e. {slowest:g} s, got "
                                                  f"{gate.stale_after_s:g}: a slow but working daemon would "
                                                  "look dead")
    if mode == "gate":
        problem = backend.gate_problem()
        if problem is not None:
            raise _err(source, f"backend.{problem[0]}", problem[1])
        if gate.stale_after_s <= 2 * float(poll):
            raise _err(source, "gate.stale_after_s", f"must exceed twice poll_interval_s ({float(poll):g} s), "
                                                     f"or the watchdog releases jobs under a live daemon")
    try:
        leasing = LeasingConfig.from_table(data.get("leasing", {}), source)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    if leasing.hook_log is not None:
        check_written_path(source, "leasing.hook_log", leasing.hook_log)
    if leasing.enabled and leasing.reconcile_every_s < float(poll):
        raise _err(source, "leasing.reconcile_every_s", f"must be >= poll_interval_s ({float(poll):g} s): the "
                                                        "reconcile loop runs inside a daemon cycle")
    shadow = shadow_config(data.get("shadow", {}), source)
    log_kw = _take(data.get("log", {}), source, "log", {"level": str, "format": str})
    if log_kw.get("level", "info").lower() not in LOG_LEVELS:
        raise _err(source, "log.level", f"expected one of {', '.join(LOG_LEVELS)}, got {log_kw['level']!r}")
    if log_kw.get("format", "text") not in LOG_FORMATS:
        raise _err(source, "log.format", f"expected one of {', '.join(LOG_FORMATS)}, got {log_kw['format']!r}")
    log_config = LogConfig(level=log_kw.get("level", "info").lower(), format=log_kw.get("format", "text"))
    return DaemonConfig(source=source, mode=mode, poll_interval_s=float(poll), backend=backend, agent=agent,
                        metrics_host=host, metrics_port=port, metrics_allow_remote=allow_remote,
                        state_dir=state_dir,
                        checkpoint_every_s=float(state_kw.get("checkpoint_every_s", 60.0)), gate=gate,
                        leasing=leasing, shadow=shadow, log=log_config, keys=tuple(_set_keys(data)))


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
    cut = [key for key in running.keys if last is not None and last not in changed
           and key.startswith(f"{last}.") and key not in new_keys]
    shown = tables or cut             # a whole table gone: name the tables, not each of their keys
    if not shown:
        return None
    names = ", ".join(repr(key) for key in shown[:4]) + (f" and {len(shown) - 4} more" if len(shown) > 4 else "")
    what = ("table" if tables else "key") + ("s" if len(shown) > 1 else "")
    verb = "are" if len(shown) > 1 else "is"
    return (f"{new.source}: {what} {names} of the running config {verb} missing from the file (half-written?); "
            "write it again (its default value to mean the default), or restart the daemon to drop it")


def shadow_config(table: Mapping[str, Any], source: str) -> DecisionLogConfig:
    """Check ``[shadow]`` (the decision log, :mod:`rlsched.daemon.decision_log`); one-line errors."""
    kw = _take(table, source, "shadow", {"decision_log": str, "max_bytes": int, "keep": int, "max_jobs": int,
                                         "modes": list})
    out: dict[str, Any] = {}
    log_path = kw.get("decision_log")
    if log_path == "off":
        out["enabled"] = False
    elif log_path:
        path = Path(log_path)
        if not path.is_absolute() and Path(source).is_file():
            path = Path(source).resolve().parent / path
        out["decision_log"] = check_written_path(source, "shadow.decision_log", str(path))
    elif log_path == "":
        raise _err(source, "shadow.decision_log", 'expected a path, or "off"')
    for key, least in (("max_bytes", 1024), ("keep", 0), ("max_jobs", 1)):
        if key in kw:
            if kw[key] < least:
                raise _err(source, f"shadow.{key}", f"must be >= {least}, got {kw[key]}")
            out[key] = kw[key]
    if "modes" in kw:
        modes = kw["modes"]
        bad = [m for m in modes if m not in MODES]
        if bad or not modes:
            raise _err(source, "shadow.modes", f"expected a non-empty list of {', '.join(MODES)}, got {modes!r}")
        out["modes"] = tuple(dict.fromkeys(modes))
    return DecisionLogConfig(**out)


def agent_config(table: Mapping[str, Any], source: str) -> AgentConfig:
    """Check ``[agent]`` against the policy registry; one-line :class:`ConfigError` naming the key."""
    kind = table.get("kind", DEFAULT_AGENT_KIND)
    if not isinstance(kind, str):
        raise _err(source, "agent.kind", f"expected a string, got {type(kind).__name__}")
    if kind in RETIRED_AGENT_KINDS:
        raise _err(source, "agent.kind", f"{kind!r} is no longer a policy name; write {RETIRED_AGENT_KINDS[kind]}")
    model = table.get("model")
    if model is not None and not isinstance(model, str):
        raise _err(source, "agent.model", f"expected a string, got {type(model).__name__}")
    if model in ("esn", "ffnn"):
        raise _err(source, "agent.model", f"the Q-function is now part of the policy name: write kind = "
                                          f"\"sarsa-{model}\" (or \"fqi-{model}\"); model is the path of a saved "
                                          "model")
    try:
        found = entry(kind)
    except PolicyError:
        raise _err(source, "agent.kind", f"unknown policy {kind!r} (known: "
                                         f"{', '.join(n for n, e in POLICIES.items() if e.live)})") from None
    if not found.live:
        raise _err(source, "agent.kind", f"{kind!r} replays a trace's recorded schedule; it cannot run live")
    judging = _judging(table, source)
    params = {k: v for k, v in table.items() if k not in ("kind", "model", *JUDGING_KEYS)}
    if model is not None:
        if params:
            key = sorted(params)[0]
            raise _err(source, f"agent.{key}", "a saved model carries its own parameters; remove the key or "
                                               "the model")
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
        raise _err(source, "agent.runtime_model", "'oracle' needs the actual runtimes, which only a simulator "
                                                  "knows; use 'estimated' or 'requested'")
    if checked.get("elastic"):
        raise _err(source, "agent.elastic", "the elastic pool runs only in the simulator")
    return AgentConfig(kind=found.name, params=checked, **judging)


#: ``[agent]`` keys about judging a policy, not parameters of it.
JUDGING_KEYS = ("objective", "class_weights", "allow_losing_model")


def _judging(table: Mapping[str, Any], source: str) -> dict[str, Any]:
    """``[agent] objective``, ``class_weights`` and ``allow_losing_model``, checked (one-line errors)."""
    allow = table.get("allow_losing_model", False)
    if not isinstance(allow, bool):
        raise _err(source, "agent.allow_losing_model", f"expected true or false, got {allow!r}")
    name = table.get("objective", Objective().name)
    weights = table.get("class_weights", {})
    if not isinstance(name, str):
        raise _err(source, "agent.objective", f"expected a string, got {name!r}")
    if not isinstance(weights, Mapping):
        raise _err(source, "agent.class_weights", f"expected a table (e.g. {{interactive = 3}}), got {weights!r}")
    try:
        objective = Objective(name, dict(weights))
    except ObjectiveError as exc:
        raise _err(source, "agent.class_weights" if name in OBJECTIVES else "agent.objective", str(exc)) from None
    return {"objective": objective, "allow_losing_model": allow}


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
        raise ConfigError(f"{source}: not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start}): a TOML "
                          "config is UTF-8") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source}: not valid TOML: {' '.join(str(exc).split())}") from None
    except RecursionError:
        raise ConfigError(f"{source}: not valid TOML: arrays or tables nested too deeply") from None
    if not data:
        raise ConfigError(f"{source}: the file is empty: a config names at least [backend] mode (shadow, boost "
                          "or gate)")
    backend = data.get("backend")
    if require_mode and (not isinstance(backend, Mapping) or "mode" not in backend):
        # Explicit, never the default: a file cut short before its mode would otherwise run in shadow mode.
        raise _err(source, "backend.mode", "missing: a config names its mode explicitly (shadow, boost or gate); "
                                           "is the file half-written?")
    try:
        return config_from_dict(data, source)
    except RecursionError:
        raise ConfigError(f"{source}: values nested too deeply") from None
