"""Files the daemon keeps in its state directory, all written atomically (write, fsync, rename, fsync
the directory; docs/design.md, Reliability), so that a kill -9 at any moment leaves the previous or the new version:

- ``agent.npz``: the learning agent's model and replay memory (written by the core's checkpoint code);
- ``daemon.json``: the counters (:class:`rlsched.exporter.Counters`) and when the model was saved;
- ``predictor.json``: what the runtime predictor of a policy with ``runtime_model=user-last2`` or ``learned``
  has learned (:meth:`rlsched.core.runtime.PredictedRuntime.state`), so that a restart does not start it cold;
- ``heartbeat.json``: pid, time, mode and gated partitions, rewritten every cycle and while waiting; the
  gate-mode watchdog (``plugins/rlsched-gate-watchdog``) reads it;
- ``slurm-record.json``: the Slurm backend's record of what it changed (same atomic writer).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rlsched.core.atomic import write_json_atomic
from rlsched.core.runtime import PredictedRuntime
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


def save_predictor(path: Path, state: Mapping[str, Any]) -> None:
    """Write the runtime predictor's state (owner-only, like the counters: only the daemon reads it)."""
    write_json_atomic(path, state)


def load_predictor(path: Path) -> dict[str, Any] | None:
    """The runtime predictor state of a previous run, None when the file does not exist; a file that cannot be
    read or holds no predictor state is a :class:`CheckpointError` (checked in full by
    :func:`rlsched.core.prediction.predictor_from_state` when it is restored)."""
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise CheckpointError(f"{path}: unreadable runtime predictor state: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("predictor"), str):
        raise CheckpointError(f"{path}: key 'predictor': missing or not a name (not a runtime predictor state)")
    return data


def restore_predictor(path: Path, runtime: PredictedRuntime) -> tuple[bool, str | None]:
    """Restore ``runtime``'s predictor from ``path`` (:func:`save_predictor`): whether it was restored, and a
    warning when the file holds another predictor's state.

    The rule (or scored policy) a site deploys was judged on a predictor that had learned, not on a cold one:
    a restart goes on from what the previous run learned.  Another predictor's state (the config changed) is
    not restored: this one starts cold and replaces the file at its first checkpoint.  A file that cannot be
    read or restored is a one-line :class:`CheckpointError` naming it (the daemon does not start: fix or move
    the file).
    """
    data = load_predictor(path)
    if data is None:
        return False, None
    if data["predictor"] != runtime.name:
        return False, (
            f"runtime predictor: {path} holds what the {data['predictor']!r} predictor learned, the agent "
            f"predicts with {runtime.name!r}: it starts cold (the file is replaced at the next checkpoint)"
        )
    try:
        runtime.restore(data)
    except ValueError as exc:
        raise CheckpointError(f"{path}: {exc}") from None
    return True, None


def read_heartbeat(path: Path) -> dict[str, Any] | None:
    """The heartbeat, or None when missing or unreadable."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
