"""A Slurm that answers from memory: the command runner the daemon's unit tests and benchmarks drive.

``SyntheticSlurm`` answers ``squeue``/``sinfo``/``scontrol show config`` with documents built from real
Slurm 22.05 records (``tests/data/slurm``) and records every command; ``make_daemon`` builds a daemon over
it.  It fakes only what a unit test cannot cause for real; the live tests use the real Slurm
(``tests/slurm_cluster.py``).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rlsched.backends.common.runner import CommandResult
from rlsched.backends.slurm import SlurmBackend, SlurmBackendConfig
from rlsched.core.policies import entry
from rlsched.daemon.config import AgentConfig, DaemonConfig
from rlsched.daemon.loop import Daemon
from rlsched.leasing import LeasingConfig

DATA = Path(__file__).resolve().parent.parent / "data" / "slurm"
NOW_S = 1795317300
ACCOUNTS = ("atlas", "cms", "lhcb", "alice", "biomed")


def synthetic_sinfo_json(idle_cpus: int) -> str:
    """The recorded ``sinfo --json`` (node1: 16 CPUs, four cloud nodes) with ``idle_cpus`` of node1 free."""
    doc = json.loads((DATA / "sinfo-cloud.json").read_text())
    for node in doc["nodes"]:
        if node["name"] == "node1":
            node.update(
                alloc_cpus=node["cpus"] - idle_cpus,
                idle_cpus=idle_cpus,
                state="idle" if idle_cpus == node["cpus"] else "mixed" if idle_cpus else "allocated",
            )
    return json.dumps(doc)


def synthetic_squeue_json(
    n_pending: int,
    n_running: int = 16,
    held_fraction: float = 0.0,
    seed: int = 0,
    partitions: Sequence[str] = ("debug", "short"),
) -> str:
    """A ``squeue --json`` document with ``n_pending`` pending and ``n_running`` running jobs."""
    doc = json.loads((DATA / "squeue-mixed.json").read_text())
    template = next(j for j in doc["jobs"] if j["job_state"] == "PENDING" and j["state_reason"] == "None")
    rng = np.random.default_rng(seed)
    jobs: list[dict[str, Any]] = []
    total = n_pending + n_running
    limits = rng.choice([5, 10, 14, 60, 240, 1440], size=total)
    cpus = rng.choice([1, 1, 1, 2, 4, 8, 16], size=total)
    accounts = rng.integers(0, len(ACCOUNTS), size=total)
    parts = rng.integers(0, len(partitions), size=total)
    held = rng.random(total) < held_fraction
    for i in range(total):
        job = copy.copy(template)
        running = i < n_running
        job.update(
            {
                "job_id": 1000 + i,
                "account": ACCOUNTS[accounts[i]],
                "partition": partitions[parts[i]],
                "cpus": int(cpus[i]),
                "time_limit": int(limits[i]),
                "priority": 1000 + int(i % 500),
                "nice": None,
                "submit_time": NOW_S - 3600 + i % 3000,
                "job_state": "RUNNING" if running else "PENDING",
                "state_reason": "JobHeldAdmin" if held[i] and not running else "None",
                "start_time": NOW_S - 60 if running else 0,
                "end_time": 0,
            }
        )
        if job["state_reason"] == "JobHeldAdmin":
            job["priority"] = 0
        jobs.append(job)
    doc["jobs"] = jobs
    return json.dumps(doc)


class SyntheticSlurm:
    """A command runner answering squeue/sinfo/scontrol from memory; records the commands it ran.

    ``squeue`` may be swapped (``self.squeue = ...``) between cycles; scontrol actions succeed.
    """

    def __init__(self, squeue: str, sinfo: str | None = None) -> None:
        self.squeue = squeue
        self.sinfo = sinfo if sinfo is not None else synthetic_sinfo_json(idle_cpus=8)
        self.config = (DATA / "scontrol-show-config.txt").read_text()
        self.calls: list[tuple[str, ...]] = []

    def __call__(self, argv: Sequence[str], timeout_s: float) -> CommandResult:
        self.calls.append(tuple(argv))
        name = Path(argv[0]).name
        out = ""
        if name == "squeue":
            out = self.squeue
        elif name == "sinfo":
            out = self.sinfo
        elif name == "scontrol" and argv[1:3] == ["show", "config"]:
            out = self.config
        return CommandResult(tuple(argv), 0, out, "")

    def actions(self) -> list[tuple[str, ...]]:
        """The scontrol commands that change something (update, hold, release)."""
        return [c for c in self.calls if Path(c[0]).name == "scontrol" and c[1] in ("update", "hold", "release")]


def make_daemon(
    runner: SyntheticSlurm,
    state_dir: str,
    mode: str = "boost",
    agent: str = "interactive-first-sjf",
    leasing: LeasingConfig | None = None,
    model: str | None = None,
    allow_losing_model: bool = False,
    agent_params: dict[str, Any] | None = None,
    **backend: Any,
) -> Daemon:
    """A daemon over ``runner`` (completions from squeue, so no jobcomp file is needed).

    ``agent``: a registry policy name (learned ones start without EDF pretraining), ``agent_params`` its
    parameters (``{"runtime_model": "learned"}``); ``model``: a saved model (``allow_losing_model``:
    ``[agent] allow_losing_model``).
    """
    vos = backend.pop("vos", ACCOUNTS)
    bcfg = SlurmBackendConfig(
        completion_source="squeue",
        vos=tuple(vos),
        default_vo=vos[-1],
        state_file=str(Path(state_dir) / "slurm-record.json"),
        **backend,
    )
    learned = model is None and entry(agent).family == "learned"
    agent_config = (
        AgentConfig(kind=agent, model=model, allow_losing_model=allow_losing_model)
        if model is not None
        else AgentConfig(kind=agent, params={**({"pretrain_decisions": 0} if learned else {}), **(agent_params or {})})
    )
    config = DaemonConfig(
        source="bench",
        mode=mode,  # type: ignore[arg-type]
        poll_interval_s=1.0,
        backend=bcfg,
        agent=agent_config,
        metrics_port=None,
        state_dir=state_dir,
        checkpoint_every_s=0.0,
        leasing=leasing or LeasingConfig(),
    )
    # The synthetic jobs live around NOW_S: the backend's clock (completion feed start) must too.
    backend_clock = lambda: float(NOW_S)  # noqa: E731
    return Daemon(config, backend=SlurmBackend(bcfg, runner=runner, sleep=lambda s: None, clock=backend_clock))


def slurm_of(daemon: Daemon) -> SlurmBackend:
    """The daemon's backend as the Slurm backend it is in these tests (to reach its runner and clock)."""
    backend = daemon.backend
    assert isinstance(backend, SlurmBackend)
    return backend
