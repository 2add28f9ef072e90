from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from rlsched.cli._common import load_workload
from rlsched.workflow.pieces import PieceStore, fingerprint
from tests.workflow.conftest import write_swf


def test_a_fingerprint_is_the_same_for_equal_arguments_and_differs_with_any_column(tmp_path: Path) -> None:
    jobs = load_workload(str(write_swf(tmp_path / "small.swf", n=50)))
    again = load_workload(str(write_swf(tmp_path / "again.swf", n=50)))
    assert fingerprint(replace(jobs, name="x"), "f4", 8) == fingerprint(replace(again, name="x"), "f4", 8)
    # A column a rule reads but a training checkpoint's fingerprint does not (user-last2 reads the user).
    users = jobs.user.copy()
    users[7] += 1
    assert fingerprint(replace(jobs, user=users)) != fingerprint(jobs)
    assert fingerprint(jobs, 1.0) != fingerprint(jobs, 1.0 + 1e-12)
    assert fingerprint({"a": 1, "b": 2}) == fingerprint({"b": 2, "a": 1}) != fingerprint({"a": 1})
    assert fingerprint(frozenset({"x", "y"})) == fingerprint(frozenset({"y", "x"}))
    assert fingerprint(np.arange(3, dtype=np.int64)) != fingerprint(np.arange(3, dtype=np.int32))
    assert fingerprint((1, 2)) != fingerprint(((1, 2),))
    with pytest.raises(TypeError, match="cannot digest a object"):
        fingerprint(object())  # a key that left out part of its arguments could read another's piece


def test_a_piece_kept_is_read_back_and_a_damaged_one_is_computed_again(tmp_path: Path) -> None:
    store = PieceStore(tmp_path / "pieces")
    assert store.get("k") is None
    calls: list[int] = []

    def compute() -> tuple[float, None]:
        calls.append(1)
        return 2.5, None

    assert store.computed("k", compute) == (2.5, None) and calls == [1]
    assert PieceStore(tmp_path / "pieces").computed("k", compute) == (2.5, None) and calls == [1]
    (tmp_path / "pieces" / "k.pickle").write_bytes(b"\x80\x05 cut short")  # a file another program damaged
    again = PieceStore(tmp_path / "pieces")
    assert again.computed("k", compute) == (2.5, None) and calls == [1, 1]
    assert again.reused == 0 and again.kept == 1
    assert [p.name for p in (tmp_path / "pieces").iterdir()] == ["k.pickle"]  # no temporary file left behind
