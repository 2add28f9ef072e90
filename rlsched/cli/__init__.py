"""The ``rlsched`` command line (click)."""

from __future__ import annotations

import logging
import os

#: BLAS/OpenMP thread variables pinned before NumPy is first imported (see :func:`pin_blas_threads`).
BLAS_THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def pin_blas_threads() -> None:
    """One BLAS thread (or ``RLSCHED_BLAS_THREADS``), set before NumPy loads OpenBLAS.

    A multi-threaded BLAS splits a matrix product's sums between threads, and the split depends
    on the thread count (the cores of the machine by default), so a learned run (ESN ridge fits,
    FFNN steps) could give other numbers for the same seed on another machine.  With one thread the
    order of the reductions no longer depends on the machine's cores.  The experiments' worker
    processes get the same setting (:func:`rlsched.sim.experiments.harness.single_threaded_blas_env`).
    """
    threads = os.environ.get("RLSCHED_BLAS_THREADS", "1")
    for name in BLAS_THREAD_VARS:
        os.environ[name] = threads


# Before anything below can import NumPy (OpenBLAS reads the variables once, when it loads).
pin_blas_threads()

import click  # noqa: E402  (after pin_blas_threads on purpose)

from rlsched import __version__  # noqa: E402


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="rlsched")
@click.option("-v", "--verbose", count=True, help="More log output (-v info, -vv debug).")
def main(verbose: int) -> None:
    """rlsched: a learning scheduler for Slurm/PBS and its trace-driven simulator."""
    level = logging.WARNING - 10 * min(verbose, 2)
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")


def _register() -> None:
    # Each command group lives in its own module; importing them here keeps `main` the one entry point.
    from rlsched.cli import daemon, history, report, sim, trace
    from rlsched.cli.evaluate import evaluate
    from rlsched.cli.train import train

    main.add_command(sim.sim)
    main.add_command(trace.trace)
    main.add_command(daemon.daemon)
    main.add_command(daemon.status)
    main.add_command(history.history)
    main.add_command(train)
    main.add_command(evaluate)
    main.add_command(report.report)


_register()
