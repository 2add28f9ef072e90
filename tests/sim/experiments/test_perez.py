"""Smoke tests of the P-grid experiments (perez-rigid, perez-elastic) on CI-sized workloads."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rlsched.core.view import JobClass
from rlsched.sim.experiments import registry
from rlsched.sim.experiments.perez import run_elastic, run_one, run_rigid, same_info_goal, seen_by_policies
from rlsched.sim.experiments.perez_common import LAMBDAS, RIGID_LEARNED, RUNTIME_MODELS, TUNING_SEED_BASE, RunSpec
from rlsched.sim.workload import Workload
from tests.conftest import shared_trace

REQUIRED_KEYS = {
    "workload",
    "policy",
    "runtime_model",
    "lambda",
    "class",
    "jobs",
    "mean_W",
    "sd_W",
    "mean_wait_s",
    "frac_wait_under_120s",
}
#: CI size: 380 LAL-like jobs (trim and pretraining scale with it: 20 each).
CI_SCALE = 0.04
#: The rules beside the learned policies in perez-rigid.
RIGID_RULES = (
    "fcfs",
    "easy",
    "easy-sjf",
    "interactive-first",
    "interactive-first-sjf",
    "multifactor",
    "interactive-first-keepidle",
)


def test_registered() -> None:
    found = registry()
    assert {"perez-rigid", "perez-elastic", "perez-fqi"} <= set(found)


def _by_key(
    rows: list[dict[str, Any]], workload: str, protocol: str | None = None
) -> dict[tuple[Any, ...], dict[str, Any]]:
    """The rows of ``workload`` under ``protocol`` (default: the paper's, ``both`` on the LAL-like workload)."""
    wanted = ("paper", "both") if protocol is None else (protocol,)
    return {
        (r["policy"], r["runtime_model"], r["lambda"], r["class"]): r
        for r in rows
        if r["workload"] == workload and r["protocol"] in wanted
    }


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
    assert policies == {(p, None, None) for p in RIGID_RULES} | {
        (policy, rm, lam) for policy in RIGID_LEARNED for rm in RUNTIME_MODELS for lam in LAMBDAS
    }
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
        by_key[("easy", None, None, "all")]["mean_wait_s"]
    )
    report = (tmp_path / "report.md").read_text()
    assert "| P-grid Table 2 | sarsa-esn | estimated | 0.5 | interactive | W mean ± sd | 0.864 ± 0.319 |" in report
    assert "| lal | both | sarsa-esn | estimated | 0.5 | interactive |" in report
    assert {r["protocol"] for r in rows} == {"both"}
    assert "## Same information" in report and "### The goal under the product protocol" in report
    [goal] = data["same_info_goal"]
    assert goal["workload"] == "lal" and goal["best_rule"] in RIGID_RULES
    assert goal["W_no_worse"] == (goal["diff_W"] >= -goal["spread_W"])
    for name in ("inverse_cdf_W_interactive_lal.png", "cdf_wait_interactive_lal.png", "fairness_difference_lal.png"):
        assert (tmp_path / name).stat().st_size > 5000
    assert data["seeds"] == [0] and all(s < TUNING_SEED_BASE for s in data["seeds"])


@pytest.mark.slow  # about 10 s: a 6-hour LPC-EGEE window with its native schedule
def test_rigid_lpc_egee_has_native(tmp_path: Path) -> None:
    shared_trace("lpc")  # skips without $RLSCHED_TRACE_DIR (fails under RLSCHED_REQUIRE_TRACES=1)
    result = run_rigid(
        tmp_path, quick=True, seed=0, lpc=True, workers=1, scale=CI_SCALE, lpc_window_days=(252.0, 252.25)
    )
    by_key = _by_key(result["rows"], "lpc-egee")
    for cls in ("interactive", "batch", "all"):
        assert by_key[("native", None, None, cls)]["jobs"] == by_key[("sarsa-esn", "oracle", 1.0, cls)]["jobs"]
        for rm in RUNTIME_MODELS:
            for lam in LAMBDAS:
                assert set(by_key[("sarsa-esn", rm, lam, cls)]) >= REQUIRED_KEYS
    assert (tmp_path / "fairness_difference_lpc-egee.png").exists()
    assert any("native" in check["check"] for check in result["targets"])
    # The product protocol: the same rules, learned policies with estimated runtimes only, classes by the
    # requested time; the held-out window runs under it too.
    for workload in ("lpc-egee", "lpc-egee-holdout"):
        product = _by_key(result["rows"], workload, "product")
        assert {k[:3] for k in product} == {(p, None, None) for p in (*RIGID_RULES, "native")} | {
            (p, "estimated", lam) for p in RIGID_LEARNED for lam in LAMBDAS
        }
        learned = product[("sarsa-esn", "estimated", 0.5, "interactive")]
        assert learned["class_from"].startswith("requested time") and "oracle" not in learned["runtime_from"]
    paper = by_key[("sarsa-esn", "oracle", 0.5, "interactive")]
    assert paper["class_from"].startswith("actual runtime") and paper["class_disagreements"] == 0
    assert by_key[("fcfs", None, None, "interactive")]["class_from"] == "not used"
    assert {g["workload"] for g in result["same_info_goal"]} == {"lal", "lpc-egee", "lpc-egee-holdout"}


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


def test_product_protocol_classes_by_requested_time_and_measures_on_runtime_classes() -> None:
    """The schedulers see the live class rule's classes; W is still reported on the runtime classes."""
    from rlsched.sim.workload import classify_by_runtime

    w = Workload(
        "toy",
        4,
        np.arange(4),
        np.zeros(4),
        np.array([100.0, 100.0, 5000.0, 5000.0]),
        np.array([600.0, 7200.0, 600.0, 7200.0]),
        np.ones(4, dtype=np.int64),
        np.zeros(4, dtype=np.int64),
        np.zeros(4, dtype=np.int64),
        np.zeros(4, dtype=np.int64),
        np.zeros(4, dtype=np.int64),
        np.full(4, -1, dtype=np.int64),
        np.full(4, np.nan),
        np.zeros(4, dtype=np.int64),
        classify_by_runtime(np.array([100.0, 100.0, 5000.0, 5000.0])),
        ("vo",),
    )
    inter, batch = int(JobClass.INTERACTIVE), int(JobClass.BATCH)
    assert list(seen_by_policies(w, "paper").job_class) == [inter, inter, batch, batch]
    assert list(seen_by_policies(w, "product").job_class) == [inter, batch, inter, batch]
    with pytest.raises(ValueError, match="differs from the runtime class on 2 jobs"):
        seen_by_policies(w, "both")
    with pytest.raises(ValueError, match="actual runtime"):
        run_one(RunSpec("lal", "sarsa-esn", "oracle", 0.5, seed=0, scale=CI_SCALE, protocol="product"))


def test_same_info_goal_calls_a_difference_inside_the_spread_a_tie() -> None:
    def row(policy: str, rm: str | None, w: list[float], f: list[float]) -> dict[str, Any]:
        return {
            "workload": "lpc-egee",
            "policy": policy,
            "runtime_model": rm,
            "lambda": 0.5 if rm else None,
            "class": "interactive",
            "protocol": "product",
            "seeds": list(range(len(w))),
            "mean_W": float(np.mean(w)),
            "sd_W_over_seeds": float(np.std(w)),
            "mean_W_by_seed": w,
            "mean_fairness": float(np.mean(f)),
            "sd_fairness_over_seeds": float(np.std(f)),
            "mean_fairness_by_seed": f,
        }

    rows = [
        row("fcfs", None, [0.90], [0.80]),
        row("interactive-first-keepidle", None, [0.95], [0.79]),
        row("native", None, [0.99], [0.99]),
        row("sarsa-esn-keepidle", "estimated", [0.92, 0.96, 0.94], [0.798, 0.800, 0.802]),
    ]
    [goal] = same_info_goal(rows)
    assert goal["best_rule"] == "interactive-first-keepidle"  # native is context, not a rule
    # ΔW −0.01 inside the spread 0.016; ΔF +0.01 beyond 0.0016.
    assert goal["W_no_worse"] and goal["F_better"] and goal["met"]
    rows[-1] = row("sarsa-esn-keepidle", "estimated", [0.9395, 0.9405], [0.7905, 0.7905])
    [goal] = same_info_goal(rows)
    assert not goal["W_no_worse"] and not goal["F_better"]  # −0.01 beyond 0.001; +0.0005 is a tie
    # Paired over seeds: a workload that moves both sides together is not spread.
    both = [
        row("interactive-first-keepidle", None, [0.80, 0.90, 1.00], [0.7, 0.8, 0.9]),
        row("sarsa-esn-keepidle", "estimated", [0.78, 0.88, 0.98], [0.7, 0.8, 0.9]),
    ]
    for r in both:
        r["workload"], r["protocol"] = "lal", "both"
    [goal] = same_info_goal(both)
    assert goal["spread_W"] == pytest.approx(0.001) and not goal["W_no_worse"]


def test_one_learned_run_is_seeded_and_reproducible() -> None:
    spec = RunSpec("lal", "sarsa-esn", "estimated", 0.5, seed=2, scale=CI_SCALE)
    a, b = run_one(spec), run_one(spec)
    np.testing.assert_array_equal(a.wait_s, b.wait_s)
    assert a.w.size == a.job_class.size > 0 and 0.0 < a.utilization <= 1.0


def test_tuning_seeds_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="tuning"):
        run_rigid(tmp_path, quick=True, seed=TUNING_SEED_BASE)
