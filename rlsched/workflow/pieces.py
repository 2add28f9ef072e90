"""The finished pieces of a long run, kept on disk so that a run that stops resumes where it stopped.

A row of ``rlsched learning`` on a whole trace is hours of replays and trainings (LPC-EGEE's: more than a
session), each of them deterministic: a rule replayed on a window, a seed trained, a model replayed on a window.
:class:`PieceStore` keeps each one's result under the :func:`fingerprint` of everything it depends on (the jobs
of its windows column by column, the policy, the mode, the objective, the cores, the seed …), written atomically
as it finishes; a run with the same arguments reads it back instead of computing it again, so a row finished
over several runs is the row one uninterrupted run gives.  A piece whose arguments changed has another
fingerprint and is computed afresh.  Each piece also records what computed it (:func:`computing_code`: the
sources that compute a row and the numerical platform, as the BLAS kernel set changes a learned model's last
bits), and a store reads back only its own code's pieces: a piece computed before a change to what a replay or a
training computes, or on a CPU whose kernels round otherwise, is computed again, not silently mixed into a table
made by this code here.  A run that knowingly resumes across a change (a row of hours over several sessions)
passes ``other_code=True``; the store then lists the codes it read (:attr:`PieceStore.codes`) and the row says
so.

The files are pickles that this code wrote for itself, in a directory of the run's own output; they are not an
exchange format (a model to deploy is written by :func:`rlsched.workflow.train.judge_and_write`).
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import hashlib
import math
import pickle
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from rlsched.core.atomic import atomic_write

T = TypeVar("T")

#: What computes a row of ``rlsched learning``, relative to the ``rlsched`` package: its pure core, the simulator
#: and the workflow (the rest, the daemon, backends, CLI, never runs in a replay or a training).  Data files there
#: count too (the shipped rule prior is read by a training).
COMPUTING_SOURCES = ("core", "sim", "workflow", "errors.py")
#: Files among them that only write a report from finished rows (they compute no row or piece): left out, so a
#: change to a report's wording or to how it judges a goal keeps every row and piece of a run of hours.
REPORT_SOURCES = ("workflow/learning_report.py",)

#: The code of a piece or a row that recorded none (written before pieces recorded their code).
UNRECORDED_CODE = "unrecorded"


def code_digest(root: Path | None = None) -> str:
    """A digest of the files of :data:`COMPUTING_SOURCES` under ``root`` (the installed ``rlsched`` package by
    default): their paths and bytes, compiled caches and :data:`REPORT_SOURCES` left out.  Equal for the same
    sources on any machine."""
    return _code_digest(root if root is not None else Path(__file__).resolve().parent.parent)


def numerical_platform() -> str:
    """What else decides a learned result's last bits: NumPy's and SciPy's versions and each loaded BLAS's version
    and kernel set (OpenBLAS picks one by CPU, and two sets may round a product differently: a sarsa-esn model
    trained on SkylakeX kernels is another model than on Haswell's; docs/design.md, "Reproducibility")."""
    import scipy

    from rlsched.core.blas import blas_libraries

    return f"numpy {np.__version__}, scipy {scipy.__version__}; " + ", ".join(blas_libraries())


def computing_code() -> str:
    """What computed a piece: :func:`code_digest` and :func:`numerical_platform` in one digest."""
    return hashlib.sha256(f"{code_digest()}|{numerical_platform()}".encode()).hexdigest()[:16]


@functools.cache
def _code_digest(root: Path) -> str:
    digest = hashlib.sha256()
    for source in COMPUTING_SOURCES:
        top = root / source
        files = [top] if top.is_file() else sorted(p for p in top.rglob("*") if p.is_file())
        for path in files:
            if "__pycache__" in path.parts or path.suffix in (".pyc", ".pyo"):
                continue
            if path.relative_to(root).as_posix() in REPORT_SOURCES:
                continue
            data = path.read_bytes()
            digest.update(f"{path.relative_to(root).as_posix()}:{len(data)};".encode())
            digest.update(data)
    return digest.hexdigest()[:16]


def fingerprint(*parts: Any) -> str:
    """A digest of ``parts``: arrays by dtype, shape and bytes, dataclasses field by field, mappings by sorted
    key; equal for equal arguments in any process.  A type it cannot digest is a :class:`TypeError` (a key that
    silently ignored part of its arguments could read a piece computed for others)."""
    digest = hashlib.sha256()
    for part in parts:
        _digest(digest, part)
    return digest.hexdigest()[:32]


def _scalar(value: Any) -> str | None:
    """A scalar's text in a digest (None: not a scalar)."""
    if value is None or isinstance(value, (bool, int, str)):
        return f"{type(value).__name__}:{value!r};"
    if isinstance(value, float):
        return f"float:{value.hex() if math.isfinite(value) else value!r};"
    if isinstance(value, np.generic):
        return _scalar(value.item())
    if isinstance(value, enum.Enum):
        return f"enum:{type(value).__name__}.{value.name};"
    if isinstance(value, Path):
        return f"path:{value};"
    return None


def _digest(digest: Any, value: Any) -> None:
    update = digest.update
    text = _scalar(value)
    if text is not None:
        update(text.encode())
    elif isinstance(value, (bytes, bytearray)):
        update(f"bytes:{len(value)};".encode())
        update(bytes(value))
    elif isinstance(value, np.ndarray):
        array = np.ascontiguousarray(value)
        update(f"array:{array.dtype.str}:{array.shape};".encode())
        update(array.tobytes())
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        update(f"dataclass:{type(value).__qualname__}{{".encode())
        for f in dataclasses.fields(value):
            update(f"{f.name}=".encode())
            _digest(digest, getattr(value, f.name))
        update(b"}")
    elif isinstance(value, Mapping):
        update(f"map:{len(value)}{{".encode())
        for key in sorted(value, key=repr):
            _digest(digest, key)
            _digest(digest, value[key])
        update(b"}")
    elif isinstance(value, (set, frozenset)):
        # In no particular order: each element's own digest, sorted.
        update(f"set:{len(value)}{{{''.join(sorted(fingerprint(item) for item in value))}}}".encode())
    elif isinstance(value, (list, tuple)):
        update(f"seq:{len(value)}[".encode())
        for item in value:
            _digest(digest, item)
        update(b"]")
    else:
        raise TypeError(f"fingerprint: cannot digest a {type(value).__name__}")


#: What reading a piece may raise when its file is damaged or was written by another version: computed again.
_UNREADABLE = (
    OSError,
    EOFError,
    pickle.UnpicklingError,
    ValueError,
    TypeError,
    LookupError,
    AttributeError,
    ImportError,
)


@dataclasses.dataclass(frozen=True)
class _Piece:
    """A piece's file: its value and the code that computed it."""

    code: str
    value: Any


class PieceStore:
    """Finished pieces by fingerprint, one file each under ``directory`` (made when the first is kept).

    ``code``: what computes now (:func:`computing_code` by default); a piece another code computed is not read
    back (computed again and kept over it) unless ``other_code``."""

    def __init__(self, directory: Path, code: str | None = None, other_code: bool = False) -> None:
        self.directory = directory
        self.code = code if code is not None else computing_code()
        self.other_code = other_code
        #: Pieces read back, and pieces computed and kept, by this store object.
        self.reused = 0
        self.kept = 0
        #: Pieces found that another code computed: passed over, or (``other_code``) read back.
        self.stale = 0
        #: The codes of the pieces read back and kept, this store's own among them once it keeps one.
        self.codes: set[str] = set()

    def _path(self, key: str) -> Path:
        return self.directory / f"{key}.pickle"

    def get(self, key: str) -> Any | None:
        """The piece kept under ``key``; None when there is none, or its file cannot be read (computed again)."""
        try:
            with self._path(key).open("rb") as f:
                piece = pickle.load(f)
        except _UNREADABLE:
            return None
        # A file from before pieces recorded their code holds the bare value.
        code, value = (piece.code, piece.value) if isinstance(piece, _Piece) else (UNRECORDED_CODE, piece)
        if code != self.code:
            self.stale += 1
            if not self.other_code:
                return None
        self.reused += 1
        self.codes.add(code)
        return value

    def put(self, key: str, value: Any) -> None:
        """Keep ``value`` under ``key`` (atomically: a run killed while writing leaves no half piece)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        data = pickle.dumps(_Piece(self.code, value), protocol=pickle.HIGHEST_PROTOCOL)
        atomic_write(self._path(key), lambda f: f.write(data), mode=0o644)
        self.kept += 1
        self.codes.add(self.code)

    def computed(self, key: str, compute: Callable[[], T]) -> T:
        """The piece under ``key``, computed and kept when there is none."""
        kept = self.get(key)
        if kept is not None:
            return kept
        value = compute()
        self.put(key, value)
        return value
