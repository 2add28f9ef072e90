"""`rlsched train`'s argument messages (issue 24, item 12)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from rlsched.cli import main
from tests.workflow.conftest import write_swf


@pytest.mark.parametrize(("window", "message"), [
    ("0/0", "--window 0/0: K, the number of windows, must be at least 1"),
    ("3/2", "--window 3/2: I must lie in 0..1"),
])
def test_a_bad_window_is_one_line_that_makes_sense(tmp_path: Path, window: str, message: str) -> None:
    swf = write_swf(tmp_path / "t.swf", n=50)
    result = CliRunner().invoke(main, ["train", "--workload", str(swf), "--policy", "sarsa-esn", "--window", window,
                                       "--out", str(tmp_path / "m.npz")])
    assert result.exit_code == 2, result.output
    error = result.output.strip().splitlines()
    assert len(error) == 1 and message in error[0] and "-1" not in error[0], result.output
