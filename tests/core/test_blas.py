"""The BLAS guard of the learned code (issue 22): one thread inside, the caller's count given back.

That a learned run is then the same for 1 and 2 caller threads: tests/workflow/test_train_blas.py.
"""

from __future__ import annotations

import pytest
from threadpoolctl import threadpool_limits

from rlsched.core.blas import blas_threads, one_blas_thread, single_blas_thread


def test_the_guard_sets_one_thread_and_gives_the_callers_back() -> None:
    with threadpool_limits(limits=2, user_api="blas"):
        assert set(blas_threads()) == {2}
        with one_blas_thread():
            assert set(blas_threads()) == {1}
            with one_blas_thread():  # re-entrant: the inner exit restores nothing
                pass
            assert set(blas_threads()) == {1}
        assert set(blas_threads()) == {2}


def test_a_decorated_function_runs_on_one_thread_and_passes_its_result_through() -> None:
    @single_blas_thread
    def seen(x: int) -> tuple[int, list[int]]:
        return x + 1, blas_threads()

    with threadpool_limits(limits=2, user_api="blas"):
        value, threads = seen(1)
        assert value == 2 and set(threads) == {1}
        assert set(blas_threads()) == {2}


def test_the_guard_restores_after_an_exception() -> None:
    with threadpool_limits(limits=2, user_api="blas"):
        with pytest.raises(RuntimeError), one_blas_thread():
            raise RuntimeError("boom")
        assert set(blas_threads()) == {2}
