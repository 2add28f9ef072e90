"""`rlsched evaluate` on a trace no one tuned on (issue 24, items 9–12): progress, refusals, files, messages."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from rlsched.cli import main
from tests.workflow.conftest import CONFIG, write_swf


@pytest.fixture
def swf(tmp_path: Path) -> Path:
    return write_swf(tmp_path / "t.swf", n=300)


@pytest.fixture
def busy_swf(tmp_path: Path) -> Path:
    # Several days with a queue on 8 cores (tests/workflow/test_leasing.py's trace).
    return write_swf(tmp_path / "busy.swf", n=500, seed=3, max_procs=8, interarrival_s=700.0)


class BarRecorder:
    """Stands for the terminal progress bar (CliRunner's stderr is no terminal): records what it is shown."""

    def __init__(self) -> None:
        self.bars: list[dict[str, Any]] = []

    @contextmanager
    def __call__(self, total: int, label: str, quiet: bool = False) -> Iterator[Any]:
        bar: dict[str, Any] = {"total": total, "initial": total, "label": label, "done": 0, "labels": [label]}
        self.bars.append(bar)

        def update(done: int, total: int | None = None, label: str | None = None) -> None:
            assert done >= bar["done"], "a progress bar never goes back"
            bar["done"] = done
            if total is not None:
                bar["total"] = total
            if label is not None:
                bar["labels"].append(label)

        yield update


def test_the_evaluate_bar_counts_jobs(swf: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bars = BarRecorder()
    monkeypatch.setattr("rlsched.cli.evaluate.progress_bar", bars)
    result = CliRunner().invoke(
        main,
        [
            "evaluate",
            "--workload",
            str(swf),
            "--policy",
            "easy",
            "--policy",
            "fcfs",
            "--windows",
            "3",
            "--no-figures",
            "--out",
            str(tmp_path / "e"),
        ],
    )
    assert result.exit_code == 0, result.output
    (bar,) = bars.bars
    # Two policies, each replaying the 75 jobs of the test window (split 50/25/25 of 300, cut into 3 windows):
    # 150 jobs, not 6 runs.
    assert bar["total"] == 150 and bar["done"] == 150 and "jobs" in bar["label"]


def test_evaluate_leasing_shows_its_progress(busy_swf: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bars = BarRecorder()
    monkeypatch.setattr("rlsched.cli.evaluate.progress_bar", bars)
    result = CliRunner().invoke(
        main,
        [
            "evaluate",
            "--workload",
            str(busy_swf),
            "--leasing",
            "--cloud-nodes",
            "3",
            "--thetas",
            "1,2",
            "--random-runs",
            "5",
            "--no-figures",
            "--out",
            str(tmp_path / "lease"),
        ],
    )
    assert result.exit_code == 0, result.output
    (bar,) = bars.bars
    steps = [label.split("leasing: ", 1)[1] for label in bar["labels"][1:]]
    assert steps == [
        "references and constant V 0..3",
        "random V (5 runs)",
        "Q-learning",
        "daily learned cap",
        "state-aware held daily θ=1",
        "state-aware held daily θ=2",
        "state-aware per pass θ=1",
        "state-aware per pass θ=2",
        "done",
    ]
    assert bar["done"] == bar["total"] == 8


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        (["--cloud-nodes", "4"], "--cloud-nodes goes with --leasing"),
        (["--cloud-nodes", "4", "--no-daily"], "--cloud-nodes, --no-daily go with --leasing"),
        (["--thetas", "1,2"], "--thetas goes with --leasing"),
    ],
)
def test_a_leasing_option_without_leasing_is_refused(swf: Path, tmp_path: Path, extra: list[str], named: str) -> None:
    result = CliRunner().invoke(
        main, ["evaluate", "--workload", str(swf), "--policy", "easy", *extra, "--out", str(tmp_path / "e")]
    )
    assert result.exit_code == 2, result.output
    error = result.output.strip().splitlines()
    assert len(error) == 1 and named in error[0], result.output
    assert not (tmp_path / "e").exists()


@pytest.mark.parametrize("umask", [0o022, 0o027])
def test_the_result_files_follow_the_umask_like_the_figures(busy_swf: Path, tmp_path: Path, umask: int) -> None:
    out = tmp_path / "e"
    old = os.umask(umask)
    try:
        result = CliRunner().invoke(
            main,
            [
                "evaluate",
                "--workload",
                str(busy_swf),
                "--policy",
                "easy",
                "--leasing",
                "--cloud-nodes",
                "2",
                "--thetas",
                "1",
                "--random-runs",
                "2",
                "--no-qlearning",
                "--no-daily",
                "--out",
                str(out),
            ],
        )
    finally:
        os.umask(old)
    assert result.exit_code == 0, result.output
    modes = {path.name: stat.S_IMODE(path.stat().st_mode) for path in out.iterdir()}
    assert {
        "report.md",
        "results.json",
        "leasing.md",
        "leasing.json",
        "wait_cdf.png",
        "leasing_balance.png",
    } <= modes.keys()
    assert set(modes.values()) == {0o666 & ~umask}, modes


def many_vo_swf(path: Path, groups: int, n: int = 600) -> Path:
    """The small trace with its jobs spread over ``groups`` SWF groups (VOs), group g with weight 1/g."""
    rng = np.random.default_rng(11)
    weights = 1.0 / np.arange(1, groups + 1)
    group = rng.choice(np.arange(1, groups + 1), n, p=weights / weights.sum())
    lines = write_swf(path, n=n).read_text().splitlines()
    jobs = [line.split() for line in lines if not line.startswith(";")]
    for fields, g in zip(jobs, group, strict=True):
        fields[12] = str(g)
    path.write_text("\n".join([line for line in lines if line.startswith(";")] + [" ".join(f) for f in jobs]) + "\n")
    return path


def test_beyond_a_dozen_vos_the_report_shows_the_top_ones_and_folds_the_rest(tmp_path: Path) -> None:
    swf = many_vo_swf(tmp_path / "vos.swf", groups=40)
    out = tmp_path / "e"
    result = CliRunner().invoke(
        main,
        ["evaluate", "--workload", str(swf), "--policy", "easy", "--policy", "fcfs", "--no-figures", "--out", str(out)],
    )
    assert result.exit_code == 0, result.output
    results = json.loads((out / "results.json").read_text())
    vos, shares = results["vos"], results["shares"]
    assert len(vos) == 40, "results.json keeps every VO"
    top = sorted(range(len(vos)), key=lambda k: -shares[k])[:12]
    report = (out / "report.md").read_text()
    by_vo = report.split("## By VO", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in by_vo.splitlines() if line.startswith("| easy ") or line.startswith("| fcfs ")]
    assert len(rows) == 2 * 13
    easy_groups = [row.split("|")[2].strip() for row in rows if row.startswith("| easy ")]
    assert easy_groups == [f"vo:{vos[k]}" for k in top] + ["vo:(other VOs)"]  # largest share first
    # The "other" row is the folded VOs together.
    table = results["table"]["easy"]
    folded = [f"vo:{vos[k]}" for k in range(len(vos)) if k not in top]
    assert table["vo:(other VOs)"]["jobs"]["total"] == sum(table[g]["jobs"]["total"] for g in folded)
    targets = next(line for line in report.splitlines() if line.startswith("Target shares of F:"))
    assert targets.count(",") == 12 and "28 other VOs" in targets
    assert len(report.splitlines()) < 100


def test_a_dozen_vos_and_one_are_not_folded(tmp_path: Path) -> None:
    swf = many_vo_swf(tmp_path / "vos.swf", groups=13, n=1200)
    out = tmp_path / "e"
    result = CliRunner().invoke(
        main, ["evaluate", "--workload", str(swf), "--policy", "easy", "--no-figures", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert len(json.loads((out / "results.json").read_text())["vos"]) == 13
    report = (out / "report.md").read_text()
    assert "other VOs" not in report and report.count("| easy | vo:") == 13


def test_a_model_for_other_vos_without_config_names_the_trace(swf: Path, tmp_path: Path) -> None:
    config = tmp_path / "rlsched.toml"
    config.write_text(CONFIG)
    model = tmp_path / "m.npz"
    trained = CliRunner().invoke(
        main,
        [
            "train",
            "--workload",
            str(swf),
            "--policy",
            "sarsa-esn:pretrain_decisions=30",
            "--config",
            str(config),
            "--out",
            str(model),
        ],
    )
    assert trained.exit_code == 0, trained.output
    result = CliRunner().invoke(
        main,
        [
            "evaluate",
            "--workload",
            str(swf),
            "--policy",
            str(model),
            "--policy",
            "easy",
            "--no-figures",
            "--out",
            str(tmp_path / "e"),
        ],
    )
    assert result.exit_code == 1, result.output
    error = result.output.strip().splitlines()
    assert len(error) == 1, result.output
    assert (
        f"model {model} was built for VOs (physics, chem, other); the trace t has (g1, g2) (no --config: "
        "give the daemon config the model was trained with)"
    ) in error[0]
    assert "the config" not in error[0].replace("the daemon config", "")
    # With the config it was trained for, the model runs.
    fits = CliRunner().invoke(
        main,
        [
            "evaluate",
            "--workload",
            str(swf),
            "--config",
            str(config),
            "--policy",
            str(model),
            "--no-figures",
            "--out",
            str(tmp_path / "e"),
        ],
    )
    assert fits.exit_code == 0, fits.output
    # `sim run` names the trace too.
    sim = CliRunner().invoke(main, ["sim", "run", "--workload", str(swf), "--policy", str(model)])
    assert sim.exit_code == 1 and "the trace t has (g1, g2)" in sim.output, sim.output


@pytest.mark.parametrize(
    ("thetas", "note"),
    [
        (
            "0.25,0.5",
            "# the best of the θ tried on this trace (in-sample), but the grid's largest: the optimum may lie "
            "above 0.5; extend --thetas",
        ),
        ("0.5,1,1.5", "# the best θ on this trace (in-sample)"),
        ("1", "# the only θ tried (in-sample): run a grid with --thetas to choose one"),
    ],
)
def test_the_best_theta_at_the_grid_edge_says_the_optimum_may_lie_beyond(
    busy_swf: Path, tmp_path: Path, thetas: str, note: str
) -> None:
    result = CliRunner().invoke(
        main,
        [
            "evaluate",
            "--workload",
            str(busy_swf),
            "--leasing",
            "--cloud-nodes",
            "6",
            "--thetas",
            thetas,
            "--no-qlearning",
            "--no-daily",
            "--random-runs",
            "0",
            "--no-figures",
            "--out",
            str(tmp_path / "lease"),
        ],
    )
    assert result.exit_code == 0, result.output
    line = next(line for line in result.output.splitlines() if line.startswith("threshold = "))
    best = {"0.25,0.5": "0.5", "0.5,1,1.5": "1", "1": "1"}[thetas]
    assert line.split("#")[0].strip() == f"threshold = {best}" and line.endswith(note), line
    assert note in (tmp_path / "lease" / "leasing.md").read_text()


def test_jitter_replays_each_window_more_times_and_the_bar_counts_them(
    swf: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bars = BarRecorder()
    monkeypatch.setattr("rlsched.cli.evaluate.progress_bar", bars)
    out = tmp_path / "e"
    args = ["evaluate", "--workload", str(swf), "--policy", "easy", "--policy", "f4", "--policy", "recorded"]
    result = CliRunner().invoke(main, [*args, "--windows", "3", "--jitter", "2", "--no-figures", "--out", str(out)])
    assert result.exit_code == 0, result.output
    (bar,) = bars.bars
    # The 75 jobs of the test window: 3 times (as recorded, 2 jittered) for easy and f4, once for recorded.
    assert bar["initial"] == bar["total"] == bar["done"] == 75 * (3 + 3 + 1)  # the CLI's estimate counts them too
    data = json.loads((out / "results.json").read_text())
    assert data["jitter"] == {
        "replays": 2,
        "spread_s": 300.0,
        "seeds": [1, 2],
        "not_jittered": ["recorded"],
        "text": data["jitter"]["text"],
    }
    for label in ("easy", "f4"):
        assert data["table"][label]["all"]["mean_w"]["n"] == 3 * 3  # windows × (1 + jitter)
    assert data["table"]["recorded"]["all"]["mean_w"]["n"] == 3
    assert {r["jitter"] for r in data["runs"] if r["policy"] == "recorded"} == {0}
    line = next(line for line in result.output.splitlines() if line.startswith("Replayed:"))
    assert "as recorded and 2 more times with every submit moved by up to ±300 s (seeds 1–2)" in line
    assert "recorded cannot be jittered" in line
    # --jitter-s sets the spread.
    result = CliRunner().invoke(
        main, [*args, "--jitter", "1", "--jitter-s", "60", "--no-figures", "--json", "--out", str(tmp_path / "f")]
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["jitter"]["spread_s"] == 60.0


def test_without_jitter_results_json_has_no_jitter_field(swf: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main, ["evaluate", "--workload", str(swf), "--policy", "easy", "--no-figures", "--json", "--out", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert "jitter" not in data and all(set(r) == {"policy", "window", "seed", "seconds"} for r in data["runs"])
    assert data["table"]["easy"]["all"]["mean_w"]["n"] == 1


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        (["--jitter", "-1"], "Invalid value for '--jitter': -1 is not in the range x>=0"),
        (["--jitter", "1", "--jitter-s", "-5"], "Invalid value for '--jitter-s': -5.0 is not in the range x>=0"),
        (["--jitter-s", "60"], "--jitter-s goes with --jitter N"),
    ],
)
def test_a_bad_jitter_is_refused_in_one_line(swf: Path, tmp_path: Path, extra: list[str], named: str) -> None:
    result = CliRunner().invoke(
        main, ["evaluate", "--workload", str(swf), "--policy", "easy", *extra, "--out", str(tmp_path / "e")]
    )
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    error = result.output.strip().splitlines()
    assert len(error) == 1 and named in error[0] and "Traceback" not in result.output, result.output
    assert not (tmp_path / "e").exists()
