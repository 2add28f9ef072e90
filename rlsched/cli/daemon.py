"""``rlsched daemon`` (the scheduling loop) and ``rlsched status`` (what it sees and would do)."""

from __future__ import annotations

import json
import logging
import math
import sys
import time
from typing import Any

import click

from rlsched.backends import build_backend
from rlsched.core.explain import reasons_behind
from rlsched.daemon.agents import policy_label
from rlsched.daemon.config import ConfigError, load_config
from rlsched.daemon.logs import configure_logging
from rlsched.daemon.loop import Daemon, run_daemon
from rlsched.daemon.state import CheckpointError, read_heartbeat

log = logging.getLogger(__name__)


def _fail(exc: Exception) -> None:
    click.echo(f"rlsched: {exc}", err=True)
    sys.exit(2)


@click.command()
@click.option(
    "--config",
    "config_path",
    required=True,
    type=click.Path(dir_okay=False),
    help="The daemon's TOML configuration (see etc/rlsched.toml).",
)
@click.option("--once", is_flag=True, help="Run one cycle and exit, leaving its changes in place.")
@click.option(
    "--undo",
    is_flag=True,
    help="Do not schedule: release the gated jobs (gate mode), undo every boost, hold and drain "
    "rlsched recorded, and exit.",
)
def daemon(config_path: str, once: bool, undo: bool) -> None:
    """Run the rlsched daemon: view, decide, act (not in shadow mode), learn, checkpoint, export."""
    try:
        config = load_config(config_path, require_mode=True)
        configure_logging(config.log)  # [log] level and format; -v/-vv can only add to it
        if config.metrics_remote:
            log.warning(
                "metrics on %s:%s are reachable from the network (metrics.allow_remote): firewall the port",
                config.metrics_host,
                config.metrics_port,
            )
        runner = Daemon(config)
    except (ConfigError, CheckpointError, ValueError) as exc:
        _fail(exc)
        return
    if undo:
        runner.shutdown(final=True, drain_cloud=False)
        return
    sys.exit(run_daemon(config, once=once, daemon=runner))


def _agent_label(runner: Daemon) -> str:
    """The policy that runs (name and non-default parameters), and the model file it came from."""
    spec = runner.agent.spec
    label = policy_label(spec, runner.config.agent.label)
    if spec is not None and spec.source:
        label += f" (model {spec.source['path']}, sha256 {spec.source['sha256'][:12]})"
    return label


#: The heartbeat keys ``rlsched status`` shows under "daemon" (written by :meth:`Daemon.write_heartbeat`).
HEARTBEAT_KEYS = (
    "pid",
    "host",
    "time",
    "mode",
    "stopped",
    "policy",
    "policy_label",
    "model",
    "model_sha256",
    "model_trained",
    "model_trained_from",
    "decision_log",
)


def running_daemon(heartbeat: dict[str, Any] | None, now_s: float) -> dict[str, Any] | None:
    """What the running daemon says it runs (its heartbeat), with the heartbeat's age; None without one."""
    if heartbeat is None:
        return None
    out = {key: heartbeat.get(key) for key in HEARTBEAT_KEYS}
    beat = heartbeat.get("time")
    out["age_s"] = now_s - float(beat) if isinstance(beat, int | float) else None
    stale = heartbeat.get("stale_after_s")
    out["alive"] = (
        not heartbeat.get("stopped")
        and out["age_s"] is not None
        and isinstance(stale, int | float)
        and out["age_s"] <= float(stale)
    )
    return out


def _daemon_line(info: dict[str, Any] | None) -> str:
    if info is None:
        return "daemon: no heartbeat (not started, or another state dir)"
    state = "stopped" if info.get("stopped") else "running" if info["alive"] else "silent (stale heartbeat)"
    age = "?" if info["age_s"] is None else f"{info['age_s']:.0f} s ago"
    line = (
        f"daemon: {state} (pid {info.get('pid')} on {info.get('host')}, heartbeat {age}), mode {info.get('mode')}, "
        f"policy {info.get('policy_label') or info.get('policy') or '?'}"
    )
    if info.get("model"):
        sha = (info.get("model_sha256") or "")[:12] or "?"
        trained = info.get("model_trained")
        when = (
            ""
            if not trained
            else f", trained {trained}" + (" (file mtime)" if info.get("model_trained_from") == "file mtime" else "")
        )
        line += f"\n  model {info['model']} (sha256 {sha}{when})"
    if info.get("decision_log"):
        line += f"\n  decision log {info['decision_log']}"
    return line


def printable(text: str) -> str:
    """``text`` for a terminal row: newlines, tabs and control characters escaped (``\\n``, ``\\x1b``), so
    that a user's account or job name cannot split a row or move the cursor (issue 16)."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def status_report(runner: Daemon, limit: int, explain: bool = False) -> dict[str, Any]:
    """What the daemon sees now and would do: state vector, pending jobs in its order, decisions; with
    ``explain``, each row says why it comes after the row before (``rlsched explain`` for one job)."""
    view = runner.backend.view()
    state = runner.agent.state(view)
    order, scores = runner.agent.ranking(view)
    why = reasons_behind(order, scores, runner.agent.rank_keys(view), limit) if explain else []
    labels = runner.backend.job_labels()
    pend = view.pending
    rows = []
    for rank, i in enumerate(order[:limit].tolist(), start=1):
        job_id = int(pend.job_id[i])
        partition, account = labels.get(job_id, ("", ""))
        rows.append(
            {
                "rank": rank,
                "job_id": job_id,
                "partition": partition,
                "account": account,
                "vo": view.vos[int(pend.vo[i])] if 0 <= pend.vo[i] < len(view.vos) else str(int(pend.vo[i])),
                "class": "interactive" if pend.job_class[i] == 1 else "batch",
                "cores": int(pend.cores[i]),
                "req_time_s": float(pend.req_time_s[i]),
                "held": bool(pend.held[i]),
                "score": _finite(float(scores[i])),
            }
        )
        if explain:
            rows[-1]["why"] = why[rank - 1]
    decisions = runner.agent.decide(view)
    report = {
        "mode": runner.config.mode,
        "agent": _agent_label(runner),
        "time_s": view.time_s,
        "total_cores": view.total_cores,
        "idle_cores": view.idle_cores,
        "running": len(view.running),
        "pending": len(pend),
        "state": {name: float(v) for name, v in zip(runner.agent.state_names, state.tolist(), strict=True)},
        "order": rows,
        "would": {
            "release": list(decisions.release),
            "hold": list(decisions.hold),
            "boost": None if decisions.boost is None else list(decisions.boost[: runner.backend.boost_limit]),
        },
    }
    report["daemon"] = running_daemon(read_heartbeat(runner.config.heartbeat_file), time.time())
    if runner.leasing is not None:
        report["leasing"] = leasing_report(runner, view.time_s)
    return report


def leasing_report(runner: Daemon, now_s: float) -> dict[str, Any]:
    """The leasing controller's books as of its last cycle (read from its state files, nothing changed)."""
    lz = runner.leasing
    assert lz is not None
    permit: dict[str, Any] | None = None
    try:
        permit = json.loads(lz.permit_file.read_text())
    except (OSError, ValueError):
        permit = None
    cfg = lz.config
    return {
        "enforcing": lz.enforce,
        "nodes": list(cfg.nodes),
        "max_nodes": cfg.max_nodes,
        "policy": cfg.policy,
        "budget_node_hours_per_day": _finite(cfg.budget_node_seconds_per_day / 3600.0),
        "used_today_node_hours": lz.ledger.used_today_s / 3600.0,
        "node_hours_total": lz.ledger.total_node_s / 3600.0,
        "cost_total": lz.ledger.total_cost,
        "excluded": lz.reconciler.excluded(now_s),
        "launch_failures": dict(lz.reconciler.failures),
        "reconcile_actions": dict(lz.reconcile_events),
        "last_permit": permit,
    }


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


@click.command()
@click.option(
    "--config", "config_path", required=True, type=click.Path(dir_okay=False), help="The daemon's TOML configuration."
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("--limit", default=50, show_default=True, help="How many pending jobs to list.")
@click.option(
    "--explain", is_flag=True, help="Add a column: why each job comes after the one before (rule key field or Q gap)."
)
def status(config_path: str, as_json: bool, limit: int, explain: bool) -> None:
    """Show what the daemon sees and would do: the state vector and the pending jobs in its order.

    Read-only: it changes nothing in Slurm and writes no state (the completion feed's position and the
    model are left to the daemon).
    """
    try:
        config = load_config(config_path)
    except ConfigError as exc:
        _fail(exc)
        return
    # What the running daemon says it runs comes from its heartbeat: shown even when the cluster is unreachable.
    daemon_line = _daemon_line(running_daemon(read_heartbeat(config.heartbeat_file), time.time()))
    try:
        backend = build_backend(config.backend, None)  # read-only: no undo record read or written
        runner = Daemon(config, backend=backend)
        report = status_report(runner, limit, explain)
    except (ConfigError, CheckpointError, ValueError, OSError) as exc:
        if not as_json:
            click.echo(daemon_line)
        _fail(exc)
        return
    except Exception as exc:  # the batch system unreachable, bad output: one line, not a traceback
        if not as_json:
            click.echo(daemon_line)
        _fail(RuntimeError(f"cannot read the cluster: {exc}"))
        return
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    click.echo(daemon_line)
    click.echo(
        f"config: mode {report['mode']}, agent {report['agent']}: {report['pending']} pending, "
        f"{report['running']} running, {report['idle_cores']}/{report['total_cores']} cores idle"
    )
    click.echo("state vector (P-grid §3.2):")
    for name, value in report["state"].items():
        click.echo(f"  {name:<20} {value:10.4f}")
    click.echo(f"pending jobs in rlsched's order (first {limit}):")
    click.echo(
        f"  {'rank':>4} {'job':>8} {'partition':<10} {'account':<10} {'class':<11} {'cores':>5} "
        f"{'limit_s':>9} {'held':<4} {'score':>10}" + ("  why" if explain else "")
    )
    for row in report["order"]:
        score = "" if row["score"] is None else f"{row['score']:10.4f}"
        click.echo(
            f"  {row['rank']:>4} {row['job_id']:>8} {printable(row['partition']):<10} "
            f"{printable(row['account']):<10} "
            f"{row['class']:<11} {row['cores']:>5} {row['req_time_s']:>9.0f} "
            f"{'yes' if row['held'] else 'no':<4} {score:>10}" + (f"  {row['why']}" if explain else "")
        )
    would = report["would"]
    if would["release"] or would["hold"] or would["boost"]:
        click.echo(f"would: release {would['release']} hold {would['hold']} boost {would['boost']}")
    lease = report.get("leasing")
    if lease is not None:
        permit = lease["last_permit"] or {}
        budget = lease["budget_node_hours_per_day"]
        click.echo(
            f"leasing ({'enforcing' if lease['enforcing'] else 'shadow'}, policy {lease['policy']}): "
            f"cap V {permit.get('cap', '?')} of {lease['max_nodes']} ({permit.get('reason', 'no cycle yet')}), "
            f"allowed {permit.get('allowed', [])}"
        )
        click.echo(
            f"  today {lease['used_today_node_hours']:.2f} of "
            f"{'unlimited' if budget is None else f'{budget:.2f}'} node-hours; in all "
            f"{lease['node_hours_total']:.2f} node-hours, cost {lease['cost_total']:.2f}"
        )
        if lease["excluded"]:
            click.echo(f"  out of the cap after failed launches: {lease['excluded']}")
