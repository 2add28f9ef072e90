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
    argv = [
        "train",
        "--workload",
        str(swf),
        "--policy",
        "sarsa-esn:pretrain_decisions=30",
        "--config",
        str(config),
        "--out",
        str(model),
        "--checkpoint-every",
        "100",
        "--epochs",
        "2",
    ]
    result = CliRunner().invoke(main, argv)
    assert result.exit_code == 0, result.output
    # 300 jobs, split 50/25/25: 150 to train on (two chunks of at most 100), 75 to select on, 75 held out.
    assert "train jobs 0–149, validation jobs 150–224, test jobs 225–299" in result.output
    # The config's mode is shadow: trained and judged in boost mode, the mode a shadowed model goes live in.
    assert "mode boost (top 32 re-ranked every 10 s over Slurm's fifo order)" in result.output
    assert "boost mode)" in result.output.strip().splitlines()[-1]
    assert "jobs 150 x 2 passes" in result.output and "chunks 2" in result.output
    assert "VOs (physics, chem, other)" in result.output
    verdict_line = result.output.strip().splitlines()[-1]
    assert verdict_line.startswith("model ") and "on validation bsld" in verdict_line
    assert (tmp_path / "m.ckpt.npz").is_file()
    spec, meta = read_policy_spec(model)
    assert spec.class_rule is not None and spec.class_rule["interactive_partitions"] == ["short"]
    assert meta["policy"]["verdict"]["line"] == verdict_line
    # The rerun resumes after the last chunk of the last pass: nothing left to train, the same verdict.
    again = CliRunner().invoke(main, argv)
    assert again.exit_code == 0 and "resumed from" in again.output and "after chunk 4" in again.output
    assert again.output.strip().splitlines()[-1] == verdict_line

    out = tmp_path / "eval"
    result = CliRunner().invoke(
        main,
        [
            "evaluate",
            "--workload",
            str(swf),
            "--config",
            str(config),
            "--policy",
            str(model),
            "--policy",
            "easy",
            "--policy",
            "easy-sjf",
            "--policy",
            "recorded",
            "--windows",
            "2",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    for label in ("m ", "easy ", "easy-sjf ", "recorded "):
        assert label in result.output
    assert "test window only: jobs 225–299 of 300 (split 50/25/25" in result.output
    assert "Mode: boost" in result.output
    report = (out / "report.md").read_text()
    assert "trained on jobs 0–149, selected on jobs 150–224 of t (300 jobs, split 50/25/25)" in report
    assert (out / "report.md").is_file() and (out / "wait_cdf.png").is_file()
    js = CliRunner().invoke(
        main,
        [
            "evaluate",
            "--workload",
            str(swf),
            "--policy",
            "easy",
            "--json",
            "--no-figures",
            "--mode",
            "gate",
            "--out",
            str(tmp_path / "e2"),
        ],
    )
    assert js.exit_code == 0 and js.output.lstrip().startswith("{")
    # A test window that reaches into the jobs the model was selected on is refused in one line.
    overlap = CliRunner().invoke(
        main,
        [
            "evaluate",
            "--workload",
            str(swf),
            "--config",
            str(config),
            "--policy",
            str(model),
            "--split",
            "40/20/40",
            "--out",
            str(out),
        ],
    )
    assert overlap.exit_code == 1
    assert overlap.output.count("\n") == 1 and "selected on jobs 150–224" in overlap.output


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["train", "--policy", "easy", "--out", "m.npz"], "not a learned policy"),
        (["train", "--policy", "sarsa-esn:lam=3", "--out", "m.npz"], "must lie in [0, 1]"),
        (["train", "--policy", "nope", "--out", "m.npz"], "unknown policy 'nope'"),
        (["evaluate", "--policy", "easy", "--policy", "easy", "--out", "d"], "given twice"),
        (["evaluate", "--policy", "missing.npz", "--out", "d"], "no such file"),
        (["evaluate", "--policy", "easy", "--windows", "1000", "--out", "d"], "fewer than 1000 windows"),
    ],
)
def test_bad_arguments_are_one_line_errors(
    swf: Path, tmp_path: Path, argv: list[str], fragment: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, [argv[0], "--workload", str(swf), *argv[1:]])
    assert result.exit_code == 1, result.output
    error = result.output.strip().splitlines()
    assert len(error) == 1 and error[0].startswith("Error: ") and fragment in error[0], result.output


def test_the_retired_window_option_is_refused_in_one_line(swf: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main,
        ["train", "--workload", str(swf), "--policy", "sarsa-esn", "--window", "0/2", "--out", str(tmp_path / "m.npz")],
    )
    assert result.exit_code == 2 and "--window is replaced by --split" in result.output
    assert not (tmp_path / "m.npz").exists()


def test_the_objective_from_the_command_line_is_recorded_and_judged_by(swf: Path, tmp_path: Path) -> None:
    model = tmp_path / "w.npz"
    result = CliRunner().invoke(
        main,
        [
            "train",
            "--workload",
            str(swf),
            "--policy",
            "sarsa-esn:pretrain_decisions=30",
            "--out",
            str(model),
            "--epochs",
            "1",
            "--mode",
            "gate",
            "--objective",
            "W",
            "--class-weight",
            "interactive=3",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "objective W (interactive ×3)" in result.output
    assert "on validation W (interactive ×3)" in result.output.strip().splitlines()[-1]
    _, meta = read_policy_spec(model)
    verdict = meta["policy"]["verdict"]
    assert verdict["objective"] == {"name": "W", "class_weights": {"interactive": 3.0}}
    # W: higher is better, so the best rule is the highest-scoring one.
    assert verdict["rule_score"] == max(verdict["rules"].values())
    bad = CliRunner().invoke(
        main, ["train", "--workload", str(swf), "--policy", "sarsa-esn", "--out", str(model), "--class-weight", "gpu=2"]
    )
    assert bad.exit_code == 1 and "class weight 'gpu'" in bad.output and bad.output.count("\n") == 1
