"""The site workflow end to end on the real test cluster with slurmdbd (``scripts/slurm-up.sh``): the five
commands of docs/workflow.md, as an admin would type them.

About 100 short jobs from three accounts in two classes run; ``history import --from sacct`` must get every
one (count and times checked against sacct); ``train`` fits a small model on that trace with the daemon's
config; ``evaluate`` judges it beside ``multifactor`` and ``easy``; the daemon loads the model in shadow mode
(nothing in Slurm changes, the decision log grows); ``report shadow`` reports; one boost-mode cycle gives the
model's top pick the highest priority in Slurm.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.register_assert_rewrite("tests.slurm_cluster")

from tests.daemon.test_live import ROOT, DaemonProcess, start  # noqa: E402
from tests.slurm_cluster import SlurmTestCluster, wait_for  # noqa: E402

pytest_plugins = ["tests.slurm_cluster"]
pytestmark = [pytest.mark.slurm, pytest.mark.timeout(600)]

ACCOUNTS = ("atlas", "cms", "lhcb")
N_JOBS = 99  # 33 per account, half of them interactive by the class rule
FINISHED = ("COMPLETED", "FAILED", "TIMEOUT", "CANCELLED", "NODE_FAIL", "OUT_OF_MEMORY")


def site_config(path: Path, slurm: SlurmTestCluster, mode: str, model: Path | None = None) -> Path:
    """The daemon config every step reads: class rule (limit <= 10 min: interactive) and VOs = accounts."""
    agent = f'model = "{model}"' if model is not None else 'kind = "interactive-first-sjf"'
    path.write_text(f"""
[backend]
kind = "slurm"
mode = "{mode}"
poll_interval_s = 1
slurm_conf = "{slurm.conf}"
timeout_s = 10
retry_attempts = 1
vos = {json.dumps(list(ACCOUNTS))}
default_vo = "lhcb"
interactive_max_time_s = 600
[agent]
{agent}
[metrics]
listen = "off"
[state]
dir = "{path.parent / "state"}"
checkpoint_every_s = 0
[shadow]
modes = ["shadow", "boost"]
""")
    return path


def rlsched(slurm: SlurmTestCluster, *args: str, timeout_s: float = 240) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "rlsched", *args],
        cwd=ROOT,
        env=slurm.env,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
    assert done.returncode == 0, f"rlsched {' '.join(args)}: {done.stdout[-1500:]}{done.stderr[-1500:]}"
    return done


def sacct_jobs(slurm: SlurmTestCluster, ids: list[int]) -> dict[int, dict[str, str]]:
    fields = "JobIDRaw,State,Submit,Start,End,AllocCPUS,Account,TimelimitRaw"
    out = subprocess.run(
        ["sacct", "-X", "-P", "-n", "-j", ",".join(map(str, ids)), f"--format={fields}"],
        env={**slurm.env, "SLURM_TIME_FORMAT": "%s"},
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
        cwd="/tmp",
    ).stdout
    rows = [dict(zip(fields.split(","), line.split("|"), strict=True)) for line in out.splitlines() if line]
    return {int(r["JobIDRaw"]): r for r in rows}


def decision_lines(path: Path) -> list[dict[str, object]]:
    try:
        text = path.read_text()
    except FileNotFoundError:
        return []
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_from_history_to_shadow_and_boost(
    slurm: SlurmTestCluster, tmp_path: Path, daemons: list[DaemonProcess]
) -> None:
    if "accounting_storage/slurmdbd" not in slurm.run("scontrol", "show", "config").stdout:
        pytest.fail("the test cluster has no slurmdbd: scripts/slurm-up.sh sets it up")
    begin = time.time()
    start_text = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(begin - 5))
    jobs: dict[int, tuple[str, int]] = {}
    for i in range(N_JOBS):
        account, limit_min = ACCOUNTS[i % 3], (5 if (i // 3) % 2 == 0 else 30)
        job = slurm.sbatch("-A", account, "-t", str(limit_min), "-c", str(1 + i % 4), sleep_s=1 + i % 2)
        jobs[job] = (account, limit_min)

    def recorded() -> bool:
        rows = sacct_jobs(slurm, list(jobs))
        return len(rows) == len(jobs) and all(
            r["State"].split(" ")[0] in FINISHED and r["End"] != "Unknown" for r in rows.values()
        )

    wait_for(recorded, 240, "slurmdbd to record every job as finished", every_s=2.0)
    truth = sacct_jobs(slurm, list(jobs))

    # 1. history import: every job, with sacct's times; classes by the config's rule on the limit.
    config = site_config(tmp_path / "rlsched.toml", slurm, "shadow")
    trace = tmp_path / "site.swf"
    imported = rlsched(
        slurm,
        "history",
        "import",
        "--from",
        "sacct",
        "--start",
        start_text,
        "--end",
        "now",
        "--config",
        str(config),
        "--out",
        str(trace),
        "--cores",
        "16",
        "--json",
    )
    summary = json.loads(imported.stdout)
    rows = {int(r["raw_id"]): r for r in csv.DictReader((tmp_path / "site.jobs.csv").open())}
    assert set(rows) == set(jobs) and summary["jobs"] == len(jobs), summary
    for job_id, (account, limit_min) in jobs.items():
        row, real = rows[job_id], truth[job_id]
        assert (row["submit_epoch"], row["start_epoch"], row["end_epoch"]) == (
            real["Submit"],
            real["Start"],
            real["End"],
        )
        assert row["account"] == row["vo"] == account and int(row["cpus"]) == int(real["AllocCPUS"])
        assert row["job_class"] == ("interactive" if limit_min == 5 else "batch")

    # 2. train a small model for this daemon config.
    model = tmp_path / "model.npz"
    trained = rlsched(
        slurm,
        "train",
        "--workload",
        str(trace),
        "--config",
        str(config),
        "--policy",
        "sarsa-esn:pretrain_decisions=20",
        "--out",
        str(model),
        "--quiet",
    )
    assert model.is_file(), trained.stdout

    # 3. evaluate it beside what the cluster's Slurm does (multifactor from its slurm.conf) and EASY.
    out = tmp_path / "eval"
    rlsched(
        slurm,
        "evaluate",
        "--workload",
        str(trace),
        "--config",
        str(config),
        "--out",
        str(out),
        "--policy",
        str(model),
        "--policy",
        f"multifactor:slurm_conf={slurm.conf}",
        "--policy",
        "easy",
        "--quiet",
    )
    report = (out / "report.md").read_text()
    results = json.loads((out / "results.json").read_text())
    text = json.dumps(results)
    for name in ("multifactor", "easy", "model"):
        assert name in report and name in text, name

    # 4. the daemon runs the model in shadow mode: the decision log grows, Slurm is left alone.
    shadow_config = site_config(tmp_path / "rlsched.toml", slurm, "shadow", model)
    log = tmp_path / "state" / "decisions.jsonl"
    shadow_begin = time.time()
    # The blocker holds the cores until the daemon has ranked every waiting job three times: on a busy machine
    # the daemon's start can take longer than any fixed sleep, and a job that ran before the first cycle is in
    # no ranking.
    blocker = slurm.sbatch("-A", "atlas", "-c", "16", "-t", "5", sleep_s=240)
    wait_for(lambda: slurm.state(blocker) == "RUNNING", 30, "the blocker to run")
    waiting = [
        slurm.sbatch("-A", ACCOUNTS[k % 3], "-c", "16", "-t", limit, sleep_s=1)
        for k, limit in enumerate(("30", "5", "20", "5"))
    ]
    d = start(daemons, shadow_config, slurm)

    def ranked_everyone_three_times() -> bool:
        ranked = [{row[0] for row in line["ranked"]} for line in decision_lines(log)]  # type: ignore[attr-defined]
        return sum(set(waiting) <= ids for ids in ranked) >= 3

    wait_for(ranked_everyone_three_times, 60, "three decision log lines that rank every waiting job")
    slurm.run("scancel", str(blocker))
    touched: list[str] = []

    def untouched_and_done() -> bool:
        for job, fields in slurm.squeue("%i %y %r").items():
            if job in waiting and (fields[0] != "0" or fields[1] in ("JobHeldUser", "JobHeldAdmin")):
                touched.append(f"job {job}: nice {fields[0]}, reason {fields[1]}")
        return all(slurm.state(j) in ("COMPLETED", "GONE") for j in waiting)

    wait_for(untouched_and_done, 120, "the waiting jobs to run in Slurm's own order")
    assert not touched, touched
    assert d.stop() == 0, d.text()[-2000:]
    assert {line["mode"] for line in decision_lines(log)} == {"shadow"}
    status = rlsched(slurm, "status", "--config", str(shadow_config))
    assert str(model) in status.stdout

    # 5. report shadow: joins the log with Slurm's real starts.
    shadow_out = tmp_path / "shadow"
    rlsched(
        slurm,
        "report",
        "shadow",
        "--config",
        str(shadow_config),
        "--since",
        f"@{shadow_begin - 30:.0f}",
        "--out",
        str(shadow_out),
    )
    shadow = json.loads((shadow_out / "shadow.json").read_text())
    assert shadow["jobs_unmatched"] == 0 and shadow["jobs_started"] >= len(waiting), shadow
    assert (shadow_out / "shadow.md").stat().st_size > 0

    # Then boost mode: one cycle, and the model's top pick is the pending job Slurm now ranks first.
    boost_config = site_config(tmp_path / "rlsched.toml", slurm, "boost", model)
    # Held until the test ends (the fixture cancels it): the priorities are read while every job still waits.
    blocker = slurm.sbatch("-A", "atlas", "-c", "16", "-t", "5", sleep_s=240)
    wait_for(lambda: slurm.state(blocker) == "RUNNING", 30, "the second blocker to run")
    pending = [
        slurm.sbatch("-A", ACCOUNTS[k % 3], "-c", "16", "-t", limit, sleep_s=1)
        for k, limit in enumerate(("30", "20", "5", "10", "5"))
    ]
    before = len(decision_lines(log))
    rlsched(slurm, "daemon", "--config", str(boost_config), "--once")
    last = decision_lines(log)[before:]
    assert last and last[-1]["mode"] == "boost", last
    top = int(last[-1]["would"]["top"])  # type: ignore[index]
    assert top in pending
    priority = {job: int(fields[0]) for job, fields in slurm.squeue("%i %Q").items() if job in pending}
    assert max(priority, key=lambda j: priority[j]) == top, (top, priority)
    rlsched(slurm, "daemon", "--config", str(boost_config), "--undo")
    assert all(fields[0] == "0" for job, fields in slurm.squeue("%i %y").items() if job in pending)
