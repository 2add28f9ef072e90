"""``rlsched config check CONFIG``: every check the daemon makes at start, without touching the cluster;
``rlsched config keys``: every key of the schema (:mod:`rlsched.config_schema`) as docs/daemon.md's tables.

Like ``promtool check config``: prints ``OK`` (and any warnings) or one line per problem, exits 1 on any
problem; ``--json`` prints ``{"config", "ok", "problems", "warnings"}``.  What it checks:

1. the file itself (:func:`rlsched.daemon.config.load_config`: every key, bounds, finite numbers, written
   paths outside the system directories, the heartbeat limit against one retried call, a loopback metrics
   address unless ``[metrics] allow_remote``);
2. the agent: ``[agent] model`` is loaded and checked against ``[backend] vos``, the live feature layout
   and the class rule, and so is the daemon's own checkpoint (``<state dir>/agent.npz``) when there is one
   — exactly what the daemon does at start (:func:`rlsched.daemon.agents.start_agent`), and the runtime
   predictor's state (``<state dir>/predictor.json``) of a policy that predicts runtimes; nothing is written;
   a model whose verdict is a loss to a rule is a problem in boost and gate mode unless ``[agent]
   allow_losing_model = true`` (a warning in shadow mode), one without a verdict a warning;
3. file modes: the config file and the state dir are not writable by group or others (the daemon runs as
   root and acts on what they say); with ``[leasing] enabled``, the files the Slurm hooks read as
   ``SlurmUser`` (the config, the heartbeat, the lease permit) are readable by others and the state dir is
   searchable by them;
4. ``backend.bin_dir`` is a directory, and the metrics port is free (a busy one is only a warning: the
   running daemon holds it).
"""

from __future__ import annotations

import json
import os
import socket
import stat
import sys
from pathlib import Path
from typing import Any

import click

from rlsched.config_schema import markdown_tables
from rlsched.daemon.config import ConfigError, DaemonConfig, load_config

#: Mode bits that let a user other than the owner change a file or directory.
_WRITABLE_BY_OTHERS = stat.S_IWGRP | stat.S_IWOTH


def check_config(path: str | Path) -> dict[str, Any]:
    """Run every check on the config file ``path``; ``{"config", "ok", "problems", "warnings"}``."""
    problems: list[str] = []
    warnings: list[str] = []
    try:
        config = load_config(path, require_mode=True)
    except ConfigError as exc:
        problems.append(str(exc))
        return _result(path, problems, warnings)
    if config.metrics_remote:
        warnings.append(
            f"{path}: key 'metrics.listen': the exporter listens on {config.metrics_host} (not "
            "loopback; allowed by metrics.allow_remote): firewall the port"
        )
    agent_problems = _agent_problems(config)
    problems += agent_problems
    if not agent_problems:
        warnings += _agent_warnings(config)
    file_problems, file_warnings = _file_modes(Path(path), config)
    problems += file_problems
    warnings += file_warnings
    bin_dir = getattr(config.backend, "bin_dir", None)
    if isinstance(bin_dir, str) and not Path(bin_dir).is_dir():
        problems.append(f"{path}: key 'backend.bin_dir': {bin_dir} is not a directory")
    busy = _port_in_use(config)
    if busy:
        warnings.append(f"{path}: key 'metrics.listen': {busy}")
    return _result(path, problems, warnings)


def _result(path: str | Path, problems: list[str], warnings: list[str]) -> dict[str, Any]:
    return {"config": str(path), "ok": not problems, "problems": problems, "warnings": warnings}


def _agent_problems(config: DaemonConfig) -> list[str]:
    """Load the configured model and the daemon's checkpoint as the daemon would (read-only)."""
    from rlsched.core.runtime import PredictedRuntime
    from rlsched.daemon.agents import AgentStartError, start_configured_agent
    from rlsched.daemon.state import CheckpointError, restore_predictor

    try:
        handle = start_configured_agent(config)
    except AgentStartError as exc:
        return [str(exc)]
    if isinstance(handle.runtime, PredictedRuntime):
        try:  # restored into this throw-away agent: nothing is written
            restore_predictor(config.predictor_file, handle.runtime)
        except CheckpointError as exc:
            return [" ".join(str(exc).split())]
    return []


def _agent_warnings(config: DaemonConfig) -> list[str]:
    """What the daemon would log as a warning about its model (no verdict; a loss allowed)."""
    from rlsched.daemon.agents import AgentStartError, model_verdict

    try:
        _, warning = model_verdict(config.agent, config.mode)
    except AgentStartError:
        return []  # already a problem
    return [f"{config.source}: key 'agent.model': {warning}"] if warning else []


def _mode_of(path: Path) -> int | None:
    try:
        return path.stat().st_mode
    except OSError:
        return None


def _file_modes(config_path: Path, config: DaemonConfig) -> tuple[list[str], list[str]]:
    """Problems and warnings about who may read or change the files the daemon and the hooks use."""
    problems: list[str] = []
    warnings: list[str] = []
    source = config.source
    hooks = config.leasing.enabled
    mode = _mode_of(config_path)
    if mode is not None:
        if mode & _WRITABLE_BY_OTHERS:
            problems.append(
                f"{source}: the config file is writable by group or others (mode "
                f"{stat.S_IMODE(mode):04o}): anyone who can write it steers the daemon; chmod 0644"
            )
        if hooks and not mode & stat.S_IROTH:
            problems.append(
                f"{source}: the config file is not readable by others (mode {stat.S_IMODE(mode):04o}): "
                "the leasing hooks run as SlurmUser and read it; chmod 0644"
            )
    state_dir = Path(config.state_dir)
    mode = _mode_of(state_dir)
    if mode is None:
        warnings.append(f"{source}: key 'state.dir': {state_dir} does not exist yet (the daemon creates it)")
    elif not stat.S_ISDIR(mode):
        problems.append(f"{source}: key 'state.dir': {state_dir} is not a directory")
    else:
        if mode & stat.S_IWOTH and not mode & stat.S_ISVTX:
            problems.append(
                f"{source}: key 'state.dir': {state_dir} is writable by others (mode "
                f"{stat.S_IMODE(mode):04o}): they could replace the undo record; chmod 0755"
            )
        if hooks and not mode & stat.S_IXOTH:
            problems.append(
                f"{source}: key 'state.dir': {state_dir} is not searchable by others (mode "
                f"{stat.S_IMODE(mode):04o}): the leasing hooks (SlurmUser) cannot reach the heartbeat "
                "and the permit; chmod 0755"
            )
    if hooks:
        for key, file in (
            ("gate.heartbeat_file", config.heartbeat_file),
            ("state.dir", state_dir / "lease-permit.json"),
        ):
            mode = _mode_of(file)
            if mode is not None and not mode & stat.S_IROTH:
                problems.append(
                    f"{source}: key {key!r}: {file} is not readable by others (mode "
                    f"{stat.S_IMODE(mode):04o}): the leasing hooks (SlurmUser) would refuse every "
                    "lease; the daemon writes it 0644 from this version on"
                )
    return problems, warnings


def _port_in_use(config: DaemonConfig) -> str | None:
    """Why the exporter could not bind now (busy port, unknown address), or None; loopback only is tried."""
    if config.metrics_port is None or config.metrics_port == 0:
        return None
    host = config.metrics_host
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, config.metrics_port))
        except socket.gaierror:
            return f"{host!r} is not an address of this host (names are not resolved: give an IP address)"
        except OSError as exc:
            return (
                f"cannot listen on {host}:{config.metrics_port} now ({os.strerror(exc.errno or 0)}; the "
                "running daemon holds it?)"
            )
    return None


@click.group()
def config() -> None:
    """The daemon's configuration file."""


@config.command("check")
@click.argument("config_path", metavar="CONFIG", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print {config, ok, problems, warnings} as JSON.")
def check(config_path: str, as_json: bool) -> None:
    """Check CONFIG as the daemon would at start, without touching the cluster: prints OK or one line per
    problem (exit 1).  Also loads the model file and the checkpoint, and checks file modes."""
    result = check_config(config_path)
    if as_json:
        click.echo(json.dumps(result, indent=2))
    else:
        for line in result["problems"]:
            click.echo(line, err=True)
        for line in result["warnings"]:
            click.echo(f"warning: {line}", err=True)
        if result["ok"]:
            click.echo("OK")
    if not result["ok"]:
        sys.exit(1)


@config.command("keys")
def keys() -> None:
    """Print every key of the config (type, default, allowed values, meaning) as the Markdown tables of
    docs/daemon.md, from the schema the daemon, ``config check`` and the leasing hooks read."""
    click.echo(markdown_tables(), nl=False)
