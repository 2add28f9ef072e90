"""Issue 16: every bad CLI input is one line on stderr and a non-zero exit, naming the option; no traceback.

The commands run in a subprocess (``python -m rlsched``) as a user runs them, so the guard of
:class:`rlsched.cli.GuardedGroup` and the exit codes are the real ones."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from rlsched.cli import main

ROOT = Path(__file__).resolve().parents[2]


def rlsched(*args: str, env: dict[str, str] | None = None, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rlsched", *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=cwd,
        env={**os.environ, **(env or {})},
    )


def assert_one_line_error(done: subprocess.CompletedProcess[str], *words: str) -> str:
    assert done.returncode != 0, done.stdout
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


@pytest.fixture
def empty_swf(tmp_path: Path) -> Path:
    path = tmp_path / "empty.swf"
    path.write_text("; Computer: nothing\n; MaxProcs: 4\n")
    return path


def test_trace_info_lal_with_a_negative_seed() -> None:
    assert_one_line_error(rlsched("trace", "info", "lal", "--seed", "-1"), "'--seed'", "-1")


@pytest.mark.parametrize(
    "command",
    [
        ["sim", "run"],
        ["sim", "experiment", "fh-references", "--quick", "--out", "OUT"],
        ["evaluate", "--workload", "lal", "--policy", "fcfs", "--out", "OUT"],
        ["train", "--workload", "lal", "--policy", "sarsa-esn", "--out", "OUT/m.npz"],
    ],
)
def test_a_negative_seed_names_the_option(command: list[str], tmp_path: Path) -> None:
    args = [a.replace("OUT", str(tmp_path / "out")) for a in command]
    assert_one_line_error(rlsched(*args, "--seed", "-1"), "'--seed'", "-1")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("option", ["--json", "--schedule", "--save-model"])
def test_sim_run_output_into_a_missing_folder_fails_before_the_run(option: str, tmp_path: Path) -> None:
    missing = tmp_path / "no" / "such" / "out.file"
    done = rlsched("sim", "run", "--scale", "0.01", option, str(missing))
    assert_one_line_error(done, option, str(missing.parent), "does not exist")
    assert done.stdout == ""  # refused before the simulation printed its table
    assert not missing.parent.exists()  # and no folder was created


def test_sim_sweep_out_into_a_missing_folder_fails_before_the_run(tmp_path: Path) -> None:
    missing = tmp_path / "no" / "rows.json"
    done = rlsched("sim", "sweep", "--setup", "kth-quick", "--caps", "0", "--out", str(missing))
    assert_one_line_error(done, "--out", "does not exist")
    assert done.stdout == ""


@pytest.mark.parametrize(("caps", "word"), [("abc", "'abc'"), ("0:x", "'0:x'"), ("0:10:0", "step")])
def test_sim_sweep_bad_caps(caps: str, word: str) -> None:
    assert_one_line_error(rlsched("sim", "sweep", "--setup", "kth-quick", "--caps", caps), "'--caps'", word)


def test_experiment_without_its_trace_points_at_trace_fetch(tmp_path: Path) -> None:
    done = rlsched(
        "sim",
        "experiment",
        "fh-references",
        "--quick",
        "--out",
        str(tmp_path / "out"),
        env={"RLSCHED_TRACE_DIR": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache"), "HOME": str(tmp_path)},
    )
    assert_one_line_error(done, "not found", "rlsched trace fetch KTH-SP2-1996-2.1-cln")


def test_an_empty_swf_is_an_error_not_a_table_of_dashes(empty_swf: Path) -> None:
    done = rlsched("sim", "run", "--workload", str(empty_swf))
    assert_one_line_error(done, str(empty_swf), "no job")
    assert done.stdout == ""
    assert_one_line_error(rlsched("trace", "info", str(empty_swf)), "no job")


@pytest.mark.parametrize(
    "command",
    [["evaluate", "--policy", "fcfs", "--out", "OUT"], ["train", "--policy", "sarsa-esn", "--out", "OUT/m.npz"]],
)
def test_an_empty_swf_for_evaluate_and_train(command: list[str], empty_swf: Path, tmp_path: Path) -> None:
    args = [a.replace("OUT", str(tmp_path)) for a in command]
    assert_one_line_error(rlsched(*args, "--workload", str(empty_swf)), str(empty_swf), "no job")


def test_train_into_a_missing_folder_fails_before_training(tmp_path: Path) -> None:
    done = rlsched("train", "--workload", "lal", "--policy", "sarsa-esn", "--out", str(tmp_path / "no" / "m.npz"))
    assert_one_line_error(done, "--out", "does not exist")


def test_a_trim_that_removes_every_job_is_an_error() -> None:
    done = rlsched("sim", "run", "--scale", "0.01", "--trim", "100000")
    assert_one_line_error(done, "--trim", "100000")
    assert done.stdout == ""


def test_a_negative_trim_names_the_option() -> None:
    assert_one_line_error(rlsched("sim", "run", "--trim", "-5"), "'--trim'")


def test_an_unexpected_exception_is_one_line_and_debug_lets_the_traceback_through(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import rlsched.cli.sim as sim_cli

    def broken(*args: object, **kwargs: object) -> object:
        raise RuntimeError("disk\nexploded")

    monkeypatch.setattr(sim_cli, "load_workload", broken)
    result = CliRunner().invoke(main, ["sim", "run"])
    assert result.exit_code == 1 and result.exc_info is not None and result.exc_info[0] is SystemExit
    assert result.output.strip() == (
        "rlsched: internal error: RuntimeError: disk exploded (run with --debug for the traceback)"
    )
    result = CliRunner().invoke(main, ["--debug", "sim", "run"])
    assert isinstance(result.exception, RuntimeError)


# ------------------------------------------------------------------------------------------ --json listings
def test_trace_list_json() -> None:
    done = rlsched("trace", "list", "--json")
    data = json.loads(done.stdout)
    assert done.returncode == 0 and data["cache"]
    kth = next(log for log in data["logs"] if log["name"] == "KTH-SP2-1996-2.1-cln")
    assert "kth" in kth["aliases"] and len(kth["sha256"]) == 64


def test_sim_policies_and_experiment_list_json() -> None:
    policies = json.loads(rlsched("sim", "policies", "--json").stdout)
    names = {p["name"]: p for p in policies["policies"]}
    assert names["easy"]["live"] is True and "sarsa-esn" in names
    assert any(p["name"] == "lam" for p in names["sarsa-esn"]["params"])
    assert policies["lease_policies"] and all(p["description"] for p in policies["lease_policies"])
    experiments = json.loads(rlsched("sim", "experiment", "list", "--json").stdout)
    assert {"fh-references", "perez-rigid"} <= {e["name"] for e in experiments}


def test_sim_run_json_alone_prints_json_and_with_a_path_writes_the_file(tmp_path: Path) -> None:
    done = rlsched("sim", "run", "--scale", "0.01", "--json")
    summary = json.loads(done.stdout)
    assert summary["jobs"] > 0 and summary["workload"]
    out = tmp_path / "s.json"
    done = rlsched("sim", "run", "--scale", "0.01", "--json", str(out), "--trim", "1")
    assert "mean wait s" in done.stdout  # the table, as before
    assert json.loads(out.read_text())["jobs"] == summary["jobs"] - 2


def test_a_group_without_a_command_shows_its_help_and_version_exits_0() -> None:
    done = rlsched("sim")
    assert "rlsched sim [OPTIONS] COMMAND" in done.stdout + done.stderr and "Commands:" in done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    version = rlsched("--version")
    assert version.returncode == 0 and version.stdout.startswith("rlsched, version")
