"""Slurm's start times from sacct, the jobcomp file and squeue (rlsched.report.starts), on Slurm's output formats."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from rlsched.backends.common.runner import CommandExecutor, CommandResult, RetryPolicy
from rlsched.backends.slurm.config import SlurmBackendConfig
from rlsched.backends.slurm.errors import SlurmCommandError, SlurmParseError
from rlsched.report.starts import (
    StartsReader,
    parse_jobcomp_starts,
    parse_sacct_starts,
    parse_squeue_starts,
    read_starts,
)

DATA = Path(__file__).resolve().parents[1] / "data" / "slurm"


def test_sacct_starts_keep_every_job_that_started_running_ones_too() -> None:
    starts = parse_sacct_starts((DATA / "sacct-starts.txt").read_text())
    # 103 is pending and 104 was cancelled before it started: no start.
    assert starts == {101: 1795317000.0, 102: 1795317030.0, 105: 1795317065.0, 106: 1795317065.0}


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("101|1795317000\n", "line 1: 2 fields"),
        ("101|1795317000|COMPLETED\n101.batch|1795317000|COMPLETED\n", "line 2: bad JobIDRaw"),
        ("101|2026-11-22T03:09:16|COMPLETED\n", "SLURM_TIME_FORMAT"),
    ],
)
def test_bad_sacct_output_is_one_line_naming_the_line(text: str, fragment: str) -> None:
    with pytest.raises(SlurmParseError) as info:
        parse_sacct_starts(text)
    assert fragment in str(info.value) and "\n" not in str(info.value)


def _local(text: str) -> float:
    return time.mktime(time.strptime(text, "%Y-%m-%dT%H:%M:%S"))


def test_jobcomp_starts_from_the_recorded_file() -> None:
    path = DATA / "jobcomp.txt"
    starts = parse_jobcomp_starts(path.read_text(), str(path))
    assert starts[2] == _local("2026-11-22T03:09:16") and starts[1] == _local("2026-11-22T03:09:46")
    assert 5 not in starts  # cancelled before it started (ProcCnt=0)


def test_a_bad_jobcomp_line_names_the_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "jobcomp.log"
    good = (DATA / "jobcomp.txt").read_text().splitlines()[0]
    path.write_text(f"{good}\nJobId=9 garbage\n")
    with pytest.raises(SlurmParseError, match=rf"{path}:2"):
        parse_jobcomp_starts(path.read_text(), str(path))


def test_squeue_starts_are_the_jobs_that_started() -> None:
    from rlsched.backends.slurm.parsers import parse_squeue_json

    text = (DATA / "squeue-mixed.json").read_text()
    starts = parse_squeue_starts(text)
    jobs = {j.job_id: j for j in parse_squeue_json(text)}
    assert starts and all(not jobs[j].pending and jobs[j].cpus > 0 for j in starts)
    assert all(not (j.pending and j.job_id in starts) for j in jobs.values())


class Recorded:
    """Answers commands with recorded output (the sacct and squeue samples); records the argument lists."""

    def __init__(self, outputs: dict[str, str]) -> None:
        self.outputs = outputs
        self.argv: list[list[str]] = []

    def __call__(self, argv: Sequence[str], timeout_s: float) -> CommandResult:
        self.argv.append(list(argv))
        name = Path(argv[0]).name
        if name not in self.outputs:
            raise FileNotFoundError(argv[0])
        return CommandResult(tuple(argv), 0, self.outputs[name], "")


def _reader(runner: Recorded, **config: object) -> StartsReader:
    cfg = SlurmBackendConfig(retry=RetryPolicy(attempts=1), **config)  # type: ignore[arg-type]
    return StartsReader(cfg, CommandExecutor(runner, 5.0, cfg.retry, error_class=SlurmCommandError))


def test_the_sacct_source_runs_sacct_as_an_argument_list_over_the_window() -> None:
    runner = Recorded({"sacct": (DATA / "sacct-starts.txt").read_text()})
    starts = read_starts(
        _reader(runner, completion_source="sacct", bin_dir="/opt/slurm/bin"), "auto", since_s=1795317000.0
    )
    assert starts.sources == ["sacct"] and len(starts.start_s) == 4
    argv = runner.argv[0]
    assert argv[:6] == ["/opt/slurm/bin/sacct", "-X", "-n", "-P", "-a", "--format=JobIDRaw,Start,State"]
    assert argv[6] == "-S" and argv[7] == time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(1795317000.0))


def test_the_jobcomp_source_adds_running_jobs_from_squeue_or_notes_why_not() -> None:
    squeue = (DATA / "squeue-mixed.json").read_text()
    path = str(DATA / "jobcomp.txt")
    starts = read_starts(_reader(Recorded({"squeue": squeue})), "jobcomp", 0.0, jobcomp_path=path)
    assert starts.sources[0] == f"jobcomp ({path})" and starts.sources[1].startswith("squeue")
    assert set(parse_squeue_starts(squeue)) <= set(starts.start_s) and 2 in starts.start_s
    notes: list[str] = []
    starts = read_starts(_reader(Recorded({})), "jobcomp", 0.0, jobcomp_path=path, note=notes.append)
    assert len(notes) == 1 and "squeue failed" in notes[0] and starts.sources == [f"jobcomp ({path})"]


def test_auto_asks_slurm_which_source_it_has() -> None:
    config = (DATA / "scontrol-show-config.txt").read_text()  # no accounting storage, jobcomp/filetxt
    jobcomp = str(DATA / "jobcomp.txt")
    runner = Recorded({"scontrol": config})
    assert _reader(runner, jobcomp_path=jobcomp).choose("auto", None) == ("jobcomp", jobcomp)
    assert runner.argv == [["scontrol", "show", "config"]]
    with_dbd = config.replace("accounting_storage/none", "accounting_storage/slurmdbd")
    assert _reader(Recorded({"scontrol": with_dbd})).choose("auto", None)[0] == "sacct"
    no_jobcomp = config.replace("jobcomp/filetxt", "jobcomp/none")
    assert _reader(Recorded({"scontrol": no_jobcomp})).choose("auto", None)[0] == "squeue"
