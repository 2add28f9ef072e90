"""`rlsched history import --from sacct` against the real test cluster with slurmdbd (``scripts/slurm-up.sh``).

Jobs from three accounts in two classes (a 5-minute limit: interactive by the default rule; a 1-hour limit:
batch) run; one is cancelled while pending.  The import through the daemon's runner must contain every job
that ran, with submit, wait and run equal to what ``sacct`` itself reports, and count the cancelled one.
Marked ``slurm`` (the lead runs it); it needs accounting storage (slurmdbd) in the test cluster.
"""

from __future__ import annotations

import csv
import json
import os
import time
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

pytest.register_assert_rewrite("tests.slurm_cluster")

from rlsched.cli import main  # noqa: E402
from rlsched.core.view import executable_id  # noqa: E402
from rlsched.sim.traces.sidecar import read_trace  # noqa: E402
from tests.slurm_cluster import SlurmTestCluster, wait_for  # noqa: E402

pytest_plugins = ["tests.slurm_cluster"]
pytestmark = [pytest.mark.slurm, pytest.mark.timeout(300)]

ACCOUNTS = ("atlas", "cms", "lhcb")
FINISHED = ("COMPLETED", "FAILED", "TIMEOUT", "CANCELLED", "NODE_FAIL", "OUT_OF_MEMORY")


def _needs_accounting(slurm: SlurmTestCluster) -> None:
    config = slurm.run("scontrol", "show", "config").stdout
    if "accounting_storage/slurmdbd" not in config:
        message = "the test cluster has no slurmdbd (AccountingStorageType): sacct has no records"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    # Accounts for the jobs (already there when slurm-up.sh created them: sacctmgr then says so, harmlessly).
    slurm.run("sacctmgr", "-i", "add", "account", ",".join(ACCOUNTS), check=False)
    user = slurm.run("id", "-un").stdout.strip()
    slurm.run("sacctmgr", "-i", "add", "user", user, f"account={','.join(ACCOUNTS)}", check=False)


def _sacct_record(slurm: SlurmTestCluster, job_id: int) -> dict[str, str]:
    fields = "JobIDRaw,State,Submit,Start,End,AllocCPUS,Account"
    out = slurm.run("sacct", "-X", "-P", "-n", "-j", str(job_id), f"--format={fields}")
    lines = [line for line in out.stdout.splitlines() if line.strip()]
    return dict(zip(fields.split(","), lines[0].split("|"), strict=True)) if lines else {}


def test_import_from_sacct_gets_every_job_with_sacct_times(slurm: SlurmTestCluster, tmp_path: Path) -> None:
    _needs_accounting(slurm)
    os.environ["SLURM_TIME_FORMAT"] = "%s"  # the checks below read sacct's epoch times
    try:
        start = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(time.time() - 5))
        jobs: dict[int, tuple[str, str]] = {}
        # Job names, one with the delimiter of sacct's default parsable output in it: each is its job's own.
        names = ("lammps", "run|7 |x", "wrap")
        named: dict[int, str] = {}
        for i in range(9):
            account = ACCOUNTS[i % 3]
            limit = "5" if i % 2 == 0 else "60"
            job = slurm.sbatch("-A", account, "-t", limit, "-c", str(1 + i % 4), "-J", names[i % 3], sleep_s=1 + i % 3)
            jobs[job] = (account, limit)
            named[job] = names[i % 3]
        # A job cancelled while pending (eligible, behind a whole-node job).  sacct gives it a Start (= End)
        # and AllocCPUS; only NodeList "None assigned" says it never ran.  (A job cancelled from submission and
        # cancelled is never eligible, and sacct's time window does not list it at all.)
        blocker = slurm.sbatch("-A", "cms", "-c", "16", "-t", "5", sleep_s=3)
        wait_for(lambda: slurm.state(blocker) == "RUNNING", 30, "the blocker to run")
        cancelled = slurm.sbatch("-A", "cms", "-c", "16", "-t", "5")
        slurm.run("scancel", str(cancelled))
        jobs[blocker] = ("cms", "5")
        ids = [*jobs, cancelled]

        def recorded() -> bool:
            return all(
                _sacct_record(slurm, j).get("State", "").split(" ")[0] in FINISHED
                and _sacct_record(slurm, j).get("End", "Unknown") != "Unknown"
                for j in ids
            )

        wait_for(recorded, 120, "slurmdbd to record every job as finished", every_s=1.0)
        time.sleep(1.0)
        config = tmp_path / "rlsched.toml"
        config.write_text(f'[backend]\nslurm_conf = "{slurm.conf}"\n')
        out = tmp_path / "live.swf"
        result = CliRunner().invoke(
            main,
            [
                "history",
                "import",
                "--from",
                "sacct",
                "--start",
                start,
                "--end",
                "now",
                "--config",
                str(config),
                "--out",
                str(out),
                "--json",
            ],
        )
        assert result.exit_code == 0, result.output
        summary = json.loads(result.output)
        assert summary["dropped"].get("cancelled_before_start", 0) >= 1
        rows = {int(r["raw_id"]): r for r in csv.DictReader((tmp_path / "live.jobs.csv").open())}
        assert set(jobs) <= set(rows) and cancelled not in rows
        meta = json.loads((tmp_path / "live.meta.json").read_text())
        t0 = meta["unix_start_time"]
        workload = read_trace(out)
        index = {int(r["swf_job"]): r for r in rows.values()}
        for job_id, (account, limit) in jobs.items():
            truth = _sacct_record(slurm, job_id)
            row = rows[job_id]
            assert row["account"] == account == truth["Account"] and row["vo"] == account
            assert int(row["cpus"]) == int(truth["AllocCPUS"])
            assert (row["submit_epoch"], row["start_epoch"], row["end_epoch"]) == (
                truth["Submit"],
                truth["Start"],
                truth["End"],
            )
            assert row["job_class"] == ("interactive" if limit == "5" else "batch")
            k = int(np.flatnonzero(workload.job_id == int(row["swf_job"]))[0])
            assert workload.submit[k] == int(truth["Submit"]) - t0
            assert workload.recorded_wait[k] == int(truth["Start"]) - int(truth["Submit"])
            assert workload.run[k] == int(truth["End"]) - int(truth["Start"])
            assert workload.req_time[k] == 60 * int(limit)
            # The job name's id, as the daemon computes it from squeue's (the name itself is written nowhere).
            assert workload.executable[k] == executable_id(named.get(job_id, "wrap"))
        assert workload.programs_known and len(index) == summary["jobs"] == len(workload)
    finally:
        os.environ.pop("SLURM_TIME_FORMAT", None)
