"""`rlsched history import --from pbs-accounting` on the accounting log recorded from the real OpenPBS
(tests/data/pbs/accounting-20261123)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from rlsched.cli import main
from rlsched.history.pbs import read_pbs_accounting
from rlsched.history.records import DropLog
from tests.history.conftest import DATA

ACCOUNTING = DATA / "pbs" / "accounting-20261123"


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["history", "import", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exc_info
    return result.exit_code, result.output


def test_end_records_become_jobs_and_the_array_record_is_dropped() -> None:
    log = DropLog()
    jobs = {job.job_id: job for job in read_pbs_accounting(ACCOUNTING.read_text().splitlines(), "acct", log)}
    # Ran: 0, 1, 6 and the four subjobs; 3, 4, 5 were deleted before they started (no E record).
    assert sorted(jobs) == ["0", "1", "2[0]", "2[1]", "2[2]", "2[3]", "6"]
    assert log.dropped["array_placeholder"] == 1 and log.malformed == 0
    blocker = jobs["1"]
    assert blocker.cpus == 6 and blocker.time_limit_s == 600 and blocker.partition == "workq"
    assert blocker.end_s - blocker.start_s == 26 and blocker.account == "_pbs_project_default"
    assert blocker.state == "COMPLETED" and blocker.nodes == 1
    # jobname= is the job's name (the trace keeps its executable id); every subjob has its array's.
    assert (jobs["0"].name, blocker.name, jobs["6"].name) == ("STDIN", "blocker", "nowall")
    assert {jobs[f"2[{i}]"].name for i in range(4)} == {"arr"}


def test_the_cli_imports_a_folder_with_the_vo_from_the_config(tmp_path: Path) -> None:
    folder = tmp_path / "accounting"
    folder.mkdir()
    shutil.copy(ACCOUNTING, folder / "20261123")
    (folder / "20261123").write_text((folder / "20261123").read_text() + "garbage line\n")
    config = tmp_path / "rlsched.toml"
    config.write_text('[backend]\nkind = "pbs"\nvo_from = "account"\n')
    code, out = invoke(
        "--from",
        "pbs-accounting",
        "--input",
        str(folder),
        "--config",
        str(config),
        "--out",
        str(tmp_path / "site.swf"),
        "--json",
    )
    assert code == 0, out
    summary = json.loads(out)
    assert summary["jobs"] == 7 and summary["dropped"] == {"array_placeholder": 1, "malformed": 1}
    meta = json.loads((tmp_path / "site.meta.json").read_text())
    assert meta["vo_from"] == "account" and meta["input"] == [str(folder / "20261123")]
    code, out = invoke("--from", "pbs-accounting", "--input", str(folder), "--strict", "--out", str(tmp_path / "s.swf"))
    assert code == 1 and out.strip().endswith("20261123:34: expected 'date;type;id;message'") and out.count("\n") == 1
