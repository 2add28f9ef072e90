"""rlsched evaluate --leasing: the FH policies on a site's trace, bounded by its cloud nodes, and κ."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from rlsched.cli import main
from rlsched.core.leasing import StateAwareParams
from rlsched.sim.hybrid_cloud.hybrid import UNBOUNDED, HybridModel, day_edges
from rlsched.sim.hybrid_cloud.runs import state_aware
from rlsched.sim.traces.swf import read_swf
from rlsched.workflow.leasing import evaluate_leasing, write_leasing
from tests.workflow.conftest import write_swf


@pytest.fixture
def busy_swf(tmp_path: Path) -> Path:
    # Several days (the state-aware policy learns κ from the days before) with a queue on 8 cores.
    return write_swf(tmp_path / "busy.swf", n=500, seed=3, max_procs=8, interarrival_s=700.0)


def test_kappa_is_the_ratio_of_the_two_references(busy_swf: Path) -> None:
    w = read_swf(busy_swf)
    ev = evaluate_leasing(w, 6, thetas=(1.0, 2.0), qlearning=True, random_runs=20)
    model = HybridModel(w)
    twt_ref = model.advance(model.initial_state(), 0).twt
    c_ref = model.advance(model.initial_state(), UNBOUNDED).cost
    assert twt_ref > 0 and c_ref > 0
    assert ev.twt_ref == pytest.approx(twt_ref) and ev.c_ref == pytest.approx(c_ref)
    assert ev.exchange_rate == pytest.approx(twt_ref / c_ref)
    assert [r.setting for r in ev.rows if r.policy == "constant"] == [f"V={v}" for v in range(7)]
    assert ev.rows[0].balance == pytest.approx(0.0)  # V = 0 is the wait reference, with no cost
    assert [r.policy for r in ev.rows[7:]] == [
        "random-mean",
        "random-best",
        "qlearning",
        "daily-learned",
        "per-pass-held-daily",
        "per-pass-held-daily",
        "state-aware",
        "state-aware",
    ]
    by = {r.policy: r for r in ev.rows[7:]}
    assert by["random-best"].balance >= by["random-mean"].balance
    # The daily learned cap is run with the hyper-parameters chosen on the FH traces, and says so.
    assert by["daily-learned"].setting.startswith("H=")


def test_the_state_aware_cap_never_exceeds_the_cloud_nodes(busy_swf: Path) -> None:
    w = read_swf(busy_swf)
    model = HybridModel(w)
    edges = day_edges(model)
    free = state_aware(model, edges, StateAwareParams(threshold=0.5))
    bounded = state_aware(model, edges, StateAwareParams(threshold=0.5), max_cap=2)
    assert int(np.max(free.caps)) > 2, "the test needs a trace where the unbounded policy leases more"
    assert int(np.max(bounded.caps)) <= 2


def test_the_cli_prints_the_daemon_settings(busy_swf: Path, tmp_path: Path) -> None:
    out = tmp_path / "lease"
    result = CliRunner().invoke(
        main,
        [
            "evaluate",
            "--workload",
            str(busy_swf),
            "--leasing",
            "--cloud-nodes",
            "4",
            "--thetas",
            "1,2",
            "--no-qlearning",
            "--random-runs",
            "10",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "exchange_rate = " in result.output and "threshold = " in result.output
    # Daily caps and the per-pass rule are printed as two tables.
    daily_at = result.output.index("daily caps (V fixed for each day")
    per_pass_at = result.output.index("per-pass transfer rule")
    assert daily_at < result.output.index("daily-learned") < per_pass_at
    assert daily_at < result.output.index("per-pass-held-daily") < per_pass_at
    assert per_pass_at < result.output.index("state-aware (per pass)")
    assert (out / "leasing.json").is_file() and (out / "leasing_balance.png").is_file()
    missing = CliRunner().invoke(main, ["evaluate", "--workload", str(busy_swf), "--leasing", "--out", str(out)])
    assert missing.exit_code == 2 and "--cloud-nodes" in missing.output


def test_write_leasing_is_the_json_it_returns(busy_swf: Path, tmp_path: Path) -> None:
    import json

    ev = evaluate_leasing(read_swf(busy_swf), 3, thetas=(1.0,), qlearning=False)
    data = write_leasing(ev, tmp_path, figures=False)
    assert json.loads((tmp_path / "leasing.json").read_text()) == data


def test_the_daily_learner_can_start_from_other_traces(busy_swf: Path, tmp_path: Path) -> None:
    """--daily-prior-from: the FH setups' daily clones as the learner's prior, named in the row."""
    from rlsched.workflow.leasing import daily_prior_from_setups
    from tests.conftest import shared_trace

    shared_trace("kth")
    params, prior = daily_prior_from_setups("kth-quick", 10.0)
    assert params.transfer_days == 10.0 and prior.sources == ("kth-quick",) and prior.counts.sum() > 0
    ev = evaluate_leasing(
        read_swf(busy_swf), 4, thetas=(1.0,), qlearning=False, random_runs=0, daily_params=params, daily_prior=prior
    )
    (row,) = [r for r in ev.rows if r.policy == "daily-learned"]
    assert row.setting.endswith("transfer=10, prior from kth-quick")
    bad = CliRunner().invoke(
        main,
        [
            "evaluate",
            "--workload",
            str(busy_swf),
            "--leasing",
            "--cloud-nodes",
            "4",
            "--daily-prior-from",
            "kth,nowhere",
            "--out",
            str(tmp_path / "x"),
        ],
    )
    assert bad.exit_code == 1 and "unknown setup 'nowhere'" in bad.output and "Traceback" not in bad.output


def test_the_leasing_legend_does_not_hide_the_constant_v_curve(busy_swf: Path) -> None:
    from rlsched.workflow.leasing import leasing_figure

    ev = evaluate_leasing(read_swf(busy_swf), 6, random_runs=5)  # the default θ grid: 17 legend entries
    fig = leasing_figure(ev)
    fig.tight_layout()
    fig.canvas.draw()
    (ax,) = fig.axes
    legend = ax.get_legend()
    assert len(legend.get_texts()) == 17
    assert not legend.get_window_extent().overlaps(ax.get_window_extent())
    curve = next(line for line in ax.get_lines() if line.get_label() == "constant V")
    assert curve.get_zorder() > max(line.get_zorder() for line in ax.get_lines() if line is not curve)
