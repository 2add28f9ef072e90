"""``rlsched learning``: the table's command writes the three files and regenerates the report alone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from rlsched.cli import main
from tests.workflow.conftest import write_swf


def test_learning_writes_the_table_and_report_only_regenerates_it(tmp_path: Path) -> None:
    swf = write_swf(tmp_path / "small.swf", n=200, interarrival_s=60.0)
    out = tmp_path / "learning"
    run = CliRunner().invoke(main, ["learning", "--traces", str(swf), "--quick", "--seeds", "2", "--out", str(out)])
    assert run.exit_code == 0, run.output
    data = json.loads((out / "results.json").read_text())
    assert data["settings"]["seeds"] == [0, 1] and data["settings"]["epochs"] == 1
    assert [r["jobs"] for r in data["traces"]] == [200]
    report = (out / "report.md").read_text()
    (out / "report.md").unlink()
    again = CliRunner().invoke(main, ["learning", "--report-only", "--out", str(out)])
    assert again.exit_code == 0, again.output
    assert (out / "report.md").read_text() == report


def test_the_objective_and_both_runtime_inputs_are_the_users_and_the_report_says_them(tmp_path: Path) -> None:
    swf = write_swf(tmp_path / "small.swf", n=200, interarrival_s=60.0)
    out = tmp_path / "learning"
    run = CliRunner().invoke(
        main,
        [
            "learning",
            "--traces",
            str(swf),
            "--quick",
            "--seeds",
            "1",
            "--objective",
            "W",
            "--class-weight",
            "interactive=3",
            "--scored-runtime",
            "user-last2",
            "--learned-runtime",
            "learned",
            "--out",
            str(out),
        ],
    )
    assert run.exit_code == 0, run.output
    data = json.loads((out / "results.json").read_text())
    assert data["settings"]["objective"] == {"name": "W", "class_weights": {"interactive": 3.0}}
    assert data["settings"]["search"]["runtime_model"] == "user-last2"
    assert "log_pred" in data["settings"]["search"]["features"]
    assert data["settings"]["learned_policy"] == data["traces"][0]["learned"]["policy"]
    assert data["settings"]["learned_policy"] == "sarsa-esn:runtime_model=learned"
    report = (out / "report.md").read_text()
    assert "Objective: W (interactive ×3) (higher is better" in report
    assert "the scored search the request and the user-last2 prediction" in report
    assert "the request and the learned prediction of each job as its runtime input" in report
    # W is higher-is-better: the best rule on test is the highest.
    row = data["traces"][0]
    assert row["best_rule_test"]["test"] == max(v["test"] for v in row["rules"].values())
    bad = CliRunner().invoke(
        main, ["learning", "--traces", str(swf), "--quick", "--class-weight", "batchy=2", "--out", str(out)]
    )
    assert bad.exit_code == 1 and "class weight 'batchy'" in bad.output and "Traceback" not in bad.output


def test_report_only_without_results_is_one_line(tmp_path: Path) -> None:
    run = CliRunner().invoke(main, ["learning", "--report-only", "--out", str(tmp_path)])
    assert run.exit_code == 1 and "results.json" in run.output


@pytest.mark.parametrize("name", ["learning", "learning-w", "learning-12k", "learning-whole", "learning-job-names"])
def test_the_committed_learning_report_is_what_its_results_render_to(tmp_path: Path, name: str) -> None:
    source = Path(__file__).resolve().parents[2] / "docs" / "results" / name
    (tmp_path / "results.json").write_text((source / "results.json").read_text())
    run = CliRunner().invoke(main, ["learning", "--report-only", "--out", str(tmp_path)])
    assert run.exit_code == 0, run.output
    assert (tmp_path / "report.md").read_text() == (source / "report.md").read_text(), (
        f"docs/results/{name}/report.md is stale: rerun `rlsched learning --report-only --out docs/results/{name}`"
    )
