"""One daemon cycle at 10,000 pending jobs, split into poll, parse, decide, act (issue 4, DESIGN.md §6).

The queue is synthetic: a ``squeue --json`` document of N pending jobs (plus a few running ones) built
from a real job record of Slurm 22.05 (``tests/data/slurm/squeue-mixed.json``) with varied ids, accounts,
partitions, CPUs, time limits, submit times and holds.  ``poll`` is measured with a fake runner that
returns that document from memory — it is *not* the cost of a real ``squeue`` call, which on a busy
controller is dominated by slurmctld (measure that with ``time squeue --json > /dev/null`` on the site);
on the local test cluster an ``squeue --json`` of a handful of jobs takes about 20–40 ms.  ``act`` is one
boost of the top ``max_boosted`` jobs, the ``scontrol`` calls answered by the fake runner; a real
``scontrol update`` costs about 5 ms each (docs/slurm.md), i.e. ~160 ms for 32 boosted jobs.

    .venv/bin/python -m benchmarks.bench_daemon [--pending 10000] [--agent fixed|sarsa] [--repeat 5] [--json]
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rlsched.backends.slurm import CommandResult, SlurmBackendConfig
from rlsched.backends.slurm.parsers import parse_sinfo_json, parse_squeue_json
from rlsched.daemon.config import AgentConfig, DaemonConfig
from rlsched.daemon.loop import Daemon, TrackingSlurmBackend
from rlsched.leasing import LeasingConfig

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "slurm"
NOW_S = 1795317300
ACCOUNTS = ("atlas", "cms", "lhcb", "alice", "biomed")


def synthetic_sinfo_json(idle_cpus: int) -> str:
    """The recorded ``sinfo --json`` (node1: 16 CPUs, four cloud nodes) with ``idle_cpus`` of node1 free."""
    doc = json.loads((DATA / "sinfo-cloud.json").read_text())
    for node in doc["nodes"]:
        if node["name"] == "node1":
            node.update(alloc_cpus=node["cpus"] - idle_cpus, idle_cpus=idle_cpus,
                        state="idle" if idle_cpus == node["cpus"] else "mixed" if idle_cpus else "allocated")
    return json.dumps(doc)


def synthetic_squeue_json(n_pending: int, n_running: int = 16, held_fraction: float = 0.0, seed: int = 0,
                          partitions: Sequence[str] = ("debug", "short")) -> str:
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
        job.update({"job_id": 1000 + i, "account": ACCOUNTS[accounts[i]], "partition": partitions[parts[i]],
                    "cpus": int(cpus[i]), "time_limit": int(limits[i]), "priority": 1000 + int(i % 500),
                    "nice": None, "submit_time": NOW_S - 3600 + i % 3000,
                    "job_state": "RUNNING" if running else "PENDING",
                    "state_reason": "JobHeldAdmin" if held[i] and not running else "None",
                    "start_time": NOW_S - 60 if running else 0, "end_time": 0})
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


def make_daemon(runner: SyntheticSlurm, state_dir: str, mode: str = "boost", agent: str = "fixed",
                leasing: LeasingConfig | None = None, **backend: Any) -> Daemon:
    """A daemon over ``runner`` (completions from squeue, so no jobcomp file is needed)."""
    vos = backend.pop("vos", ACCOUNTS)
    bcfg = SlurmBackendConfig(completion_source="squeue", vos=tuple(vos), default_vo=vos[-1],
                              state_file=str(Path(state_dir) / "slurm-record.json"), **backend)
    config = DaemonConfig(source="bench", mode=mode, poll_interval_s=1.0, backend=bcfg,  # type: ignore[arg-type]
                          agent=AgentConfig(kind=agent, pretrain_decisions=0), metrics_port=None,
                          state_dir=state_dir, checkpoint_every_s=0.0, leasing=leasing or LeasingConfig())
    # The synthetic jobs live around NOW_S: the backend's clock (completion feed start) must too.
    backend_clock = lambda: float(NOW_S)  # noqa: E731
    return Daemon(config, backend=TrackingSlurmBackend(bcfg, runner=runner, sleep=lambda s: None,
                                                       clock=backend_clock))


def measure(n_pending: int, agent: str, repeat: int) -> dict[str, Any]:
    squeue = synthetic_squeue_json(n_pending)
    runner = SyntheticSlurm(squeue)
    parse_s: list[float] = []
    poll_s: list[float] = []
    decide_s: list[float] = []
    act_s: list[float] = []
    cycle_s: list[float] = []
    view_s = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        daemon = make_daemon(runner, tmp, "boost", agent)
        daemon.cycle()                       # warm-up: scontrol show config, first boost
        for _ in range(repeat):
            t0 = time.perf_counter()
            runner(["squeue", "--json"], 30.0)
            runner(["sinfo", "--json"], 30.0)
            poll_s.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            parse_squeue_json(squeue)
            parse_sinfo_json(runner.sinfo)
            parse_s.append(time.perf_counter() - t0)
            # Vary the ranking a little so that the act phase really re-sends Nice offsets.
            runner.squeue = synthetic_squeue_json(n_pending, seed=len(cycle_s) + 1)
            report = daemon.cycle()
            cycle_s.append(sum(report.seconds.values()))
            decide_s.append(report.seconds["decide"])
            act_s.append(report.seconds["act"])
            view_s = report.seconds["view"]
        actions = len(runner.actions())
    med = statistics.median
    return {"pending": n_pending, "agent": agent, "repeat": repeat,
            "poll_s": med(poll_s), "parse_s": med(parse_s), "decide_s": med(decide_s), "act_s": med(act_s),
            "view_s_last": view_s, "cycle_s": med(cycle_s), "scontrol_actions_total": actions,
            "note": "poll is a fake runner (in memory); add the site's squeue --json time"}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pending", type=int, default=10_000)
    parser.add_argument("--agent", choices=("fixed", "sarsa", "fqi", "edf", "fcfs"), default="fixed")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    result = measure(args.pending, args.agent, args.repeat)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"daemon cycle, {result['pending']} pending jobs, agent {result['agent']} "
              f"(median of {result['repeat']}):")
        for key in ("poll_s", "parse_s", "decide_s", "act_s", "cycle_s"):
            print(f"  {key[:-2]:<7} {1000 * result[key]:9.1f} ms")
        print(f"  ({result['note']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
