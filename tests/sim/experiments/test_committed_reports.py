"""Committed results regenerate: each report.md under docs/results is what the current report code
renders from the results.json beside it (`rlsched sim experiment NAME --report-only --out DIR`)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from rlsched.cli import main
from rlsched.sim.experiments import Experiment, registry

RESULTS = Path(__file__).resolve().parents[3] / "docs" / "results"
#: Committed folder → the experiment that wrote it.
COMMITTED = {
    "perez-rigid": "perez-rigid",
    "perez-fqi": "perez-fqi",
    "perez-elastic": "perez-elastic",
    "fh": "fh-ours",
    "fh-file": "fh-ours-file",
    "tong": "tong",
}


@pytest.mark.parametrize("folder", sorted(COMMITTED))
def test_a_committed_report_is_what_its_results_render_to(folder: str, tmp_path: Path) -> None:
    source = RESULTS / folder
    copy = tmp_path / folder
    copy.mkdir()
    shutil.copy(source / "results.json", copy / "results.json")
    result = CliRunner().invoke(main, ["sim", "experiment", COMMITTED[folder], "--report-only", "--out", str(copy)])
    assert result.exit_code == 0, result.output
    assert (copy / "report.md").read_text() == (source / "report.md").read_text(), (
        f"docs/results/{folder}/report.md is stale: rerun `rlsched sim experiment {COMMITTED[folder]} "
        f"--report-only --out docs/results/{folder}`"
    )


def test_every_experiment_with_committed_results_can_render() -> None:
    experiments = registry()
    for folder, name in COMMITTED.items():
        assert experiments[name].render is not None and (RESULTS / folder / "results.json").is_file()


def test_report_only_refuses_in_one_line(tmp_path: Path) -> None:
    runner = CliRunner()
    empty = runner.invoke(main, ["sim", "experiment", "perez-rigid", "--report-only", "--out", str(tmp_path)])
    assert empty.exit_code == 1 and "no results.json" in empty.output and "Traceback" not in empty.output
    (tmp_path / "results.json").write_text("{not json")
    broken = runner.invoke(main, ["sim", "experiment", "fh-ours", "--report-only", "--out", str(tmp_path)])
    assert broken.exit_code == 1 and "cannot be read" in broken.output
    (tmp_path / "results.json").write_text('{"rows": 3}')
    wrong = runner.invoke(main, ["sim", "experiment", "fh-ours", "--report-only", "--out", str(tmp_path)])
    assert wrong.exit_code == 1 and "not a fh-ours result" in wrong.output
    assert not (tmp_path / "report.md").exists()


def test_an_experiment_without_a_renderer_says_to_rerun(tmp_path: Path) -> None:
    (tmp_path / "results.json").write_text('{"rows": []}')
    with pytest.raises(ValueError, match="rerun it"):
        Experiment("opaque", "", lambda out, **options: {}).rerender(tmp_path)
    assert not (tmp_path / "report.md").exists()
