"""The daemon's TOML configuration: ``[backend]``, ``[agent]``, ``[metrics]``, ``[state]``, ``[gate]``, ``[leasing]``.

Every key is checked; a bad one is a one-line :class:`ConfigError` naming the file and the key
(DESIGN.md §7: "configs ... get one-line errors naming the file/line/key").  The ``[backend]`` table
beyond ``kind``, ``mode`` and ``poll_interval_s`` belongs to the Slurm backend and is checked by
:meth:`rlsched.backends.slurm.SlurmBackendConfig.from_table`.  See ``docs/daemon.md`` and
``etc/rlsched.toml``.  ``[leasing]`` is checked by :meth:`rlsched.leasing.LeasingConfig.from_table`.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from rlsched.backends.slurm import SlurmBackendConfig
from rlsched.leasing.config import LeasingConfig

Mode = Literal["shadow", "boost", "gate"]
MODES: tuple[Mode, ...] = ("shadow", "boost", "gate")
AGENT_KINDS = ("fixed", "fcfs", "edf", "sarsa", "fqi")
MODELS = ("esn", "ffnn")
RUNTIME_MODELS = ("estimated", "requested")
DEFAULT_METRICS_PORT = 9400


class ConfigError(ValueError):
    """A bad configuration file: the message is one line naming the file and the key."""


@dataclass(frozen=True)
class AgentConfig:
    """``[agent]``: which policy decides.

    - ``kind``: ``fixed`` (interactive first, then shortest requested time, then first come — a
      fixed-priority policy needing no training), ``fcfs``, ``edf`` (P-grid §3.3's pretraining policy),
      ``sarsa`` (P-grid §3.1–3.3: SARSA, ε = 0.05, γ = 0.8, η = 0.2) or ``fqi`` (P-fqi Alg. 1).
    - ``model``: the Q-function of the learning kinds, ``esn`` (P-grid §3.3, 100 units) or ``ffnn``.
    - ``runtime_model``: ``estimated`` (median of the class's recent runtimes, P-grid §3.2) or
      ``requested`` (the time limit).
    - ``lam``: λ_s of the reward R_s = λ_s·W + (1−λ_s)·F (P-grid §3.2); 0.5 by default.
    - ``pretrain_decisions``: decisions taken by EDF before the learned policy takes over (P-grid §3.3).
    - ``seed``: the random seed (exploration, ESN reservoir).
    - ``keep_idle_cores``: ``sarsa``/``fqi`` in gate mode may learn to leave up to this many idle cores
      unfilled while only batch jobs wait, for interactive jobs still to come (0, the default: never;
      docs/perez.md, "Keeping cores idle").
    """

    kind: str = "fixed"
    model: str = "esn"
    runtime_model: str = "estimated"
    lam: float = 0.5
    pretrain_decisions: int = 500
    seed: int = 0
    keep_idle_cores: int = 0

    @property
    def learning(self) -> bool:
        return self.kind in ("sarsa", "fqi")


@dataclass(frozen=True)
class GateConfig:
    """``[gate]``: the failsafe of gate mode (DESIGN.md §7).

    - ``heartbeat_file``: written atomically every cycle (pid, time, gated partitions); the watchdog
      ``plugins/slurm/rlsched-gate-watchdog`` releases every held job of the gated partitions when it is
      older than ``stale_after_s`` or missing.  Default: ``<state dir>/heartbeat.json``.
    - ``stale_after_s``: how old the heartbeat may get; must exceed the poll interval plus the longest
      cycle (a cycle whose commands time out takes ``retry_attempts × timeout_s`` and more).
    """

    heartbeat_file: str | None = None
    stale_after_s: float = 120.0


@dataclass(frozen=True)
class DaemonConfig:
    """The whole daemon configuration (see the module docstring)."""

    source: str
    mode: Mode = "shadow"
    poll_interval_s: float = 10.0
    backend: SlurmBackendConfig = field(default_factory=SlurmBackendConfig)
    agent: AgentConfig = field(default_factory=AgentConfig)
    metrics_host: str = "127.0.0.1"
    metrics_port: int | None = DEFAULT_METRICS_PORT
    state_dir: str = "/var/lib/rlsched"
    checkpoint_every_s: float = 60.0
    gate: GateConfig = field(default_factory=GateConfig)
    leasing: LeasingConfig = field(default_factory=LeasingConfig)
    max_backoff_s: float = 300.0

    @property
    def heartbeat_file(self) -> Path:
        return Path(self.gate.heartbeat_file or Path(self.state_dir) / "heartbeat.json")

    @property
    def model_file(self) -> Path:
        return Path(self.state_dir) / "agent.npz"

    @property
    def counters_file(self) -> Path:
        return Path(self.state_dir) / "daemon.json"


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


def parse_listen(source: str, value: str) -> tuple[str, int | None]:
    """``"127.0.0.1:9400"`` → (host, port); ``""`` or ``"off"`` turns the exporter off."""
    if value in ("", "off"):
        return "127.0.0.1", None
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise _err(source, "metrics.listen", f"expected HOST:PORT, got {value!r}")
    return host.strip("[]") or "127.0.0.1", int(port)


def config_from_dict(data: Mapping[str, Any], source: str = "config") -> DaemonConfig:
    """Build a :class:`DaemonConfig` from parsed TOML (``source`` names the file in errors)."""
    sections = {"backend", "agent", "metrics", "state", "gate", "leasing"}
    for key, value in data.items():
        if key not in sections:
            raise _err(source, key, f"unknown section (known: {', '.join(sorted(sections))})")
        if not isinstance(value, Mapping):
            raise _err(source, key, "expected a table")
    backend_table = dict(data.get("backend", {}))
    kind = backend_table.get("kind", "slurm")
    if kind != "slurm":
        raise _err(source, "backend.kind", f"only \"slurm\" is supported, got {kind!r}")
    mode = backend_table.get("mode", "shadow")
    if mode not in MODES:
        raise _err(source, "backend.mode", f"expected one of {', '.join(MODES)}, got {mode!r}")
    poll = backend_table.get("poll_interval_s", 10.0)
    if isinstance(poll, bool) or not isinstance(poll, int | float):
        raise _err(source, "backend.poll_interval_s", f"expected a number, got {poll!r}")
    _positive(source, "backend.poll_interval_s", float(poll))
    try:
        backend = SlurmBackendConfig.from_table(backend_table, f"{source}: [backend]")
    except ValueError as exc:
        raise ConfigError(str(exc)) from None

    agent_kw = _take(data.get("agent", {}), source, "agent",
                     {"kind": str, "model": str, "runtime_model": str, "lam": (int, float),
                      "pretrain_decisions": int, "seed": int, "keep_idle_cores": int})
    for key, allowed in (("kind", AGENT_KINDS), ("model", MODELS), ("runtime_model", RUNTIME_MODELS)):
        if key in agent_kw and agent_kw[key] not in allowed:
            raise _err(source, f"agent.{key}", f"expected one of {', '.join(allowed)}, got {agent_kw[key]!r}")
    if not 0.0 <= agent_kw.get("lam", 0.5) <= 1.0:
        raise _err(source, "agent.lam", f"λ must lie in [0, 1], got {agent_kw['lam']:g}")
    if agent_kw.get("pretrain_decisions", 0) < 0:
        raise _err(source, "agent.pretrain_decisions", "must be >= 0")
    if agent_kw.get("keep_idle_cores", 0) < 0:
        raise _err(source, "agent.keep_idle_cores", "must be >= 0")
    agent = AgentConfig(**agent_kw)
    if agent.learning and not backend.vos:
        raise _err(source, "backend.vos", f"agent kind {agent.kind!r} needs a fixed VO list (the width of its "
                                          "features); set [backend] vos and default_vo")

    metrics_kw = _take(data.get("metrics", {}), source, "metrics", {"listen": str})
    host, port = parse_listen(source, metrics_kw.get("listen", f"127.0.0.1:{DEFAULT_METRICS_PORT}"))

    state_kw = _take(data.get("state", {}), source, "state",
                     {"dir": str, "checkpoint_every_s": (int, float)})
    if "checkpoint_every_s" in state_kw and state_kw["checkpoint_every_s"] < 0:
        raise _err(source, "state.checkpoint_every_s", "must be >= 0")

    gate_kw = _take(data.get("gate", {}), source, "gate",
                    {"heartbeat_file": str, "stale_after_s": (int, float)})
    gate = GateConfig(**gate_kw)
    _positive(source, "gate.stale_after_s", gate.stale_after_s)
    if mode == "gate":
        if not backend.partitions:
            raise _err(source, "backend.partitions", "gate mode needs the gated partitions: in them a held job "
                                                     "waits for rlsched (see docs/daemon.md)")
        if gate.stale_after_s <= 2 * float(poll):
            raise _err(source, "gate.stale_after_s", f"must exceed twice poll_interval_s ({float(poll):g} s), "
                                                     f"or the watchdog releases jobs under a live daemon")
    try:
        leasing = LeasingConfig.from_table(data.get("leasing", {}), source)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    if leasing.enabled and leasing.reconcile_every_s < float(poll):
        raise _err(source, "leasing.reconcile_every_s", f"must be >= poll_interval_s ({float(poll):g} s): the "
                                                        "reconcile loop runs inside a daemon cycle")
    return DaemonConfig(source=source, mode=mode, poll_interval_s=float(poll), backend=backend, agent=agent,
                        metrics_host=host, metrics_port=port,
                        state_dir=state_kw.get("dir", DaemonConfig.state_dir),
                        checkpoint_every_s=float(state_kw.get("checkpoint_every_s", 60.0)), gate=gate,
                        leasing=leasing)


def load_config(path: str | Path) -> DaemonConfig:
    """Read and check a TOML config file; every problem is a one-line :class:`ConfigError`."""
    source = str(path)
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise ConfigError(f"{source}: cannot read: {exc.strerror or exc}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source}: not valid TOML: {exc}") from None
    return config_from_dict(data, source)
