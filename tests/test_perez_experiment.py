"""Smoke tests of the Perez experiments in quick mode (a tenth of the LAL-like workload)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from rlsched.sim.experiments import registry
from rlsched.sim.experiments.perez import (
    LAMBDAS,
    RUNTIME_MODELS,
    TUNING_SEED_BASE,
    RunSpec,
    run_elastic,
    run_one,
    run_rigid,
)

REQUIRED_KEYS = {"workload", "policy", "runtime_model", "lambda", "class", "jobs", "mean_W", "sd_W",
                 "mean_wait_s", "frac_wait_under_120s"}


def test_registered() -> None:
    found = registry()
    assert {"perez-rigid", "perez-elastic"} <= set(found)


@pytest.mark.slow  # about 15 s: eight quick-mode simulations and the figures
def test_rigid_quick_writes_rows_report_and_figures(tmp_path: Path) -> None:
    result = run_rigid(tmp_path, quick=True, seed=0)
    data = json.loads((tmp_path / "results.json").read_text())
    rows = data["rows"]
    assert rows == json.loads(json.dumps(result["rows"]))
    for row in rows:
        assert set(row) >= REQUIRED_KEYS
        assert row["workload"] == "lal"
    policies = {(r["policy"], r["runtime_model"], r["lambda"]) for r in rows}
    assert {("fcfs", None, None), ("easy", None, None), ("easy-sjf", None, None)} <= policies
    assert {("sarsa-esn", rm, lam) for rm in RUNTIME_MODELS for lam in LAMBDAS} <= policies
    # Every row pools the same jobs: interactive + batch = all, for every policy and setting.
    by_key = {(r["policy"], r["runtime_model"], r["lambda"], r["class"]): r for r in rows}
    for policy, rm, lam in policies:
        parts = by_key[(policy, rm, lam, "interactive")]["jobs"] + by_key[(policy, rm, lam, "batch")]["jobs"]
        assert parts == by_key[(policy, rm, lam, "all")]["jobs"] > 0
        for cls in ("interactive", "batch", "all"):
            r = by_key[(policy, rm, lam, cls)]
            assert 0.0 < r["mean_W"] <= 1.0 and 0.0 <= r["frac_wait_under_120s"] <= 1.0
            assert r["mean_wait_s"] >= 0.0
    # FCFS and EASY coincide on serial jobs (nothing to backfill).
    assert by_key[("fcfs", None, None, "all")]["mean_wait_s"] == pytest.approx(
        by_key[("easy", None, None, "all")]["mean_wait_s"])
    report = (tmp_path / "report.md").read_text()
    assert "P-grid Table 2" in report and "| lal | sarsa-esn | estimated | 0.5 | interactive |" in report
    for name in ("inverse_cdf_W_interactive_lal.png", "cdf_wait_interactive_lal.png"):
        assert (tmp_path / name).stat().st_size > 1000
    assert data["seeds"] == [0] and all(s < TUNING_SEED_BASE for s in data["seeds"])


@pytest.mark.slow  # about 25 s
def test_elastic_quick_records_the_pool(tmp_path: Path) -> None:
    result = run_elastic(tmp_path, quick=True, seed=1)
    elastic = [r for r in result["rows"] if r["policy"] == "sarsa-esn-elastic"]
    assert len(elastic) == len(RUNTIME_MODELS) * len(LAMBDAS) * 3
    for r in elastic:
        assert 30.0 <= r["mean_pool_cores"] <= 162.0
        assert 0.0 < r["utilization"] <= 1.0
    assert (tmp_path / "pool_size_lal.png").exists()


def test_one_learned_run_is_seeded_and_reproducible() -> None:
    spec = RunSpec("lal", "sarsa-esn", "estimated", 0.5, seed=2, scale=0.03)
    a, b = run_one(spec), run_one(spec)
    np.testing.assert_array_equal(a.wait_s, b.wait_s)
    assert a.w.size == a.job_class.size > 0 and 0.0 < a.utilization <= 1.0


def test_tuning_seeds_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="tuning"):
        run_rigid(tmp_path, quick=True, seed=TUNING_SEED_BASE)
