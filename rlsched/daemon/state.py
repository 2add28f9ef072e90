"""Files the daemon keeps in its state directory, all written atomically (write, fsync, rename, fsync
the directory; docs/design.md, Reliability), so that a kill -9 at any moment leaves the previous or the new version:

- ``agent.npz``: the learning agent's model and replay memory (written by the core's checkpoint code);
- ``daemon.json``: the counters (:class:`rlsched.exporter.Counters`) and when the model was saved;
- ``heartbeat.json``: pid, time, mode and gated partitions, rewritten every cycle and while waiting; the
  gate-mode watchdog (``plugins/rlsched-gate-watchdog``) reads it;
- ``slurm-record.json``: the Slurm backend's record of what it changed (same atomic writer).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rlsched.core.atomic import write_json_atomic
from rlsched.errors import RlschedError
from rlsched.exporter import Counters

COUNTERS_VERSION = 1


class CheckpointError(RlschedError, ValueError):
    """A checkpoint file that cannot be read: one line naming the file and the problem."""


def save_counters(path: Path, counters: Counters, model_saved_s: float | None) -> None:
    write_json_atomic(
        path, {"version": COUNTERS_VERSION, "counters": counters.to_dict(), "model_saved_s": model_saved_s}
    )


def load_counters(path: Path) -> tuple[Counters, float | None]:
    """The counters of a previous run (fresh ones when the file does not exist)."""
    if not path.exists():
        return Counters(), None
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise CheckpointError(f"{path}: unreadable daemon checkpoint: {exc}") from None
    if not isinstance(data, dict) or data.get("version") != COUNTERS_VERSION:
        raise CheckpointError(f"{path}: key 'version': expected {COUNTERS_VERSION}")
    try:
        counters = Counters.from_dict(data.get("counters", {}), f"{path}: counters")
        saved = data.get("model_saved_s")
        return counters, None if saved is None else float(saved)
    except (ValueError, TypeError, AttributeError) as exc:
        raise CheckpointError(str(exc)) from None


def read_heartbeat(path: Path) -> dict[str, Any] | None:
    """The heartbeat, or None when missing or unreadable."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
