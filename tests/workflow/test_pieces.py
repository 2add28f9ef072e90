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


def _sources(root: Path) -> Path:
    """A stand-in for the rlsched package: a file in each of code_digest's sources and one outside them."""
    names = ("core/a.py", "sim/b.py", "workflow/c.py", "workflow/prior.json", "errors.py", "daemon/d.py")
    for name in (*names, "workflow/learning_report.py"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(f"# {name}\n")
    return root


def test_the_code_digest_changes_with_what_computes_a_row_and_only_with_it(tmp_path: Path) -> None:
    from rlsched.workflow.pieces import code_digest

    root = _sources(tmp_path / "one")
    before = code_digest(root)
    assert code_digest(_sources(tmp_path / "two")) == before  # the same sources anywhere
    (root / "daemon" / "d.py").write_text("changed = True\n")  # the daemon never runs in a replay
    (root / "workflow" / "learning_report.py").write_text("worded = 'otherwise'\n")  # writes reports, no row
    (root / "sim" / "__pycache__").mkdir()
    (root / "sim" / "__pycache__" / "b.cpython-311.pyc").write_bytes(b"\x00")
    assert code_digest(_sources(tmp_path / "three")) == before and code_digest(tmp_path / "one") == before
    for changed in ("core/a.py", "workflow/prior.json", "errors.py"):
        other = _sources(tmp_path / changed.replace("/", "_"))
        (other / changed).write_text("x = 1\n")
        assert code_digest(other) != before, changed
    moved = _sources(tmp_path / "moved")
    (moved / "sim" / "b.py").rename(moved / "sim" / "b2.py")  # the same bytes under another name
    assert code_digest(moved) != before
    assert len(code_digest()) == 16  # the installed package's


def test_a_piece_another_code_computed_is_computed_again_unless_asked(tmp_path: Path) -> None:
    import pickle

    old = PieceStore(tmp_path / "pieces", code="old")
    old.put("k", 1.0)
    calls: list[int] = []

    def compute() -> float:
        calls.append(1)
        return 2.0

    new = PieceStore(tmp_path / "pieces", code="new")
    assert new.computed("k", compute) == 2.0 and calls == [1]  # not the old code's 1.0
    assert (new.reused, new.stale, new.kept, new.codes) == (0, 1, 1, {"new"})
    assert PieceStore(tmp_path / "pieces", code="new").get("k") == 2.0  # kept over the old one
    # Asked to (a row of hours resumed across a change): read back, and its code listed.
    old.put("k", 1.0)
    across = PieceStore(tmp_path / "pieces", code="new", other_code=True)
    assert across.get("k") == 1.0 and (across.reused, across.stale, across.codes) == (1, 1, {"old"})
    # A piece from before pieces recorded their code holds the bare value: its code is unrecorded.
    (tmp_path / "pieces" / "bare.pickle").write_bytes(pickle.dumps(3.0))
    assert PieceStore(tmp_path / "pieces", code="new").get("bare") is None
    bare = PieceStore(tmp_path / "pieces", code="new", other_code=True)
    assert bare.get("bare") == 3.0 and bare.codes == {"unrecorded"}
