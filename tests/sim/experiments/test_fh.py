"""The FH experiments in quick mode (a 3-week cut of KTH) and the `rlsched sim sweep` command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from rlsched.cli import main
from rlsched.sim.experiments import registry
from tests.conftest import shared_trace


def test_fh_ours_quick(tmp_path: Path) -> None:
    shared_trace("kth")
    result = registry()["fh-ours"].run(tmp_path, quick=True)
    saved = json.loads((tmp_path / "results.json").read_text())
    policies = [r["policy"] for r in saved["rows"]]
    assert policies == [
        "constant-best",
        "random-mean",
        "random-best",
        "qlearning",
        "qlearning-accrued",
        "daily-learned",
        "daily-hindsight",
        "per-pass-held-daily",
        "per-pass-rule",
    ]
    for row in saved["rows"]:
        assert {"trace", "policy", "V", "twt_imp_pct", "cost_pct", "balance", "wall_s"} <= set(row)
    by = {r["policy"]: r for r in result["rows"]}
    # The references' order of FH §3: the best constant V beats the random mean, and the best random
    # run is at least its mean; the constant-best V is a real cap, not 0 (leasing pays on KTH).
    assert by["constant-best"]["balance"] > by["random-mean"]["balance"]
    assert by["random-best"]["balance"] >= by["random-mean"]["balance"]
    assert 0 < by["constant-best"]["V"] < 100
    # One setup alone: nothing to tune on, so the untuned defaults, and the output says so.
    assert by["daily-learned"]["chosen_on"] == [] and by["per-pass-rule"]["chosen_on"] == []
    report = (tmp_path / "report.md").read_text()
    assert "FH balance" in report and "per evaluated V" in report
    # The per-pass rule is in its own table, after the daily caps.
    daily_at, per_pass_at = report.index("## Daily caps"), report.index("## Per-pass transfer rule")
    assert (
        daily_at
        < report.index("| kth-quick | daily-learned")
        < per_pass_at
        < report.index("| kth-quick | per-pass-rule")
    )
    assert "untuned default" in report
    for name in saved["figures"]:
        assert (tmp_path / name).stat().st_size > 1000


def test_fh_daily_held_out_prior_and_jittered_replays(tmp_path: Path) -> None:
    """Two short traces: every setting and the constant V chosen on the other one, the prior taken from
    the other one, and the learner beside the constant V on jittered replays with a paired verdict."""
    from rlsched.sim.experiments.fh import run_fh

    shared_trace("kth")
    shared_trace("ctc")
    grid = ((2, 3, 3.0, "held", 0.0), (2, 1, 3.0, "held", 10.0))
    result = run_fh(
        tmp_path,
        {"references", "daily", "spread"},
        setups=("kth-quick", "ctc-quick"),
        workers=1,
        random_runs=4,
        daily_grid=grid,
        jitter_seeds=(1, 2),
    )
    by = {(r["trace"], r["policy"]): r for r in result["rows"]}
    for name, other in (("kth-quick", "ctc-quick"), ("ctc-quick", "kth-quick")):
        learned = by[(name, "daily-learned")]
        assert learned["chosen_on"] == [other]
        assert set(learned["balance_by_params"]) == {
            "H=2 bins=3 prior=3 features=backlog+arrivals continuation=held",
            "H=2 bins=1 prior=3 features=backlog+arrivals continuation=held transfer=10",
        }
        if "transfer" in learned["params"]:
            assert learned["prior_from"] == [other]
        held = by[(name, "constant-held-out")]
        assert held["chosen_on"] == [other] and held["balance"] <= by[(name, "constant-best")]["balance"]
        spread = result["spread"]["traces"][name]
        assert len(spread["constant_best"]) == len(spread["daily_learned"]) == 3
        # Replay 0 is the recorded trace: the rows above.
        assert spread["constant_best"][0] == by[(name, "constant-best")]["balance"]
        assert spread["daily_learned"][0] == by[(name, "daily-learned")]["balance"]
        assert len(set(spread["constant_best"])) > 1, "the jitter must change the runs"
        diff = spread["against_best"]
        assert diff["verdict"] == (
            "tie" if abs(diff["mean"]) <= diff["sd"] else "above" if diff["mean"] > 0 else "below"
        )
        # Hindsight is the best constant on each replay: the held-out one never beats it.
        assert all(h <= b for h, b in zip(spread["constant_held_out"], spread["constant_best"], strict=True))
        # The gap to the best constant V, split by period, adds up to the whole gap.
        gap = learned["gap_by_period"]
        assert sum(gap.values()) == pytest.approx(learned["balance"] - by[(name, "constant-best")]["balance"])
        # The hindsight reference (its own trace's clones from day one) is reported beside the learner.
        assert by[(name, "daily-hindsight")]["params"].endswith("its own trace's clones from day one")
    report = (tmp_path / "report.md").read_text()
    assert "## Spread over jittered replays" in report and "| ctc-quick | constant-held-out |" in report
    assert "the gap to the best constant V by period: first 30 days" in report


def test_sweep_command(tmp_path: Path) -> None:
    shared_trace("kth")
    out = tmp_path / "rows.csv"
    result = CliRunner().invoke(
        main, ["sim", "sweep", "--setup", "kth-quick", "--caps", "0:10:5", "--executor", "serial", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    lines = out.read_text().splitlines()
    assert len(lines) == 1 + 3 and lines[0].startswith("trace,policy,V")
    bad = CliRunner().invoke(main, ["sim", "sweep", "--setup", "nowhere"])
    assert bad.exit_code != 0 and "unknown leasing setup" in bad.output
