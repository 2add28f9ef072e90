"""What every experiment shares: its options, one worker pool, one template, one way to write results.

Every paper experiment is a :class:`PaperExperiment`: ``plan()`` lists its tasks (one simulation,
or a few, each), ``run_one(task)`` runs one of them in a worker of :func:`run_in_pool`,
``aggregate(rows, run)`` turns the rows of every task into the ``results.json`` payload (writing
the figures on the way), and ``render(results)`` turns that payload into ``report.md``;
:meth:`PaperExperiment.run` chains them and :func:`write_results` writes both files the same way
for all of them.  Because ``render`` reads nothing but the payload, a report can always be
rebuilt from a committed ``results.json`` (``rlsched sim experiment NAME --report-only``).

A paper is three modules: ``<paper>_common`` (published numbers and the constants both sides
read), ``<paper>`` (the template's plan/run_one/aggregate) and ``<paper>_report`` (figures
through :func:`save_figure`, the markdown from small section functions).  The run module imports
the report module, never the reverse.

Adding an experiment: a module in this package defining ``EXPERIMENTS = {name: Experiment(name,
help, run, render)}`` (see :mod:`rlsched.sim.experiments`), whose ``run(out_dir, *, quick, seed, …)``
builds its :class:`PaperExperiment` and calls :meth:`PaperExperiment.run`.  The tasks go to
spawned workers: they, the experiment object and ``run_one`` must pickle.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar, cast

import numpy as np

Item = TypeVar("Item")
Result = TypeVar("Result")
TaskT = TypeVar("TaskT")
RowT = TypeVar("RowT")

#: Workers when an experiment is not told: one process per core of the 2-core reference machine.
DEFAULT_WORKERS = 2
#: BLAS thread variables set to 1 in the worker processes (see :func:`single_threaded_blas_env`).
BLAS_THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


@dataclass(frozen=True)
class ExperimentOptions:
    """The options every experiment takes (``rlsched sim experiment NAME --out … --quick --seed --n-seeds``).

    ``n_seeds`` and ``workers`` are ``None`` for the experiment's default.
    """

    out_dir: Path
    quick: bool = False
    seed: int = 0
    n_seeds: int | None = None
    workers: int | None = None

    def resolved_workers(self, default: int | None = None) -> int:
        """``workers``, else ``default``, else :func:`default_workers`."""
        if self.workers is not None:
            return self.workers
        return default if default is not None else default_workers()

    def output(self) -> Path:
        """The output directory, created."""
        out = Path(self.out_dir)
        out.mkdir(parents=True, exist_ok=True)
        return out


def default_workers(limit: int = DEFAULT_WORKERS) -> int:
    return min(limit, os.cpu_count() or 1)


@contextlib.contextmanager
def single_threaded_blas_env() -> Iterator[None]:
    """Environment of spawned workers: one BLAS thread each.

    Measured on the 2-core machine: with OpenBLAS's default threads, one 100 × 100
    ``eigvals`` (the ESN's spectral radius) takes 0.36 s instead of 5 ms, and a whole
    learned run is about twice as slow; with one process per core, BLAS threads only fight
    each other.  OpenBLAS reads the variable when NumPy is imported, hence spawned (not
    forked) workers.
    """
    saved = {k: os.environ.get(k) for k in BLAS_THREAD_VARS}
    os.environ.update({k: "1" for k in BLAS_THREAD_VARS})
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def run_in_pool(
    fn: Callable[[Item], Result],
    items: Sequence[Item],
    workers: int,
    *,
    cost: Callable[[Item], Any] | None = None,
    chunksize: int = 1,
    progress: Callable[[int], None] | None = None,
) -> list[Result]:
    """``[fn(x) for x in items]``, in ``workers`` spawned processes with one BLAS thread each.

    The results come in the order of ``items`` whatever order they finished in, so a run's
    output never depends on the number of workers.  ``cost``: a sort key putting the most
    expensive items first (the workers then finish together).  ``progress(done)`` is called
    after each item.  One worker, or one item, runs in this process.
    """
    n = len(items)
    if workers <= 1 or n <= 1:
        results: list[Result] = []
        for item in items:
            results.append(fn(item))
            if progress is not None:
                progress(len(results))
        return results
    order = sorted(range(n), key=lambda i: cost(items[i])) if cost is not None else list(range(n))
    slots: list[Result | None] = [None] * n
    with (
        single_threaded_blas_env(),
        ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn")) as pool,
    ):
        if progress is None:
            for i, value in zip(order, pool.map(fn, [items[i] for i in order], chunksize=chunksize), strict=True):
                slots[i] = value
        else:
            futures = {pool.submit(fn, items[i]): i for i in order}
            for done, future in enumerate(as_completed(futures), start=1):
                slots[futures[future]] = future.result()
                progress(done)
    return cast(list[Result], slots)  # every slot was filled above


def save_figure(fig: Any, path: Path, *, dpi: int = 110) -> str:
    """Lay out, write and close a matplotlib figure; returns the file name (for ``results.json``)."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return path.name


def pyplot() -> Any:
    """matplotlib's pyplot on the non-interactive Agg backend (experiments run headless)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _json_default(obj: object) -> object:
    if isinstance(obj, np.generic):
        return obj.item()
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def write_results(
    out: Path, result: dict[str, Any], report_md: str, *, indent: int = 1, allow_nan: bool = True
) -> None:
    """``results.json`` (NumPy scalars as plain numbers) and ``report.md`` into ``out``.

    ``indent`` is kept per experiment so the committed results under docs/results keep their layout.
    """
    (out / "results.json").write_text(json.dumps(result, indent=indent, allow_nan=allow_nan, default=_json_default))
    (out / "report.md").write_text(report_md)


@dataclass(frozen=True)
class ExperimentRun:
    """One run of a :class:`PaperExperiment`: where it writes, on how many workers, since when."""

    out: Path
    workers: int
    started: float = field(default_factory=time.perf_counter)

    def wall_s(self) -> float:
        """Seconds since the run started."""
        return time.perf_counter() - self.started

    def map(
        self,
        fn: Callable[[Item], Result],
        items: Sequence[Item],
        *,
        cost: Callable[[Item], Any] | None = None,
        chunksize: int = 1,
    ) -> list[Result]:
        """:func:`run_in_pool` on this run's workers (for an ``aggregate`` that needs a second round of tasks)."""
        return run_in_pool(fn, items, self.workers, cost=cost, chunksize=chunksize)


class PaperExperiment(ABC, Generic[TaskT, RowT]):
    """The template of a paper experiment: ``plan() → run_one(task) → aggregate(rows) → render(results)``.

    Subclasses are small picklable objects holding the experiment's options (the bound ``run_one``
    travels to the spawned workers with them).
    """

    #: ``results.json`` layout, kept per experiment so the committed results under docs/results keep theirs.
    json_indent: ClassVar[int] = 1
    json_allow_nan: ClassVar[bool] = True

    @abstractmethod
    def plan(self) -> Sequence[TaskT]:
        """Every task of the experiment, in the order their rows are aggregated."""

    @abstractmethod
    def run_one(self, task: TaskT) -> RowT:
        """Run one task (in a worker process)."""

    @abstractmethod
    def aggregate(self, rows: list[RowT], run: ExperimentRun) -> dict[str, Any]:
        """The ``results.json`` payload from the rows of every task (in plan order); writes the figures."""

    @abstractmethod
    def render(self, results: dict[str, Any]) -> str:
        """``report.md`` from the payload alone."""

    def cost(self, task: TaskT) -> Any:
        """Sort key putting the most expensive tasks first (the pool then ends together); equal keys: plan order."""
        return 0

    def chunksize(self, n_tasks: int, workers: int) -> int:
        """Tasks a worker takes at a time (many small tasks go in chunks)."""
        return 1

    def execute(self, tasks: Sequence[TaskT], run: ExperimentRun) -> list[RowT]:
        """``run_one`` over ``tasks`` on the run's pool, rows in task order whatever order they finished in."""
        return run.map(self.run_one, tasks, cost=self.cost, chunksize=self.chunksize(len(tasks), run.workers))

    def run(self, out_dir: str | Path, workers: int) -> dict[str, Any]:
        """Plan, run, aggregate, then write ``results.json`` and ``report.md`` into ``out_dir`` (created)."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        run = ExperimentRun(out, workers)
        results = self.aggregate(self.execute(self.plan(), run), run)
        write_results(out, results, self.render(results), indent=self.json_indent, allow_nan=self.json_allow_nan)
        return results
