"""`rlsched trace info`: the class counts come with the rule that produced them (issue 24, item 8)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from click.testing import CliRunner

from rlsched.cli import main
from tests.workflow.conftest import write_swf


def swf_columns(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """Runtime and requested time of every job line, read straight from the file."""
    rows = [line.split() for line in path.read_text().splitlines() if line and not line.startswith(";")]
    return np.array([float(r[3]) for r in rows]), np.array([float(r[8]) for r in rows])


def test_trace_info_classes_by_the_time_limit_and_names_the_rule(tmp_path: Path) -> None:
    swf = write_swf(tmp_path / "t.swf", n=300)
    run, limit = swf_columns(swf)
    by_limit, by_runtime = int((limit <= 900).sum()), int((run < 900).sum())
    assert by_limit != by_runtime, "the trace must tell the two rules apart"

    result = CliRunner().invoke(main, ["trace", "info", str(swf), "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)["summary"]
    # The daemon's rule (what train and evaluate use), and the output says so.
    assert summary["interactive_jobs"] == by_limit and summary["batch_jobs"] == len(run) - by_limit
    assert "time limit <= 900 s" in summary["class_rule"]

    text = CliRunner().invoke(main, ["trace", "info", str(swf)])
    assert text.exit_code == 0, text.output
    rows = {line.split()[0]: line for line in text.output.splitlines() if line.startswith("  ")}
    assert "time limit <= 900 s" in rows["class_rule"]
    assert rows["interactive_jobs"].split()[-1] == f"{by_limit:,}"

    runtime = CliRunner().invoke(main, ["trace", "info", str(swf), "--json", "--class-by", "runtime"])
    assert runtime.exit_code == 0, runtime.output
    summary = json.loads(runtime.output)["summary"]
    assert summary["interactive_jobs"] == by_runtime and "runtime < 900 s" in summary["class_rule"]
