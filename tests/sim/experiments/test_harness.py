"""The experiments' harness: options, the worker pool, results and figures written one way."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import numpy as np
import pytest

from rlsched.sim.experiments import Experiment
from rlsched.sim.experiments.harness import (
    BLAS_THREAD_VARS,
    ExperimentOptions,
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

    def with_seeds(out: Path, *, quick: bool, seed: int, n_seeds: int | None = None,
                   workers: int | None = None) -> dict[str, object]:
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
