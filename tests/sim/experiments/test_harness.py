"""The experiments' harness: options, the worker pool, results and figures written one way."""

from __future__ import annotations

import ast
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from rlsched.sim.experiments import Experiment
from rlsched.sim.experiments.harness import (
    BLAS_THREAD_VARS,
    ExperimentOptions,
    ExperimentRun,
    PaperExperiment,
    pyplot,
    run_in_pool,
    save_figure,
    single_threaded_blas_env,
    write_results,
)


def test_pool_results_come_in_item_order_whatever_the_cost_order() -> None:
    items = [float(x) for x in range(9)]
    seen: list[int] = []
    # Most expensive first means largest first here: the pool runs them in reverse.
    pooled = run_in_pool(math.sqrt, items, 2, cost=lambda x: -x, progress=seen.append)
    assert pooled == [math.sqrt(x) for x in items]
    assert seen == list(range(1, len(items) + 1))
    assert run_in_pool(math.sqrt, items, 2, chunksize=3) == pooled
    assert run_in_pool(math.sqrt, items, 1) == pooled
    assert run_in_pool(math.sqrt, [], 2) == []


def test_blas_env_is_set_for_workers_and_restored() -> None:
    before = {k: os.environ.get(k) for k in BLAS_THREAD_VARS}
    with single_threaded_blas_env():
        assert all(os.environ[k] == "1" for k in BLAS_THREAD_VARS)
    assert {k: os.environ.get(k) for k in BLAS_THREAD_VARS} == before


def test_write_results_and_save_figure(tmp_path: Path) -> None:
    write_results(tmp_path, {"x": np.float64(0.5), "n": np.int64(3)}, "# report\n", indent=2)
    assert json.loads((tmp_path / "results.json").read_text()) == {"x": 0.5, "n": 3}
    assert (tmp_path / "results.json").read_text().startswith('{\n  "x"')
    assert (tmp_path / "report.md").read_text() == "# report\n"
    with pytest.raises(ValueError):
        write_results(tmp_path, {"x": float("nan")}, "", allow_nan=False)
    plt = pyplot()
    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    assert save_figure(fig, tmp_path / "line.png") == "line.png"
    assert (tmp_path / "line.png").stat().st_size > 1000
    assert not plt.get_fignums()


def test_options_reach_the_experiment_or_are_refused(tmp_path: Path) -> None:
    seen: dict[str, object] = {}

    def with_seeds(
        out: Path, *, quick: bool, seed: int, n_seeds: int | None = None, workers: int | None = None
    ) -> dict[str, object]:
        seen.update(out=out, quick=quick, seed=seed, n_seeds=n_seeds, workers=workers)
        return {}

    def without(out: Path, *, quick: bool, seed: int) -> dict[str, object]:
        return {}

    out = tmp_path / "new"
    Experiment("with", "", with_seeds).run_with(ExperimentOptions(out, quick=True, seed=4, n_seeds=2, workers=1))
    assert seen == {"out": out, "quick": True, "seed": 4, "n_seeds": 2, "workers": 1} and out.is_dir()
    assert ExperimentOptions(out).resolved_workers(3) == 3
    assert ExperimentOptions(out, workers=1).resolved_workers(3) == 1
    plain = Experiment("plain", "", without)
    assert plain.kwargs(ExperimentOptions(out)) == {"quick": False, "seed": 0}
    with pytest.raises(ValueError, match="takes no --n-seeds"):
        plain.kwargs(ExperimentOptions(out, n_seeds=2))
    with pytest.raises(ValueError, match="takes no --workers"):
        plain.kwargs(ExperimentOptions(out, workers=2))


@dataclass(frozen=True)
class Squares(PaperExperiment[int, int]):
    """The smallest experiment on the template: square each task, sum the squares."""

    n: int
    json_indent = 2

    def plan(self) -> list[int]:
        return list(range(self.n))

    def run_one(self, task: int) -> int:
        return task * task

    def cost(self, task: int) -> int:
        return -task  # the largest first: the rows still come in plan order

    def aggregate(self, rows: list[int], run: ExperimentRun) -> dict[str, object]:
        return {"squares": rows, "total": sum(rows), "workers": run.workers}

    def render(self, results: dict[str, object]) -> str:
        return f"# squares\n\ntotal {results['total']}\n"


@pytest.mark.parametrize("workers", [1, 2])
def test_the_template_plans_runs_aggregates_and_renders(tmp_path: Path, workers: int) -> None:
    result = Squares(5).run(tmp_path / "out", workers)
    assert result == {"squares": [0, 1, 4, 9, 16], "total": 30, "workers": workers}
    assert json.loads((tmp_path / "out" / "results.json").read_text()) == result
    assert (tmp_path / "out" / "results.json").read_text().startswith('{\n  "squares"')
    assert (tmp_path / "out" / "report.md").read_text() == "# squares\n\ntotal 30\n"
    (tmp_path / "out" / "report.md").unlink()
    Experiment("squares", "", lambda out, **options: {}, Squares(0).render).rerender(tmp_path / "out")
    assert (tmp_path / "out" / "report.md").read_text() == "# squares\n\ntotal 30\n"


EXPERIMENTS_DIR = Path(__file__).resolve().parents[3] / "rlsched" / "sim" / "experiments"


def _imports(path: Path) -> set[str]:
    """Every module of the experiments package ``path`` imports, deferred imports included."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module == "rlsched.sim.experiments":
            found |= {alias.name for alias in node.names if (EXPERIMENTS_DIR / f"{alias.name}.py").exists()}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("rlsched.sim.experiments."):
            found.add((node.module or "").rsplit(".", 1)[1])
        elif isinstance(node, ast.Import):
            found |= {a.name.rsplit(".", 1)[1] for a in node.names if a.name.startswith("rlsched.sim.experiments.")}
    return found


def test_reports_and_common_modules_never_import_their_run_module() -> None:
    """A paper's run module imports its report and common modules; nothing imports back (no hidden cycle)."""
    graph = {path.stem: _imports(path) for path in EXPERIMENTS_DIR.glob("*.py") if path.stem != "__init__"}
    for paper in ("perez", "tong", "fh"):
        assert {f"{paper}_report", f"{paper}_common"} <= graph[paper]
        assert paper not in graph[f"{paper}_report"] | graph[f"{paper}_common"]
        assert f"{paper}_report" not in graph[f"{paper}_common"]
    # Cycles anywhere in the package (these included): tests/test_architecture.py.
