"""The perez-fqi experiment (P-fqi Tables 2–3) and the Perez report helpers, on CI-sized workloads."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rlsched.core.rewards import FairnessTracker
from rlsched.core.view import JobClass
from rlsched.sim.experiments import registry
from rlsched.sim.experiments.perez import plan, pretrain_decisions, run_one, trim_jobs
from rlsched.sim.experiments.perez_common import (
    LAMBDAS,
    LPC_WINDOW_DAYS,
    PUBLISHED_ROWS,
    RUNTIME_MODELS,
    TUNING_SEED_BASE,
    RunResult,
    RunSpec,
)
from rlsched.sim.experiments.perez_fqi import FQI_POLICIES, run_fqi
from rlsched.sim.experiments.perez_report import (
    fairness_series,
    service_by_vo,
    utilization_series,
)
from tests.conftest import shared_trace
from tests.sim.experiments.test_perez import CI_SCALE, REQUIRED_KEYS

#: The rules beside the fitted-Q learners.
FQI_RULES = ("fcfs", "easy", "easy-sjf", "interactive-first", "interactive-first-sjf", "multifactor")


def _check_rows(rows: list[dict[str, Any]], workload: str, classic: tuple[str, ...]) -> None:
    mine = [r for r in rows if r["workload"] == workload and r["protocol"] in ("paper", "both")]
    settings = {(r["policy"], r["runtime_model"], r["lambda"]) for r in mine}
    expected = {(p, None, None) for p in classic} | {
        (p, rm, lam) for p in FQI_POLICIES for rm in RUNTIME_MODELS for lam in LAMBDAS
    }
    assert settings == expected
    by_key = {(r["policy"], r["runtime_model"], r["lambda"], r["class"]): r for r in mine}
    assert len(by_key) == len(mine) == 3 * len(expected)  # interactive, batch, all: once each
    for policy, rm, lam in settings:
        inter, batch, every = (by_key[(policy, rm, lam, c)] for c in ("interactive", "batch", "all"))
        assert inter["jobs"] + batch["jobs"] == every["jobs"] > 0
        for row in (inter, batch, every):
            assert set(row) >= REQUIRED_KEYS
            assert 0.0 < row["mean_W"] <= 1.0 and row["sd_W"] >= 0.0
            assert row["mean_wait_s"] >= 0.0 and 0.0 <= row["frac_wait_under_120s"] <= 1.0


def test_registered_with_the_cli_options() -> None:
    exp = registry()["perez-fqi"]
    assert exp.run is run_fqi


def test_plan_covers_every_setting_and_scales_trim_and_pretraining() -> None:
    specs = plan(quick=True, seeds=[3, 4], lpc=True, learned=FQI_POLICIES)
    lal = [s for s in specs if s.workload == "lal"]
    lpc = [s for s in specs if s.workload == "lpc-egee"]
    assert len(lal) == 2 * (3 + 2 * 2 * 2)  # per seed: 3 classic + 2 learners × 2 runtime models × 2 λ
    assert len(lpc) == 4 + 2 * 8  # the trace is fixed: classic + native once, learned on every seed
    assert {s.policy for s in lpc} == {"fcfs", "easy", "easy-sjf", "native", *FQI_POLICIES}
    assert {s.protocol for s in lal} == {"both"} and {s.protocol for s in lpc} == {"paper"}
    assert {(trim_jobs(s), pretrain_decisions(s)) for s in specs if s.policy in FQI_POLICIES} == {(50, 50)}
    full = RunSpec("lpc-egee", "fqi-esn", "oracle", 1.0, 0, 1.0)
    assert (trim_jobs(full), pretrain_decisions(full)) == (500, 500)
    assert LPC_WINDOW_DAYS == (252.0, 266.0)


@pytest.mark.slow  # about 10 s: 8 learned and 3 classic CI-sized runs, and the figures
def test_lal_rows_report_and_figures(tmp_path: Path) -> None:
    result = run_fqi(tmp_path, quick=True, seed=0, lpc=False, workers=1, scale=CI_SCALE)
    data = json.loads((tmp_path / "results.json").read_text())
    assert data["rows"] == json.loads(json.dumps(result["rows"]))
    _check_rows(data["rows"], "lal", FQI_RULES)
    assert data["seeds"] == [0] and data["tuning_seed_base"] == TUNING_SEED_BASE
    for name in ("inverse_cdf_W_interactive_lal.png", "cdf_wait_interactive_lal.png", "fairness_difference_lal.png"):
        assert name in data["figures"] and (tmp_path / name).stat().st_size > 5000
    report = (tmp_path / "report.md").read_text()
    assert "| P-fqi Table 2 | fqi-esn | estimated | 0.5 | interactive | W mean ± sd | 0.95 ± 0.19 |" in report
    assert "P-fqi Table 3" in report and "Seeds ≥ 1000 are reserved for tuning" in report


@pytest.mark.slow  # about 15 s: adds a 6-hour LPC-EGEE window with its native schedule
def test_lpc_egee_rows_include_native(tmp_path: Path) -> None:
    shared_trace("lpc")  # skips without $RLSCHED_TRACE_DIR (fails under RLSCHED_REQUIRE_TRACES=1)
    result = run_fqi(tmp_path, quick=True, seed=0, lpc=True, workers=1, scale=CI_SCALE, lpc_window_days=(252.0, 252.25))
    _check_rows(result["rows"], "lpc-egee", (*FQI_RULES, "native"))
    _check_rows(result["rows"], "lal", FQI_RULES)
    product = {
        (r["policy"], r["runtime_model"])
        for r in result["rows"]
        if r["workload"] == "lpc-egee" and r["protocol"] == "product"
    }
    assert product == {(p, None) for p in (*FQI_RULES, "native")} | {(p, "estimated") for p in FQI_POLICIES}
    assert result["lpc_window_days"] == [252.0, 252.25]
    assert (tmp_path / "fairness_difference_lpc-egee.png").stat().st_size > 5000
    assert "ours LPC-EGEE" in (tmp_path / "report.md").read_text()


@pytest.mark.parametrize("policy", FQI_POLICIES)
def test_same_seed_same_schedule(policy: str) -> None:
    # 380 jobs, 20 of them under EDF pretraining: the rest are the learner's decisions.
    spec = RunSpec("lal", policy, "estimated", 0.5, seed=5, scale=CI_SCALE)
    a, b = run_one(spec), run_one(spec)
    assert a.start_s is not None and b.start_s is not None
    np.testing.assert_array_equal(a.start_s, b.start_s)
    np.testing.assert_array_equal(a.wait_s, b.wait_s)
    other = run_one(RunSpec("lal", policy, "estimated", 0.5, seed=6, scale=CI_SCALE))
    assert other.w.size != a.w.size or not np.array_equal(other.wait_s, a.wait_s)


def test_tuning_seeds_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="tuning"):
        run_fqi(tmp_path, quick=True, seed=TUNING_SEED_BASE - 1, n_seeds=2, lpc=False)


def test_published_tables_are_complete() -> None:
    fqi = [p for p in PUBLISHED_ROWS if p["source"] in ("P-fqi Table 2", "P-fqi Table 3")]
    # Table 2: 5 algorithms × 3 classes; Table 3: 5 algorithms × 2 classes.
    assert len(fqi) == 25
    assert {(p["policy"], p["runtime_model"]) for p in fqi} == {
        ("native", None),
        *((p, rm) for p in FQI_POLICIES for rm in RUNTIME_MODELS),
    }


def _result(
    start: list[float],
    end: list[float],
    vo: list[int],
    shares: tuple[float, ...],
    procs: list[int] | None = None,
    cores: int = 4,
) -> RunResult:
    s, e = np.asarray(start, float), np.asarray(end, float)
    n = s.size
    return RunResult(
        RunSpec("lal", "fcfs", None, None, 0, 1.0),
        np.full(n, int(JobClass.BATCH)),
        np.zeros(n),
        np.ones(n),
        0.0,
        0.0,
        (0.0, float(e.max())),
        submit_s=np.zeros(n),
        start_s=s,
        end_s=e,
        procs=np.asarray(procs or [1] * n),
        vo=np.asarray(vo),
        shares=shares,
        cores=cores,
    )


def test_service_and_fairness_by_hand() -> None:
    # VO 0: one 2-core job on [0, 10); VO 1: one job on [5, 25).
    r = _result([0.0, 5.0], [10.0, 25.0], [0, 1], (0.5, 0.5), procs=[2, 1])
    t = np.array([0.0, 5.0, 10.0, 20.0, 25.0, 40.0])
    assert r.start_s is not None and r.end_s is not None and r.procs is not None and r.vo is not None
    service = service_by_vo(t, r.start_s, r.end_s, r.procs, r.vo, 2)
    np.testing.assert_allclose(service, [[0, 0], [10, 0], [20, 5], [20, 15], [20, 20], [20, 20]])
    f = fairness_series(r, t)
    assert np.isnan(f[0])  # no service yet
    # t=10: S = (0.8, 0.2) → D = 0.3, M = 0.5 → F = 0.4; t=25: S = (0.5, 0.5) → F = 1.
    np.testing.assert_allclose(f[1:], [0.0, 0.4, 1.0 - (0.5 - 15 / 35) / 0.5, 1.0, 1.0])


def test_fairness_series_agrees_with_the_core_tracker() -> None:
    rng = np.random.default_rng(0)
    start = rng.uniform(0, 100, 40)
    end = start + rng.uniform(1, 50, 40)
    vo = rng.integers(0, 3, 40)
    shares = (0.6, 0.3, 0.1)
    r = _result(start.tolist(), end.tolist(), vo.tolist(), shares)
    t = np.array([30.0, 77.0, 160.0])
    got = fairness_series(r, t)
    tracker = FairnessTracker(shares)
    for k, now in enumerate(t):
        done = end <= now
        running = (start <= now) & ~done
        service = np.bincount(vo[done], weights=(end - start)[done], minlength=3) + np.bincount(
            vo[running], weights=(now - start)[running], minlength=3
        )
        want = tracker.election_fairness(service.astype(np.float64), 0, 0.0)[0]
        assert got[k] == pytest.approx(want)


def test_utilization_series_rigid_and_elastic() -> None:
    r = _result([0.0, 0.0], [10.0, 20.0], [0, 0], (1.0,), cores=4)
    np.testing.assert_allclose(utilization_series(r, np.array([10.0, 20.0])), [10 / 40, 30 / 80])
    # Elastic: 2 cores on [0, 10), 1 core from 10 on.
    r.pool_time_s, r.pool_cores = np.array([0.0, 10.0]), np.array([2, 1])
    np.testing.assert_allclose(utilization_series(r, np.array([10.0, 20.0])), [10 / 20, 30 / 30])
