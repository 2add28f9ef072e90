"""Shadow mode with a trained model against the real local Slurm (``scripts/slurm-up.sh``), then
``rlsched report shadow`` on what happened: the decision log grows, nothing in Slurm changes, the report joins
the log with Slurm's real start times (sacct with slurmdbd, else the jobcomp file and squeue).

The daemon runs as its own process, like the other live daemon tests (tests/daemon/test_live.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rlsched.sim.workloads.lal import LAL_VO_NAMES
from tests.daemon.test_live import ROOT, DaemonProcess, start, write_config
from tests.slurm_cluster import SlurmTestCluster, wait_for

pytest_plugins = ["tests.slurm_cluster"]
pytestmark = [pytest.mark.slurm, pytest.mark.timeout(240)]


def log_lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def test_shadow_mode_with_a_model_logs_its_decisions_changes_nothing_and_is_reported(
    slurm: SlurmTestCluster, tmp_path: Path, daemons: list[DaemonProcess]
) -> None:
    model = tmp_path / "m.npz"
    trained = subprocess.run(
        [
            sys.executable,
            "-m",
            "rlsched",
            "sim",
            "run",
            "--workload",
            "lal",
            "--scale",
            "0.05",
            "--policy",
            "sarsa-esn:pretrain_decisions=20",
            "--save-model",
            str(model),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert trained.returncode == 0 and model.is_file(), trained.stderr[-2000:]
    begin = time.time()
    blocker = slurm.sbatch("-c", "16", "-t", "5", sleep_s=12)
    wait_for(lambda: slurm.state(blocker) == "RUNNING", 20, "the blocker to run")
    # Four whole-node jobs wait behind the blocker, then run one after the other: Slurm picks each next start.
    jobs = [slurm.sbatch("-c", "16", "-t", limit, sleep_s=2) for limit in ("10", "6", "2", "4")]
    config = write_config(tmp_path / "rlsched.toml", slurm, "shadow", model=model, vos=LAL_VO_NAMES)
    log = tmp_path / "state" / "decisions.jsonl"
    d = start(daemons, config, slurm)
    wait_for(lambda: log_lines(log) >= 3, 20, "three decision log lines")
    grown_from = log_lines(log)
    changed: list[str] = []

    def untouched_and_done() -> bool:
        for job, fields in slurm.squeue("%i %T %y %r").items():
            if job in jobs and (fields[1] != "0" or fields[2] in ("JobHeldUser", "JobHeldAdmin")):
                changed.append(f"job {job}: nice {fields[1]}, reason {fields[2]}")
        return all(slurm.state(j) in ("COMPLETED", "GONE") for j in jobs)

    wait_for(untouched_and_done, 90, "the four jobs to run in Slurm's own order")
    assert not changed, changed  # shadow: no Nice offset, no hold
    assert log_lines(log) > grown_from  # the log grew while they ran
    assert d.stop() == 0, d.text()[-2000:]
    assert f"loaded model {model}" in d.text()
    counters = json.loads((tmp_path / "state" / "daemon.json").read_text())["counters"]
    assert not counters["actions"] and counters["decision_log"]["written"] >= 3
    assert not counters["decision_log"].get("failed")
    beat = json.loads((tmp_path / "state" / "heartbeat.json").read_text())
    assert beat["model"] == str(model) and beat["policy"] == "sarsa-esn" and len(beat["model_sha256"]) == 64

    out = tmp_path / "report"
    report = subprocess.run(
        [
            sys.executable,
            "-m",
            "rlsched",
            "report",
            "shadow",
            "--config",
            str(config),
            "--since",
            f"@{begin - 60:.0f}",
            "--out",
            str(out),
        ],
        cwd=ROOT,
        env=slurm.env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert report.returncode == 0, report.stdout + report.stderr
    summary = json.loads((out / "shadow.json").read_text())
    # Every queued job was ranked, and its real start found; Slurm's first pick among four was contested.
    assert summary["jobs_seen"] >= len(jobs) and summary["jobs_unmatched"] == 0
    assert summary["jobs_started"] >= len(jobs) and summary["contested"] >= 1 and summary["decisive"] >= 3
    assert summary["top1"] is not None and 0.0 <= summary["top1"] <= 1.0
    assert summary["earlier"] + summary["slurm_first"] == summary["jobs_started"]
    for name in ("shadow.md", "shadow-agreement.png", "shadow-beyond.png"):
        assert (out / name).stat().st_size > 0
