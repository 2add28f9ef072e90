"""Smoke tests of the P-grid experiments (perez-rigid, perez-elastic) on CI-sized workloads."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rlsched.sim.experiments import registry
from rlsched.sim.experiments.perez import (
    LAMBDAS,
    RIGID_LEARNED,
    RUNTIME_MODELS,
    TUNING_SEED_BASE,
    RunSpec,
    run_elastic,
    run_one,
    run_rigid,
)
from tests.conftest import shared_trace

REQUIRED_KEYS = {"workload", "policy", "runtime_model", "lambda", "class", "jobs", "mean_W", "sd_W",
                 "mean_wait_s", "frac_wait_under_120s"}
#: CI size: 380 LAL-like jobs (trim and pretraining scale with it: 20 each).
CI_SCALE = 0.04


def test_registered() -> None:
    found = registry()
    assert {"perez-rigid", "perez-elastic", "perez-fqi"} <= set(found)


def _by_key(rows: list[dict[str, Any]], workload: str) -> dict[tuple[Any, ...], dict[str, Any]]:
    return {(r["policy"], r["runtime_model"], r["lambda"], r["class"]): r for r in rows if r["workload"] == workload}


@pytest.mark.slow  # about 10 s: 8 learned and 4 classic CI-sized runs, and the figures
def test_rigid_writes_rows_report_and_figures(tmp_path: Path) -> None:
    result = run_rigid(tmp_path, quick=True, seed=0, lpc=False, workers=1, scale=CI_SCALE)
    data = json.loads((tmp_path / "results.json").read_text())
    rows = data["rows"]
    assert rows == json.loads(json.dumps(result["rows"]))
    for row in rows:
        assert set(row) >= REQUIRED_KEYS
        assert row["workload"] == "lal"
    policies = {(r["policy"], r["runtime_model"], r["lambda"]) for r in rows}
    assert policies == {("fcfs", None, None), ("easy", None, None), ("easy-sjf", None, None),
                        ("interactive-first-keepidle", None, None)} | {
        (policy, rm, lam) for policy in RIGID_LEARNED for rm in RUNTIME_MODELS for lam in LAMBDAS}
    by_key = _by_key(rows, "lal")
    for policy, rm, lam in policies:
        parts = by_key[(policy, rm, lam, "interactive")]["jobs"] + by_key[(policy, rm, lam, "batch")]["jobs"]
        assert parts == by_key[(policy, rm, lam, "all")]["jobs"] > 0
        for cls in ("interactive", "batch", "all"):
            r = by_key[(policy, rm, lam, cls)]
            assert 0.0 < r["mean_W"] <= 1.0 and 0.0 <= r["frac_wait_under_120s"] <= 1.0
            assert r["mean_wait_s"] >= 0.0 and 0.0 <= r["mean_fairness"] <= 1.0
    # FCFS and EASY coincide on serial jobs (nothing to backfill).
    assert by_key[("fcfs", None, None, "all")]["mean_wait_s"] == pytest.approx(
        by_key[("easy", None, None, "all")]["mean_wait_s"])
    report = (tmp_path / "report.md").read_text()
    assert "| P-grid Table 2 | sarsa-esn | estimated | 0.5 | interactive | W mean ± sd | 0.864 ± 0.319 |" in report
    assert "| lal | sarsa-esn | estimated | 0.5 | interactive |" in report
    for name in ("inverse_cdf_W_interactive_lal.png", "cdf_wait_interactive_lal.png", "fairness_difference_lal.png"):
        assert (tmp_path / name).stat().st_size > 5000
    assert data["seeds"] == [0] and all(s < TUNING_SEED_BASE for s in data["seeds"])


@pytest.mark.slow  # about 10 s: a 6-hour LPC-EGEE window with its native schedule
def test_rigid_lpc_egee_has_native(tmp_path: Path) -> None:
    shared_trace("lpc")  # skips without $RLSCHED_TRACE_DIR (fails under RLSCHED_REQUIRE_TRACES=1)
    result = run_rigid(tmp_path, quick=True, seed=0, lpc=True, workers=1, scale=CI_SCALE,
                       lpc_window_days=(252.0, 252.25))
    by_key = _by_key(result["rows"], "lpc-egee")
    for cls in ("interactive", "batch", "all"):
        assert by_key[("native", None, None, cls)]["jobs"] == by_key[("sarsa-esn", "oracle", 1.0, cls)]["jobs"]
        for rm in RUNTIME_MODELS:
            for lam in LAMBDAS:
                assert set(by_key[("sarsa-esn", rm, lam, cls)]) >= REQUIRED_KEYS
    assert (tmp_path / "fairness_difference_lpc-egee.png").exists()
    assert any("native" in check["check"] for check in result["targets"])


@pytest.mark.slow  # about 10 s
def test_elastic_records_the_pool(tmp_path: Path) -> None:
    result = run_elastic(tmp_path, quick=True, seed=1, workers=1, scale=CI_SCALE)
    elastic = [r for r in result["rows"] if r["policy"] == "sarsa-esn-elastic"]
    rigid = [r for r in result["rows"] if r["policy"] == "sarsa-esn"]
    assert len(elastic) == len(rigid) == len(RUNTIME_MODELS) * len(LAMBDAS) * 3
    for r in elastic:
        assert 30.0 <= r["mean_pool_cores"] <= 162.0
        assert 0.0 < r["utilization"] <= 1.0
    assert (tmp_path / "pool_size_utilization_lal.png").stat().st_size > 5000
    assert "| P-grid Table 5 | sarsa-esn-elastic | oracle | 0.5 | interactive |" in (tmp_path / "report.md").read_text()


def test_one_learned_run_is_seeded_and_reproducible() -> None:
    spec = RunSpec("lal", "sarsa-esn", "estimated", 0.5, seed=2, scale=CI_SCALE)
    a, b = run_one(spec), run_one(spec)
    np.testing.assert_array_equal(a.wait_s, b.wait_s)
    assert a.w.size == a.job_class.size > 0 and 0.0 < a.utilization <= 1.0


def test_tuning_seeds_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="tuning"):
        run_rigid(tmp_path, quick=True, seed=TUNING_SEED_BASE)
