"""The train and evaluate commands: outputs, progress off when not a terminal, one-line errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from rlsched.cli import main
from rlsched.core.policies import read_policy_spec
from tests.workflow.conftest import CONFIG, write_swf


@pytest.fixture
def swf(tmp_path: Path) -> Path:
    return write_swf(tmp_path / "t.swf", n=300)


def test_train_then_evaluate(swf: Path, tmp_path: Path) -> None:
    config = tmp_path / "rlsched.toml"
    config.write_text(CONFIG)
    model = tmp_path / "m.npz"
    result = CliRunner().invoke(main, ["train", "--workload", str(swf), "--policy", "sarsa-esn:pretrain_decisions=30",
                                       "--config", str(config), "--out", str(model), "--checkpoint-every", "100"])
    assert result.exit_code == 0, result.output
    assert "chunks 3" in result.output and "VOs (physics, chem, other)" in result.output
    assert (tmp_path / "m.ckpt.npz").is_file()
    spec, _ = read_policy_spec(model)
    assert spec.class_rule is not None and spec.class_rule["interactive_partitions"] == ["short"]
    # The rerun resumes after the last chunk: nothing left to train.
    again = CliRunner().invoke(main, ["train", "--workload", str(swf), "--policy", "sarsa-esn:pretrain_decisions=30",
                                      "--config", str(config), "--out", str(model), "--checkpoint-every", "100"])
    assert again.exit_code == 0 and "resumed from" in again.output and "after chunk 3" in again.output

    out = tmp_path / "eval"
    result = CliRunner().invoke(main, ["evaluate", "--workload", str(swf), "--config", str(config), "--policy",
                                       str(model), "--policy", "easy", "--policy", "easy-sjf", "--policy", "recorded",
                                       "--windows", "2", "--out", str(out)])
    assert result.exit_code == 0, result.output
    for label in ("m ", "easy ", "easy-sjf ", "recorded "):
        assert label in result.output
    assert (out / "report.md").is_file() and (out / "wait_cdf.png").is_file()
    js = CliRunner().invoke(main, ["evaluate", "--workload", str(swf), "--policy", "easy", "--json", "--no-figures",
                                   "--out", str(tmp_path / "e2")])
    assert js.exit_code == 0 and js.output.lstrip().startswith("{")


@pytest.mark.parametrize(("argv", "fragment"), [
    (["train", "--policy", "easy", "--out", "m.npz"], "not a learned policy"),
    (["train", "--policy", "sarsa-esn:lam=3", "--out", "m.npz"], "must lie in [0, 1]"),
    (["train", "--policy", "nope", "--out", "m.npz"], "unknown policy 'nope'"),
    (["evaluate", "--policy", "easy", "--policy", "easy", "--out", "d"], "given twice"),
    (["evaluate", "--policy", "missing.npz", "--out", "d"], "no such file"),
    (["evaluate", "--policy", "easy", "--windows", "1000", "--out", "d"], "fewer than 1000 windows"),
])
def test_bad_arguments_are_one_line_errors(swf: Path, tmp_path: Path, argv: list[str], fragment: str,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, [argv[0], "--workload", str(swf), *argv[1:]])
    assert result.exit_code == 1, result.output
    error = result.output.strip().splitlines()
    assert len(error) == 1 and error[0].startswith("Error: ") and fragment in error[0], result.output


def test_train_on_one_window_of_the_evaluation(swf: Path, tmp_path: Path) -> None:
    model = tmp_path / "w0.npz"
    result = CliRunner().invoke(main, ["train", "--workload", str(swf), "--policy", "sarsa-esn:pretrain_decisions=30",
                                       "--window", "0/2", "--out", str(model)])
    assert result.exit_code == 0, result.output
    assert "jobs 150 " in result.output
    bad = CliRunner().invoke(main, ["train", "--workload", str(swf), "--policy", "sarsa-esn", "--window", "2/2",
                                    "--out", str(model)])
    assert bad.exit_code == 2 and "0..1" in bad.output
