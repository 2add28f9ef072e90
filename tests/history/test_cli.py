"""`rlsched history import`: the summary, the files, and one-line errors with no traceback."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from rlsched.cli import main
from rlsched.core.view import executable_id
from rlsched.history.sacct import SACCT_LIVE_FIELDS
from tests.history.conftest import DATA, HISTORY


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["history", "import", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exc_info
    return result.exit_code, result.output


def test_import_prints_the_summary_and_writes_three_files(tmp_path: Path) -> None:
    code, out = invoke(
        "--from", "sacct-file", "--input", str(HISTORY / "sacct-parsable2.txt"), "--out", str(tmp_path / "site.swf")
    )
    assert code == 0, out
    assert "imported 9 jobs from sacct-file" in out and "machine: 40 cores (peak allocation" in out
    assert (
        "dropped 8: job_step 3, array_placeholder 1, cancelled_before_start 1, not_started 1, not_ended 1, "
        "malformed 1" in out
    )
    assert "malformed: " in out and "sacct-parsable2.txt:18: 1 fields" in out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site.jobs.csv", "site.meta.json", "site.swf"]


def test_json_summary_and_cores(tmp_path: Path) -> None:
    code, out = invoke(
        "--from",
        "jobcomp",
        "--input",
        str(DATA / "slurm" / "jobcomp.txt"),
        "--cores",
        "16",
        "--out",
        str(tmp_path / "jc.swf"),
        "--json",
    )
    assert code == 0, out
    summary = json.loads(out)
    assert summary["jobs"] == 7 and summary["dropped"] == {"cancelled_before_start": 2}
    assert summary["max_procs"] == 16 and summary["max_procs_from"] == "--cores"
    assert summary["larger_than_machine"] == 0
    code, out = invoke(
        "--from",
        "jobcomp",
        "--input",
        str(DATA / "slurm" / "jobcomp.txt"),
        "--cores",
        "8",
        "--out",
        str(tmp_path / "jc.swf"),
    )
    assert code == 0 and "machine: 8 cores (--cores); 5 jobs ask more (the simulator drops them)" in out


def test_the_imported_trace_runs_in_sim_run(tmp_path: Path) -> None:
    out = tmp_path / "j.swf"
    assert invoke("--from", "sacct-json", "--input", str(HISTORY / "sacct-22.05.json"), "--out", str(out))[0] == 0
    result = CliRunner().invoke(
        main, ["sim", "run", "--workload", str(out), "--policy", "easy", "--json", str(tmp_path / "s.json")]
    )
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "s.json").read_text())
    assert summary["jobs"] == 6 and set(summary["by_vo"]) == {"atlas", "cms", "ops"}


def test_strict_makes_a_malformed_line_an_error_and_writes_nothing(tmp_path: Path) -> None:
    code, out = invoke(
        "--from",
        "sacct-file",
        "--input",
        str(HISTORY / "sacct-parsable2.txt"),
        "--strict",
        "--out",
        str(tmp_path / "s.swf"),
    )
    assert code == 1 and out.strip().endswith("sacct-parsable2.txt:18: 1 fields, the header has 19: 'garbage'")
    assert out.count("\n") == 1 and not list(tmp_path.iterdir())


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--from", "sacct-file"], "give --input FILE"),
        (["--from", "sacct"], "--from sacct needs --start"),
        (["--from", "sacct", "--start", "2026-01-01", "--input", "x"], "to read a saved file use"),
        (["--from", "jobcomp", "--input", "/nonexistent/jobcomp.txt"], "no such file: /nonexistent/jobcomp.txt"),
        (["--from", "sacct-json", "--input", str(HISTORY / "sacct-parsable2.txt")], "sacct-parsable2.txt:1: not JSON"),
        (["--from", "sacct-file", "--input", str(HISTORY / "sacct-22.05.json")], "not a sacct header line"),
        (
            ["--from", "sacct-file", "--input", str(HISTORY / "sacct-parsable2.txt"), "--start", "last week"],
            "--start: not a time: 'last week'",
        ),
        (
            ["--from", "jobcomp", "--input", str(DATA / "slurm" / "jobcomp.txt"), "--columns", "JobID"],
            "--columns goes with --from sacct-file",
        ),
    ],
)
def test_errors_are_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    code, out = invoke(*args, "--out", str(tmp_path / "x.swf"))
    assert code != 0 and message in out and "Traceback" not in out


def test_missing_out_folder_and_config_errors(tmp_path: Path) -> None:
    sample = str(HISTORY / "sacct-parsable2.txt")
    code, out = invoke("--from", "sacct-file", "--input", sample, "--out", str(tmp_path / "no" / "x.swf"))
    assert code == 1 and "does not exist" in out
    bad = tmp_path / "r.toml"
    bad.write_text("[backend]\nvos = 3\n")
    code, out = invoke(
        "--from", "sacct-file", "--input", sample, "--config", str(bad), "--out", str(tmp_path / "x.swf")
    )
    assert code == 1 and "r.toml" in out and "key 'backend.vos'" in out and out.count("\n") == 1


def test_sacct_missing_is_a_clean_error(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text(f'[backend]\nbin_dir = "{tmp_path}"\nretry_attempts = 1\n')
    code, out = invoke(
        "--from", "sacct", "--start", "2026-11-01", "--config", str(config), "--out", str(tmp_path / "x.swf")
    )
    assert code == 1 and "missing_command" in out and "Traceback" not in out


def test_from_sacct_runs_sacct_with_its_arguments_and_environment(tmp_path: Path) -> None:
    # A stand-in sacct on bin_dir (the real one needs slurmdbd: tests/history/test_live_sacct.py) that
    # records how it was called and prints what sacct prints with SLURM_TIME_FORMAT=%s, --parsable and the
    # --delimiter it is given (every field followed by it, the header too).
    calls = tmp_path / "calls.txt"
    script = tmp_path / "sacct"
    forged = "666|666|mallory|physics|atlas|debug|normal|COMPLETED|1795000000|1795000000|1795000010|1795009999|10|64"
    records = [
        "JobIDRaw|JobID|User|Group|Account|Partition|QOS|State|Submit|Eligible|Start|End|TimelimitRaw|AllocCPUS"
        "|ReqCPUS|NNodes|NodeList|JobName",
        "7|7|alice|physics|atlas|debug|normal|COMPLETED|1795000000|1795000000|1795000010|1795000070|10|4|4|1|n1|sim-a",
        "8|8|bob|physics|cms|debug|normal|PENDING|1795000000|1795000000|Unknown|Unknown|10|0|4|1|None assigned|x",
        # A name holding '|' and newlines, imitating whole records: it stays the name of job 9.
        "9|9|carol|physics|cms|debug|normal|COMPLETED|1795000000|1795000000|1795000020|1795000080|10|2|2|1|n1|"
        f"a|b\n{forged}|4|1|n1|x\n",
    ]
    script.write_text(
        f"#!{sys.executable}\n"
        "import os, sys\n"
        f"with open({str(calls)!r}, 'w') as out:\n"
        "    print(os.environ.get('SLURM_TIME_FORMAT'), os.environ.get('SLURM_CONF'), file=out)\n"
        "    print('\\n'.join(sys.argv[1:]), file=out)\n"
        "d = [a.split('=', 1)[1] for a in sys.argv if a.startswith('--delimiter=')][0]\n"
        f"for record in {records!r}:\n"
        "    fields = record.split('|')\n"
        "    name = '|'.join(fields[17:]) if len(fields) > 18 else (fields[17] if len(fields) > 17 else '')\n"
        "    sys.stdout.write(''.join(f + d for f in [*fields[:17], name]) + '\\n')\n"
    )
    script.chmod(0o755)
    config = tmp_path / "c.toml"
    config.write_text(f'[backend]\nbin_dir = "{tmp_path}"\nslurm_conf = "/etc/test/slurm.conf"\n')
    code, out = invoke(
        "--from",
        "sacct",
        "--start",
        "2026-11-01",
        "--end",
        "2027-01-01",
        "--clusters",
        "c1",
        "--config",
        str(config),
        "--out",
        str(tmp_path / "live.swf"),
        "--json",
    )
    assert code == 0, out
    summary = json.loads(out)
    assert summary["jobs"] == 2 and summary["dropped"] == {"not_started": 1}
    env, *argv = calls.read_text().splitlines()
    assert env == "%s /etc/test/slurm.conf"
    assert argv[:3] == ["--allusers", "--allocations", "--parsable"] and argv[-2:] == ["--clusters", "c1"]
    assert argv[3].startswith("--delimiter=|rlsched-") and argv[4] == f"--format={','.join(SACCT_LIVE_FIELDS)}"
    meta = json.loads((tmp_path / "live.meta.json").read_text())
    assert meta["command"][0] == str(script) and meta["environment"]["SLURM_TIME_FORMAT"] == "%s"
    rows = list(csv.DictReader((tmp_path / "live.jobs.csv").open()))
    assert [(r["raw_id"], r["user"], r["cpus"]) for r in rows] == [("7", "alice", "4"), ("9", "carol", "2")]
    # Field 14 is the name's id: the forging name is job 9's, whole; no job 666.
    swf = [line.split() for line in (tmp_path / "live.swf").read_text().splitlines() if not line.startswith(";")]
    assert [int(fields[13]) for fields in swf] == [
        executable_id("sim-a"),
        executable_id(f"a|b\n{forged}|4|1|n1|x\n"),
    ]


def test_trace_info_shows_the_sidecar_classes_and_vos(tmp_path: Path) -> None:
    out = tmp_path / "s.swf"
    assert invoke("--from", "sacct-file", "--input", str(HISTORY / "sacct-parsable2.txt"), "--out", str(out))[0] == 0
    result = CliRunner().invoke(main, ["trace", "info", str(out), "--json"])
    assert result.exit_code == 0, result.output
    info = json.loads(result.output)
    assert info["summary"]["vos"] == 4 and info["summary"]["interactive_jobs"] == 2  # 101 and 140 by limit
    assert info["header"]["rlsched_source"] == "sacct-file"
