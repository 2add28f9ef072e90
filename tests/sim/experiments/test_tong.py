"""Smoke test of `rlsched sim experiment tong` in quick mode."""

import json

from rlsched.sim.experiments import registry
from rlsched.sim.experiments.tong import run


def test_registered():
    assert "tong" in registry()


def test_quick_run_writes_results_report_and_figures(tmp_path, monkeypatch):
    monkeypatch.delenv("RLSCHED_TRACE_DIR", raising=False)
    result = run(tmp_path, quick=True, seed=3)
    data = json.loads((tmp_path / "results.json").read_text())
    assert data["rows"] == result["rows"]
    rows = data["rows"]
    settings = {r["setting"] for r in rows}
    assert {"poisson-80", "uniform-80", "lpc-140", "lpc-15"} <= settings
    policies = {r["policy"] for r in rows}
    assert {"qlearning", "nlp", "ect", "min-min", "max-min", "suffrage", "random"} <= policies
    for r in rows:
        assert r["mean_response_s"] > 0 and r["sd_response_s"] >= 0
        assert r["mean_response_s"] == r["mean_response_h"] * 3600
    assert data["replay"].startswith("skipped")
    report = (tmp_path / "report.md").read_text()
    assert "Orderings" in report and "| poisson-80 |" in report
    # Every mention of a learner that hears at placement says it is simulation only; the learner that hears
    # at completion is the first (primary) learned column.
    for line in report.splitlines():
        for name in ("qlearning-neg", "qlearning"):
            for start in range(len(line)):
                if line.startswith(name + " at placement", start):
                    assert line.startswith(name + " at placement (simulation only)", start), line
    header = next(line for line in report.splitlines() if line.startswith("| setting | "))
    assert header.split(" | ")[1] == "qlearning-neg at completion (primary)"
    assert "| qlearning-neg | " not in report and "| qlearning | " not in report
    gamma = {r["policy"] for r in rows if r["experiment"] == "gamma"}
    assert "qlearning-neg-delayed" in gamma
    assert (tmp_path / "fig8_poisson.png").stat().st_size > 1000
    assert (tmp_path / "fig3_convergence.png").exists()
