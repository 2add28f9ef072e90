"""`rlsched sim run`: the table, the JSON summary keys, the schedule CSV, clean errors."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from rlsched.cli import main
from tests.conftest import shared_trace

REQUIRED_KEYS = {
    "workload",
    "scheduler",
    "cores",
    "jobs",
    "jobs_dropped",
    "mean_wait_s",
    "median_wait_s",
    "mean_bounded_slowdown",
    "mean_responsiveness",
    "utilization",
    "makespan_s",
    "by_class",
    "by_vo",
    "sim_seconds",
}
CLASS_KEYS = {"jobs", "mean_wait_s", "mean_responsiveness", "frac_wait_under_120s"}


def run_cli(*args: str) -> str:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize("scheduler", ["fcfs", "easy", "sjf", "edf"])
def test_sim_run_lal_json_and_schedule(tmp_path: Path, scheduler: str) -> None:
    out_json, out_csv = tmp_path / "s.json", tmp_path / "s.csv"
    text = run_cli(
        "sim",
        "run",
        "--workload",
        "lal",
        "--scheduler",
        scheduler,
        "--trim",
        "500",
        "--json",
        str(out_json),
        "--schedule",
        str(out_csv),
    )
    assert "interactive" in text and "utilization" in text
    summary = json.loads(out_json.read_text())
    assert summary.keys() >= REQUIRED_KEYS
    assert summary["cores"] == 81 and summary["scheduler"] == scheduler
    for cls in ("interactive", "batch"):
        assert summary["by_class"][cls].keys() >= CLASS_KEYS
    assert summary["by_class"]["interactive"]["jobs"] + summary["by_class"]["batch"]["jobs"] == summary["jobs"]
    assert len(summary["by_vo"]) == 7
    rows = list(csv.DictReader(out_csv.open()))
    assert len(rows) == summary["jobs"] + 1000
    assert {"job_id", "submit", "start", "end", "procs"} <= rows[0].keys()
    assert all(float(r["start"]) >= float(r["submit"]) for r in rows)


def test_sim_run_same_seed_same_result(tmp_path: Path) -> None:
    a, b, c = (tmp_path / f"{x}.json" for x in "abc")
    run_cli("sim", "run", "--seed", "3", "--json", str(a))
    run_cli("sim", "run", "--seed", "3", "--json", str(b))
    run_cli("sim", "run", "--seed", "4", "--json", str(c))
    pick = ("mean_wait_s", "mean_responsiveness", "utilization")
    ja, jb, jc = (json.loads(p.read_text()) for p in (a, b, c))
    assert [ja[k] for k in pick] == [jb[k] for k in pick] != [jc[k] for k in pick]


def test_sim_run_backfill_option_changes_sjf(tmp_path: Path) -> None:
    plain, bf = tmp_path / "p.json", tmp_path / "b.json"
    run_cli("sim", "run", "--scheduler", "sjf", "--json", str(plain))
    run_cli("sim", "run", "--scheduler", "sjf", "--backfill", "--json", str(bf))
    p, b = json.loads(plain.read_text()), json.loads(bf.read_text())
    assert b["scheduler"] == "sjf+easy" and b["mean_wait_s"] <= p["mean_wait_s"]


def test_native_needs_recorded_waits() -> None:
    result = CliRunner().invoke(main, ["sim", "run", "--workload", "lal", "--scheduler", "native"])
    assert result.exit_code != 0 and "no recorded wait" in result.output


def test_missing_trace_is_a_clean_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["sim", "run", "--workload", str(tmp_path / "nope.swf")])
    assert result.exit_code != 0 and "Error" in result.output and "Traceback" not in result.output


def test_sim_run_trace_native(tmp_path: Path) -> None:
    out = tmp_path / "n.json"
    run_cli("sim", "run", "--workload", str(shared_trace("kth")), "--scheduler", "native", "--json", str(out))
    summary = json.loads(out.read_text())
    assert summary["scheduler"] == "native" and summary["cores"] == 100


def test_experiment_list() -> None:
    run_cli("sim", "experiment", "list")
    result = CliRunner().invoke(main, ["sim", "experiment", "no-such-experiment", "--out", "x"])
    assert result.exit_code != 0 and "unknown experiment" in result.output


def test_experiment_n_seeds_reaches_the_experiment_or_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rlsched.sim.experiments import Experiment

    seen: dict[str, object] = {}

    def with_seeds(out: Path, *, quick: bool, seed: int, n_seeds: int | None = None) -> dict[str, object]:
        seen.update(quick=quick, seed=seed, n_seeds=n_seeds)
        return {}

    def without_seeds(out: Path, *, quick: bool, seed: int) -> dict[str, object]:
        return {}

    fake = {"with": Experiment("with", "", with_seeds), "without": Experiment("without", "", without_seeds)}
    monkeypatch.setattr("rlsched.sim.experiments.registry", lambda: fake)
    run_cli("sim", "experiment", "with", "--out", str(tmp_path), "--seed", "3", "--n-seeds", "1")
    assert seen == {"quick": False, "seed": 3, "n_seeds": 1}
    result = CliRunner().invoke(main, ["sim", "experiment", "without", "--out", str(tmp_path), "--n-seeds", "2"])
    assert result.exit_code != 0 and "takes no --n-seeds" in result.output
    result = CliRunner().invoke(main, ["sim", "experiment", "with", "--out", str(tmp_path), "--n-seeds", "0"])
    assert result.exit_code != 0


def test_trace_info_lal_is_marked_synthetic() -> None:
    out = run_cli("trace", "info", "lal", "--json")
    info = json.loads(out)
    assert info["summary"]["synthetic"] is True and info["summary"]["jobs"] == 9500
    assert "NOT the real LAL trace" in info["header"]["Generator"]


def test_sim_run_policy_save_model_then_evaluate_it(tmp_path: Path) -> None:
    model = tmp_path / "m.npz"
    text = run_cli(
        "sim",
        "run",
        "--workload",
        "lal",
        "--scale",
        "0.05",
        "--policy",
        "sarsa-esn:pretrain_decisions=20,seed=1",
        "--save-model",
        str(model),
    )
    assert f"model saved to {model}" in text and model.is_file()
    out = tmp_path / "eval.json"
    run_cli(
        "sim", "run", "--workload", "lal", "--scale", "0.05", "--seed", "2", "--policy", str(model), "--json", str(out)
    )
    assert json.loads(out.read_text())["jobs"] > 0


def test_sim_run_a_saved_scored_model_runs_as_its_spec(tmp_path: Path) -> None:
    """A model of the direct policy search runs from the file alone, with the schedule of its spec."""
    from rlsched.core.policies import parse_policy, save_scored_model

    spec = parse_policy("scored:weights=1/0.5/0/0.01")
    model = tmp_path / "scored.npz"
    save_scored_model(spec, model)
    by_file, by_spec = tmp_path / "file.json", tmp_path / "spec.json"
    run_cli("sim", "run", "--workload", "lal", "--scale", "0.05", "--policy", str(model), "--json", str(by_file))
    run_cli("sim", "run", "--workload", "lal", "--scale", "0.05", "--policy", spec.label(), "--json", str(by_spec))
    file_result, spec_result = json.loads(by_file.read_text()), json.loads(by_spec.read_text())
    assert file_result["jobs"] > 0
    assert file_result["mean_bounded_slowdown"] == spec_result["mean_bounded_slowdown"]
    assert file_result["mean_wait_s"] == spec_result["mean_wait_s"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--policy", "easy", "--scheduler", "fcfs"], "not both"),
        (["--policy", "sjf", "--backfill"], "--backfill goes with --scheduler"),
        (["--policy", "sarsa-esn:lam=2"], "must lie in [0, 1]"),
        (["--policy", "easy", "--save-model", "x.npz"], "trained no model"),
        (["--policy", "missing.npz"], "no such file"),
    ],
)
def test_sim_run_policy_errors_are_one_line(args: list[str], message: str) -> None:
    result = CliRunner().invoke(main, ["sim", "run", "--workload", "lal", "--scale", "0.02", *args])
    errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert result.exit_code != 0 and len(errors) == 1 and message in errors[0]
    assert "Traceback" not in result.output


def test_sim_policies_lists_the_registry() -> None:
    text = run_cli("sim", "policies")
    for name in ("interactive-first-sjf", "sarsa-esn", "fqi-table", "native", "state-aware"):
        assert name in text


def test_sim_run_classes_by_the_time_limit_and_names_the_rule(tmp_path: Path) -> None:
    # issue 24, item 8: `sim run` counted by runtime while train/evaluate count by the time limit.
    from tests.cli.test_trace import swf_columns
    from tests.workflow.conftest import write_swf

    swf = write_swf(tmp_path / "t.swf", n=300)
    run, limit = swf_columns(swf)
    assert int((limit <= 900).sum()) != int((run < 900).sum())
    text = run_cli("sim", "run", "--workload", str(swf), "--policy", "easy")
    assert "classes by the class rule (interactive iff time limit <= 900 s)" in text
    summary = json.loads(run_cli("sim", "run", "--workload", str(swf), "--policy", "easy", "--json"))
    assert summary["by_class"]["interactive"]["jobs"] == int((limit <= 900).sum())
    assert "time limit <= 900 s" in summary["class_rule"]
    runtime = json.loads(
        run_cli("sim", "run", "--workload", str(swf), "--policy", "easy", "--json", "--class-by", "runtime")
    )
    assert runtime["by_class"]["interactive"]["jobs"] == int((run < 900).sum())
    assert "runtime < 900 s" in runtime["class_rule"]


def test_the_unknown_policy_message_names_every_policy_and_alias() -> None:
    from rlsched.core.policies import ALIASES, POLICIES

    result = CliRunner().invoke(main, ["sim", "run", "--policy", "nope"])
    assert result.exit_code == 1, result.output
    (error,) = result.output.strip().splitlines()
    assert "unknown policy 'nope'" in error
    named = error.split("known: ", 1)[1].replace(";", ",").replace("aliases:", ",")
    listed = {word.strip().split(" ")[0] for word in named.split(",") if word.strip()}
    assert set(POLICIES) | set(ALIASES) <= listed and "recorded" in listed
