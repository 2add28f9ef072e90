"""The daemon as its own process (``python -m rlsched daemon``), for the live tests on Slurm and PBS.

SIGTERM and kill -9 are then real.  ``start`` waits for the first cycle; the ``daemons`` fixture
(tests/conftest.py) kills whatever a test left running.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

from tests.slurm_cluster import wait_for

ROOT = Path(__file__).resolve().parents[2]


class HasEnv(Protocol):
    """A test cluster whose commands need an environment of their own (the Slurm one: SLURM_CONF)."""

    @property
    def env(self) -> Mapping[str, str]: ...


class DaemonProcess:
    def __init__(self, config: Path, env: Mapping[str, str] | None = None) -> None:
        self.log = config.parent / "daemon.log"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "rlsched", "-v", "daemon", "--config", str(config)],
            cwd=ROOT,
            env=dict(env) if env is not None else None,
            stdout=subprocess.DEVNULL,
            stderr=self.log.open("w"),
        )
        self.heartbeat = config.parent / "state" / "heartbeat.json"

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self, sig: int = signal.SIGTERM, timeout_s: float = 60) -> int:
        self.proc.send_signal(sig)
        return self.proc.wait(timeout_s)

    def counters(self) -> dict[str, object]:
        try:
            return dict(json.loads((self.heartbeat.parent / "daemon.json").read_text())["counters"])
        except (OSError, ValueError, KeyError, TypeError):
            return {}

    def cycles(self) -> int:
        cycles = self.counters().get("cycles", 0)
        return int(cycles) if isinstance(cycles, int | float) else 0

    def text(self) -> str:
        return self.log.read_text()


def start(daemons: list[DaemonProcess], config: Path, cluster: HasEnv | None = None) -> DaemonProcess:
    """A daemon on ``config`` (in ``cluster``'s environment, if it has one), after its first cycle."""
    d = DaemonProcess(config, cluster.env if cluster is not None else None)
    daemons.append(d)
    wait_for(lambda: d.cycles() >= 1 or not d.alive(), 30, "the daemon's first cycle")
    assert d.alive(), d.text()[-2000:]
    return d
