"""One BLAS thread around learned computations, whatever the process set before (issue 22).

A multi-threaded BLAS splits a matrix product's sums between its threads, and the split depends
on the thread count: with two threads OpenBLAS's SkylakeX kernels sum an ESN ridge fit's Gram
matrix in another order than with one, the weights differ in the last bits, and after a few
hundred re-fits a greedy choice flips.  A learned run must give the same model for a seed on a
2-core laptop, a 64-core node and a one-thread Dask worker, so the learners run their linear
algebra on one BLAS thread.

The CLI already sets ``OPENBLAS_NUM_THREADS=1`` before NumPy loads (:func:`rlsched.cli.pin_blas_threads`,
the cheapest way: OpenBLAS then never starts its thread pool).  That does nothing for a learner used
from Python, a notebook, a Dask worker or a test, where NumPy was loaded by someone else.  So the
learned code limits the threads itself, at run time, with threadpoolctl (it changes the thread count
of the BLAS libraries already loaded — NumPy's and SciPy's OpenBLAS, both imported here first — so it
does not depend on import order).

:func:`one_blas_thread` is re-entrant and process-wide: the outermost entry sets every loaded BLAS
to one thread and the last exit restores what was there, so a per-decision guard inside a guarded
simulation costs a lock and a counter step.  The simulator, ``train`` and the daemon put one guard around a
whole run or cycle; the agents and learners guard their own entry points
(:func:`single_blas_thread`) so that any other caller is covered too.

What this does not make reproducible: the kernels themselves.  OpenBLAS picks a kernel set by CPU
(Haswell, SkylakeX, Zen, …; ``OPENBLAS_CORETYPE`` forces one), and two kernel sets may round a
product differently even on one thread.  docs/design.md ("Reproducibility") has the measurements.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Callable, Iterator
from typing import Any, ParamSpec, TypeVar

import numpy as np  # noqa: F401  (loads NumPy's OpenBLAS before the controller looks for it)
import scipy.linalg  # noqa: F401  (and SciPy's: the ridge solves use it)
from threadpoolctl import ThreadpoolController

P = ParamSpec("P")
R = TypeVar("R")

_lock = threading.Lock()
_depth = 0
_controller: ThreadpoolController | None = None
_restore: Any = None


def _blas_controller() -> ThreadpoolController:
    """The BLAS libraries of this process, looked up once (0.6 ms a look-up; a limit then costs ~10 µs)."""
    global _controller
    if _controller is None:
        _controller = ThreadpoolController().select(user_api="blas")
    return _controller


def _enter() -> None:
    global _depth, _restore
    with _lock:
        if _depth == 0:
            _restore = _blas_controller().limit(limits=1)
        _depth += 1


def _exit() -> None:
    global _depth, _restore
    with _lock:
        _depth -= 1
        if _depth == 0 and _restore is not None:
            _restore.restore_original_limits()
            _restore = None


@contextlib.contextmanager
def one_blas_thread() -> Iterator[None]:
    """Run the body with every loaded BLAS library on one thread (re-entrant, thread-safe)."""
    _enter()
    try:
        yield
    finally:
        _exit()


def single_blas_thread(method: Callable[P, R]) -> Callable[P, R]:
    """Decorate a function that does learned linear algebra: it runs under :func:`one_blas_thread`."""

    @functools.wraps(method)
    def guarded(*args: P.args, **kwargs: P.kwargs) -> R:
        # Inside a guarded run (the common case) a counter step, no BLAS call.  _enter/_exit directly rather
        # than the context manager: this runs several times a decision, and contextlib's generator costs
        # about a microsecond of a decision's few hundred (profiled on CTC-SP2).
        _enter()
        try:
            return method(*args, **kwargs)
        finally:
            _exit()

    return guarded


def blas_libraries() -> list[str]:
    """Each loaded BLAS library as ``openblas 0.3.31 Haswell`` (its API, version and kernel set), in a fixed order."""
    return sorted(
        f"{lib.get('internal_api')} {lib.get('version')} {lib.get('architecture') or ''}".strip()
        for lib in _blas_controller().info()
    )


def blas_threads() -> list[int]:
    """The current thread count of each loaded BLAS library (tests and diagnostics)."""
    return [int(lib["num_threads"]) for lib in _blas_controller().info()]
