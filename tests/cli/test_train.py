"""`rlsched train`'s argument messages (issue 24, item 12)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from rlsched.cli import main
from tests.workflow.conftest import write_swf


def _train_scored(tmp_path: Path, *options: str, jobs: int = 200, out: str = "scored.npz") -> tuple[Result, Path]:
    """``rlsched train --policy scored`` with a tiny search on a small trace of ``jobs`` jobs: (result, model)."""
    swf = tmp_path / "t.swf"
    if not swf.exists():
        write_swf(swf, n=jobs)
    model = tmp_path / out
    args = ["train", "--workload", str(swf), "--policy", "scored", "--out", str(model), "--quiet"]
    search = ["--search-population", "4", "--search-generations", "1"]
    return CliRunner().invoke(main, [*args, *search, *options]), model


@pytest.mark.parametrize("window", ["0/2", "0/0", "3/2"])
def test_the_retired_window_option_is_one_line_that_makes_sense(tmp_path: Path, window: str) -> None:
    swf = write_swf(tmp_path / "t.swf", n=50)
    result = CliRunner().invoke(
        main,
        [
            "train",
            "--workload",
            str(swf),
            "--policy",
            "sarsa-esn",
            "--window",
            window,
            "--out",
            str(tmp_path / "m.npz"),
        ],
    )
    assert result.exit_code == 2, result.output
    error = result.output.strip().splitlines()
    assert len(error) == 1 and "--window is replaced by --split TRAIN/VALIDATION/TEST" in error[0], result.output


def test_time_left_follows_the_growth_of_the_refits() -> None:
    from rlsched.cli.train import TimeLeft

    def cost(n: float, a: float = 2e-3, b: float = 1e-6, memory: float = 6000) -> float:
        growth = n * n / 2 if n <= memory else memory * memory / 2 + memory * (n - memory)
        return a * n + b * growth

    # Resumed at job 1,000 (the clock starts there): the fit uses differences from the first report.
    estimate = TimeLeft(10_000, 6000)
    for n in (1000, 2000, 3000, 4000):
        estimate.add(n, cost(n) - cost(1000))
    seconds, bound = estimate.left()  # type: ignore[misc]
    assert not bound and seconds == pytest.approx(cost(10_000) - cost(4000))
    two = TimeLeft(10_000, 6000)
    two.add(1000, 0.0)
    two.add(2000, cost(2000) - cost(1000))
    upper, bound = two.left()  # type: ignore[misc]
    assert bound and upper >= cost(10_000) - cost(2000)
    assert TimeLeft(10, None).left() is None


def test_train_prints_the_time_left_in_its_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Not a terminal (CliRunner): the estimate goes to stderr as a log line, at most every ESTIMATE_EVERY_S.
    ticks = iter(range(0, 10_000, 7))
    monkeypatch.setattr("rlsched.cli.train.clock", lambda: float(next(ticks)))
    monkeypatch.setattr("rlsched.cli.train.ESTIMATE_EVERY_S", 0.0)
    monkeypatch.setattr("rlsched.cli.train.LONG_TRAINING_JOBS", 300)
    swf = write_swf(tmp_path / "t.swf", n=300)
    result = CliRunner().invoke(
        main,
        [
            "train",
            "--workload",
            str(swf),
            "--policy",
            "sarsa-esn:pretrain_decisions=30",
            "--checkpoint-every",
            "50",
            "--out",
            str(tmp_path / "m.npz"),
        ],
    )
    assert result.exit_code == 0, result.output
    log = result.stderr.splitlines()
    # The train window of the default split (150 jobs), three passes (the default): 450 jobs to learn on.
    assert log[0].startswith("t[train] sarsa-esn: 450 jobs; each re-fit passes over the replay memory"), log
    estimates = [line for line in log if " of 450 jobs in " in line]
    assert estimates and estimates[0].startswith("t[train] sarsa-esn: 100 of 450 jobs in 14 s; up to "), log
    assert all(line.endswith(" left") for line in estimates)
    assert any(" about " in line for line in estimates), "three reports or more: a fit, not a bound"
    quiet = CliRunner().invoke(
        main,
        [
            "train",
            "--workload",
            str(swf),
            "--policy",
            "sarsa-esn:pretrain_decisions=30",
            "--checkpoint-every",
            "50",
            "--fresh",
            "-q",
            "--out",
            str(tmp_path / "q.npz"),
        ],
    )
    assert quiet.exit_code == 0 and quiet.stderr == "", quiet.output


def test_train_searches_the_scored_policy_and_prints_its_verdict(tmp_path: Path) -> None:
    result, out = _train_scored(tmp_path)
    assert result.exit_code == 0, result.output
    lines = result.output.strip().splitlines()
    assert "the search chose" in result.output and f"{out}: the scored policy of seed 0" in lines
    found = next(line for line in lines if line.startswith("seed 0: found scored:"))
    assert "runtime_model=learned" in found and "<- selected" in found
    assert lines[-1].startswith("model ") and " on validation bsld" in lines[-1]
    from rlsched.core.policies import read_policy_spec

    spec, meta = read_policy_spec(out)
    assert spec.name == "scored" and meta["search"]["config"]["population"] == 4 and "verdict" in meta["policy"]


def test_with_three_windows_train_says_how_far_each_windows_best_rule_carried_to_the_next(tmp_path: Path) -> None:
    result, _ = _train_scored(tmp_path, "--rule-windows", "3", jobs=400)
    assert result.exit_code == 0, result.output
    last = result.output.strip().splitlines()[-1]
    assert last.startswith("rules window to window: ") and "on train 2/2" in last and "on validation" in last
    # One window (the default): nothing to carry over from, so no such line.
    alone, _ = _train_scored(tmp_path, out="one.npz")
    assert alone.exit_code == 0 and "window to window" not in alone.output


@pytest.mark.parametrize(
    ("policy", "option", "message"),
    [
        ("scored", ["--epochs", "3"], "--epochs: for a learned policy, not --policy scored"),
        ("scored", ["--checkpoint-every", "100"], "--checkpoint-every: for a learned policy"),
        ("scored", ["--pretrain-rule", "best"], "--pretrain-rule: for a learned policy"),
        ("sarsa-esn", ["--search-population", "4"], "--search-population: only for --policy scored"),
        ("sarsa-esn", ["--search-runtime", "requested"], "--search-runtime: only for --policy scored"),
    ],
)
def test_options_of_the_other_family_are_refused_in_one_line(
    tmp_path: Path, policy: str, option: list[str], message: str
) -> None:
    swf = write_swf(tmp_path / "t.swf", n=50)
    result = CliRunner().invoke(
        main, ["train", "--workload", str(swf), "--policy", policy, *option, "--out", str(tmp_path / "m.npz")]
    )
    assert result.exit_code == 1, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and message in lines[0], result.output
    assert not (tmp_path / "m.npz").exists()


def _prior(path: Path, objective: str, rules: dict[str, dict[str, float]]) -> Path:
    """A learning run's results.json holding only what a rule prior reads: trace → rule → validation score."""
    traces = [{"trace": t, "rules": {k: {"validation": v} for k, v in s.items()}} for t, s in rules.items()]
    path.write_text(json.dumps({"settings": {"objective": {"name": objective, "class_weights": {}}}, "traces": traces}))
    return path


def test_train_with_a_rule_prior_deploys_the_rule_the_other_traces_pick(tmp_path: Path) -> None:
    from rlsched.core.policies import read_verdict

    # Two other traces agree on f4; the trained trace's own window in the file (named "t") says saf and is left out.
    prior = _prior(
        tmp_path / "results.json",
        "bsld",
        {"t": {"saf": 1.0, "f4": 9.0}, "x": {"saf": 3.0, "f4": 1.0}, "y": {"saf": 2.0, "f4": 1.5}},
    )
    result, out = _train_scored(tmp_path, "--rule-prior", str(prior))
    assert result.exit_code == 0, result.output
    verdict = read_verdict(out)
    assert verdict is not None and verdict["deploy_rule"] == "f4" and verdict["deploy_windows"] == 2
    assert verdict["deploy_prior"] == f"the validation windows of 2 other traces ({prior})"
    if verdict["outcome"] == "loses":
        assert 'deploy f4 (`[agent] kind = "f4"`, the rule the validation windows of 2 other traces' in result.output


@pytest.mark.parametrize(
    ("objective", "extra", "message"),
    [
        ("W", [], "the rule prior was measured for W; this run judges by bsld"),
        ("bsld", ["--rule-windows", "3"], "--rule-prior and --rule-windows both choose the rule to deploy"),
    ],
)
def test_a_rule_prior_that_cannot_serve_is_refused_before_training(
    tmp_path: Path, objective: str, extra: list[str], message: str
) -> None:
    swf = write_swf(tmp_path / "t.swf", n=50)
    prior = _prior(tmp_path / "results.json", objective, {"x": {"saf": 1.0}})
    args = ["train", "--workload", str(swf), "--policy", "sarsa-esn", "--out", str(tmp_path / "m.npz")]
    result = CliRunner().invoke(main, [*args, "--rule-prior", str(prior), *extra])
    assert result.exit_code != 0 and message in result.output and "Traceback" not in result.output
    assert not (tmp_path / "m.npz").exists()


def test_a_rule_prior_that_is_not_a_learning_run_names_its_file(tmp_path: Path) -> None:
    swf = write_swf(tmp_path / "t.swf", n=50)
    bad = tmp_path / "notes.json"
    bad.write_text("[1, 2]")
    args = ["train", "--workload", str(swf), "--policy", "sarsa-esn", "--out", str(tmp_path / "m.npz")]
    result = CliRunner().invoke(main, [*args, "--rule-prior", str(bad)])
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and f"{bad}: not a learning run's results.json" in lines[0]


def test_the_public_rule_prior_ships_with_rlsched_and_serves_bsld_only(tmp_path: Path) -> None:
    from rlsched.core.policies import read_verdict

    result, out = _train_scored(tmp_path, "--rule-prior", "public")
    assert result.exit_code == 0, result.output
    verdict = read_verdict(out)
    assert verdict is not None and verdict["deploy_windows"] == 9
    assert verdict["deploy_prior"] == "the validation windows of 9 other traces (public: docs/results/learning-12k)"
    w, _ = _train_scored(tmp_path, "--objective", "W", "--rule-prior", "public")
    assert w.exit_code == 1 and "public: docs/results/learning-12k: the rule prior was measured for bsld" in w.output
