"""The train/validation/test split and the deployment mode train and evaluate share."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rlsched.sim.traces.swf import read_swf
from rlsched.workflow.split import Deployment, SplitError, TimeSplit, deployment_of, site_choices


def test_the_default_split_is_half_quarter_quarter_in_submit_order(small_swf: Path) -> None:
    w = read_swf(small_swf)
    split = TimeSplit()
    assert split.bounds(len(w)) == {"train": (0, 200), "validation": (200, 300), "test": (300, 400)}
    parts = {name: split.window(w, name) for name in ("train", "validation", "test")}
    assert np.array_equal(np.concatenate([p.submit for p in parts.values()]), w.submit)
    assert parts["validation"].name == f"{w.name}[validation]"
    # Every window one-hots the same VOs, in the same columns, whichever of them it holds.
    assert all(p.vo_names == w.vo_names for p in parts.values())
    recorded = split.windows(w)
    assert recorded["test"]["jobs"] == [300, 400] and recorded["test"]["submit_s"][0] == float(w.submit[300])


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("50/50", "TRAIN/VALIDATION/TEST"),
        ("50/25/20", "sum to 100"),
        ("0/50/50", "must not be empty"),
        ("a/b/c", "TRAIN/VALIDATION/TEST"),
        ("60/-10/50", "sum to 100"),
    ],
)
def test_bad_splits_are_one_line_errors(text: str, fragment: str) -> None:
    with pytest.raises(SplitError, match=fragment):
        TimeSplit.parse(text)


def test_an_empty_test_window_is_refused_when_asked_for(small_swf: Path) -> None:
    split = TimeSplit.parse("75/25/0")
    w = read_swf(small_swf)
    assert len(split.window(w, "validation")) == 100
    with pytest.raises(SplitError, match="the test window of --split 75/25/0 holds no job"):
        split.window(w, "test")


def test_the_mode_comes_from_the_config_and_the_option_wins(site_config: Path, tmp_path: Path) -> None:
    assert deployment_of("gate").mode == "gate"
    assert deployment_of("shadow").mode == "boost"  # shadowed rankings are deployed in boost mode
    assert deployment_of("gate", override="boost").mode == "boost"
    gate = tmp_path / "gate.toml"
    gate.write_text(
        site_config.read_text()
        .replace("[backend]\n", '[backend]\nmode = "boost"\npoll_interval_s = 20\nmax_boosted = 8\n')
        .replace('kind = "sarsa-esn"', 'kind = "sarsa-esn"\nobjective = "W"\nclass_weights = {interactive = 3}')
    )
    choices = site_choices(gate, None, None, None)
    assert choices.deployment == Deployment("boost", 20.0, 8)
    assert choices.objective.name == "W" and dict(choices.objective.class_weights) == {"interactive": 3}
    cli = site_choices(gate, "gate", "bsld", {"batch": 2.0})
    assert cli.deployment.mode == "gate" and cli.objective.label() == "bsld (batch ×2)"
    assert site_choices(None, None, None, None).deployment == Deployment("boost", 10.0, 32)
