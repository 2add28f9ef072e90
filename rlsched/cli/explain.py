"""``rlsched explain JOBID``: why a pending job ranks where it does (like ``sprio -w`` for Slurm's priority)."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

import click
import numpy as np

from rlsched.backends import build_backend
from rlsched.cli.daemon import printable
from rlsched.core.explain import explain_rank
from rlsched.daemon.config import ConfigError, load_config
from rlsched.daemon.decision_log import read_decision_log
from rlsched.daemon.loop import Daemon
from rlsched.daemon.state import CheckpointError
from rlsched.errors import RlschedError


class ExplainError(RlschedError):
    """The job cannot be explained (one line for the user)."""


def live_explanation(runner: Daemon, job_id: int, nearest: int) -> dict[str, Any]:
    """From the live queue (the backend's view, read-only, as ``rlsched status``)."""
    view = runner.backend.view()
    try:
        out = runner.agent.explain(view, job_id, nearest)
    except KeyError:
        if job_id in runner.backend.job_labels():
            raise ExplainError(
                f"job {job_id} is not pending in rlsched's scope (running, finishing, or in a "
                "partition rlsched does not schedule)"
            ) from None
        raise ExplainError(f"job {job_id} is not in the queue (unknown, or finished)") from None
    out["source"] = "live queue"
    out["time_s"] = view.time_s
    return out


def log_explanation(path: Path, keep: int, job_id: int, nearest: int) -> dict[str, Any]:
    """From the decision log: the newest cycle that ranked the job (its row, the rows ahead, the score gaps)."""
    read = read_decision_log(path, keep)
    if not read.files:
        raise ExplainError(
            f"no decision log at {path} ([shadow] decision_log; it is written in the modes of [shadow] modes)"
        )
    for record in reversed(read.records):
        ranked = record["ranked"]
        rows = [k for k, row in enumerate(ranked) if isinstance(row, list) and row and row[0] == job_id]
        if not rows:
            continue
        try:
            scores = np.array([math.nan if row[1] is None else float(row[1]) for row in ranked], dtype=np.float64)
            k = rows[0]
            why = explain_rank(k, np.arange(len(ranked), dtype=np.int64), scores, None, nearest)
            _, _, cores, vo, job_class = ranked[k][:5]
            vos = record.get("vos") or []
        except (TypeError, ValueError, IndexError):
            raise ExplainError(f"{path}: a damaged record at time {record.get('time')}") from None
        return {
            "job_id": job_id,
            "source": f"decision log {path}",
            "time_s": float(record["time"]),
            "policy": record.get("policy"),
            "score_kind": "score as logged (Q-value, or the rank turned around)",
            "features": {
                "class": "interactive" if job_class == 1 else "batch",
                "vo": vos[vo] if isinstance(vo, int) and 0 <= vo < len(vos) else str(vo),
                "cores": cores,
            },
            "score": why.score,
            "rank": why.rank,
            "pending": record.get("pending", len(ranked)),
            "key": {},
            "ahead": [
                {
                    "job_id": ranked[a.index][0],
                    "rank": a.rank,
                    "reason": a.reason(),
                    "field": None,
                    "score_gap": a.score_gap,
                }
                for a in why.ahead
            ],
            "change": why.change,
        }
    raise ExplainError(
        f"job {job_id} is in no cycle of the decision log {path} ({len(read.records)} cycles; only "
        "the best [shadow] max_jobs of each are logged)"
    )


def _seconds(value: Any) -> str:
    return "?" if not isinstance(value, int | float) or not math.isfinite(value) else f"{value:.0f} s"


def render(out: dict[str, Any]) -> list[str]:
    features = out["features"]
    lines = [
        f"job {out['job_id']} ({out['source']}, policy {printable(str(out['policy']))}): "
        f"rank {out['rank']} of {out['pending']} pending"
    ]
    parts = [f"class {features['class']}", f"VO {printable(str(features['vo']))}", f"{features['cores']} cores"]
    if "req_time_s" in features:
        parts += [
            f"time limit {_seconds(features['req_time_s'])}",
            f"estimated runtime {_seconds(features['est_runtime_s'])}",
            f"waiting {_seconds(features['wait_s'])}",
            "held" if features["held"] else "not held",
        ]
    lines.append("  features: " + ", ".join(parts))
    if out["key"]:
        lines.append("  sort key: " + ", ".join(f"{name} {value}" for name, value in out["key"].items()))
    score = out["score"]
    lines.append(
        f"  score: {'?' if score is None or not math.isfinite(score) else f'{score:.6g}'} ({out['score_kind']})"
    )
    for ahead in out["ahead"]:
        lines.append(f"  behind job {ahead['job_id']} (rank {ahead['rank']}): {ahead['reason']}")
    if out["change"]:
        lines.append(f"  what would change it: {out['change']}")
    return lines


@click.command()
@click.argument("job_id", type=click.IntRange(min=1))
@click.option(
    "--config", "config_path", required=True, type=click.Path(dir_okay=False), help="The daemon's TOML configuration."
)
@click.option(
    "--from-log",
    is_flag=True,
    help="Explain the newest cycle of the decision log that ranked the job, instead of the live queue.",
)
@click.option(
    "--nearest",
    default=3,
    show_default=True,
    type=click.IntRange(min=1),
    help="How many of the jobs just ahead to show (and the first).",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def explain(job_id: int, config_path: str, from_log: bool, nearest: int, as_json: bool) -> None:
    """Why pending job JOB_ID ranks where it does: its features, its score (the Q-value of a learned policy,
    the sort key fields of a rule), its rank, the jobs ahead and what puts them there.

    Read-only, like `rlsched status`: nothing in the batch system or the state dir changes.
    """
    try:
        config = load_config(config_path)
        if from_log:
            out = log_explanation(config.decision_log_file, config.shadow.keep, job_id, nearest)
        else:
            backend = build_backend(config.backend, None)  # read-only: no undo record read or written
            out = live_explanation(Daemon(config, backend=backend), job_id, nearest)
    except (ConfigError, CheckpointError, ExplainError, ValueError, OSError) as exc:
        click.echo(f"rlsched explain: {exc}", err=True)
        sys.exit(1 if isinstance(exc, ExplainError) else 2)
    except Exception as exc:  # the batch system unreachable, bad output: one line, not a traceback
        click.echo(f"rlsched explain: cannot read the cluster: {exc}", err=True)
        sys.exit(2)
    if as_json:
        click.echo(json.dumps(out, indent=2))
        return
    for line in render(out):
        click.echo(line)
