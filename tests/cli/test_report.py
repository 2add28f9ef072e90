"""``rlsched report shadow`` end to end on a written decision log and a jobcomp file (no Slurm needed):
outputs, numbers, and one-line errors."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from rlsched.cli import main
from rlsched.daemon.decision_log import DecisionLog

DATA = Path(__file__).resolve().parents[1] / "data" / "slurm"
T0 = 1795317000.0


def jobcomp_line(job_id: int, start_s: float, cpus: int = 1) -> str:
    """One ``jobcomp/filetxt`` record, the recorded sample's first line with this job's id, start and CPUs."""
    sample = (DATA / "jobcomp.txt").read_text().splitlines()[0]
    local = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(start_s))
    end = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(start_s + 30))
    line = sample.replace("JobId=2 ", f"JobId={job_id} ").replace("ProcCnt=16", f"ProcCnt={cpus}")
    line = line.replace("StartTime=2026-11-22T03:09:16", f"StartTime={local}")
    return line.replace("EndTime=2026-11-22T03:09:46", f"EndTime={end}")


def setup(tmp_path: Path, torn: bool = False) -> tuple[Path, Path]:
    state = tmp_path / "state"
    jobcomp = tmp_path / "jobcomp.txt"
    config = tmp_path / "rlsched.toml"
    # bin_dir has no Slurm commands: squeue (the running jobs beside jobcomp) fails for real, and is noted.
    config.write_text(
        f'[backend]\nbin_dir = "{tmp_path / "no-bin"}"\nretry_attempts = 1\n'
        f'vos = ["atlas", "cms"]\ndefault_vo = "cms"\n'
        f'[state]\ndir = "{state}"\n[metrics]\nlisten = "off"\n'
    )
    log = DecisionLog(state / "decisions.jsonl")
    rankings = [(T0, [1, 2, 3]), (T0 + 10, [1, 3]), (T0 + 20, [1, 3]), (T0 + 30, [3])]
    for t, ids in rankings:
        log.append(
            {
                "v": 1,
                "time": t,
                "mode": "shadow",
                "vos": ["atlas", "cms"],
                "pending": len(ids),
                "ranked": [[j, float(10 - k), 1, j % 2, 1 if j == 3 else 0] for k, j in enumerate(ids)],
                "state": {},
                "would": {"top": ids[0], "release": [], "hold": []},
            }
        )
    log.append(
        {
            "v": 1,
            "time": T0 + 40,
            "mode": "boost",
            "vos": [],
            "pending": 0,
            "ranked": [],
            "state": {},
            "would": {"top": None, "release": [], "hold": []},
        }
    )
    if torn:
        with open(log.path, "ab") as fh:
            fh.write(b'{"v": 1, "time": 17953')
    jobcomp.write_text("\n".join([jobcomp_line(2, T0 + 5), jobcomp_line(1, T0 + 25), jobcomp_line(3, T0 + 100)]) + "\n")
    return config, jobcomp


def test_the_report_joins_the_log_with_start_times(tmp_path: Path) -> None:
    config, jobcomp = setup(tmp_path, torn=True)
    out = tmp_path / "report"
    result = CliRunner().invoke(
        main,
        [
            "report",
            "shadow",
            "--config",
            str(config),
            "--since",
            f"@{T0 - 60:.0f}",
            "--until",
            f"@{T0 + 3600:.0f}",
            "--out",
            str(out),
            "--source",
            "jobcomp",
            "--jobcomp",
            str(jobcomp),
            "--top-k",
            "2",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "4 cycles (2 contested), 3 jobs ranked, 3 started, 0 unmatched, 1 log lines skipped" in result.output
    assert "top-1 agreement 50.0 %" in result.output and "top-2 100.0 %" in result.output
    summary = json.loads((out / "shadow.json").read_text())
    assert summary["modes"] == {"shadow": 4, "boost": 1} and summary["earlier"] == 2
    assert summary["beyond"]["all"][0]["max_s"] == 80.0
    assert {r["group"]: r["earlier"] for r in summary["beyond"]["class"]} == {"batch": 1, "interactive": 1}
    md = (out / "shadow.md").read_text()
    assert "| top-1: Slurm's next start was rlsched's first job | 50.0 % |" in md
    assert "squeue failed" in md and f"jobcomp ({jobcomp})" in md
    for png in ("shadow-agreement.png", "shadow-beyond.png"):
        assert (out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--since", "yesterday-ish"], "--since: cannot read 'yesterday-ish' as a time"),
        (["--since", "1h", "--until", "2h"], "is not after --since"),
        (["--since", "@0", "--until", "banana"], "--until: cannot read 'banana'"),
    ],
)
def test_bad_times_are_one_line_errors(tmp_path: Path, args: list[str], fragment: str) -> None:
    config, _ = setup(tmp_path)
    result = CliRunner().invoke(
        main, ["report", "shadow", "--config", str(config), "--out", str(tmp_path / "o"), *args]
    )
    assert result.exit_code == 1 and fragment in result.output
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1


def test_no_log_and_no_records_are_clear_messages(tmp_path: Path) -> None:
    config, jobcomp = setup(tmp_path)
    base = [
        "report",
        "shadow",
        "--config",
        str(config),
        "--out",
        str(tmp_path / "o"),
        "--source",
        "jobcomp",
        "--jobcomp",
        str(jobcomp),
    ]
    result = CliRunner().invoke(main, [*base, "--since", "@0", "--log", str(tmp_path / "nothing.jsonl")])
    assert result.exit_code == 1 and "no decision log at" in result.output and "Traceback" not in result.output
    result = CliRunner().invoke(main, [*base, "--since", f"@{T0 + 35:.0f}"])
    assert result.exit_code == 1 and "no shadow-mode decision records" in result.output
    assert "1 boost" in result.output
    result = CliRunner().invoke(main, [*base, "--since", f"@{T0 + 35:.0f}", "--mode", "boost"])
    assert result.exit_code == 0, result.output  # an empty ranking: nothing to compare, no crash
    bad = tmp_path / "bad.toml"
    bad.write_text("[shadow]\nkeep = -1\n")
    result = CliRunner().invoke(
        main, ["report", "shadow", "--config", str(bad), "--out", str(tmp_path / "o"), "--since", "1h"]
    )
    assert result.exit_code == 1 and "shadow.keep" in result.output and "Traceback" not in result.output


def test_times_on_the_command_line() -> None:
    from rlsched.report.times import TimeSpecError, parse_when

    now = 1_000_000.0
    assert parse_when("now", now) == now and parse_when("2h", now) == now - 7200
    assert parse_when("-3d", now) == now - 3 * 86400
    assert parse_when("@12345", now) == 12345.0
    assert parse_when("2026-11-23T08:00:00Z", now) == 1795420800.0
    assert parse_when("2026-11-23", now) == time.mktime((2026, 11, 23, 0, 0, 0, 0, 0, -1))
    with pytest.raises(TimeSpecError):
        parse_when("@x", now)
