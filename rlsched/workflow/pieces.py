"""The finished pieces of a long run, kept on disk so that a run that stops resumes where it stopped.

A row of ``rlsched learning`` on a whole trace is hours of replays and trainings (LPC-EGEE's: more than a
session), each of them deterministic: a rule replayed on a window, a seed trained, a model replayed on a window.
:class:`PieceStore` keeps each one's result under the :func:`fingerprint` of everything it depends on (the jobs
of its windows column by column, the policy, the mode, the objective, the cores, the seed …), written atomically
as it finishes; a run with the same arguments reads it back instead of computing it again, so a row finished
over several runs is the row one uninterrupted run gives.  A piece whose arguments changed has another
fingerprint and is computed afresh.  The code is not part of the key (as for ``rlsched train``'s checkpoints):
after a change to what a replay or a training computes, remove the directory, or its pieces are read back.

The files are pickles that this code wrote for itself, in a directory of the run's own output; they are not an
exchange format (a model to deploy is written by :func:`rlsched.workflow.train.judge_and_write`).
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import math
import pickle
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from rlsched.core.atomic import atomic_write

T = TypeVar("T")


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


class PieceStore:
    """Finished pieces by fingerprint, one file each under ``directory`` (made when the first is kept)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        #: Pieces read back, and pieces computed and kept, by this store object.
        self.reused = 0
        self.kept = 0

    def _path(self, key: str) -> Path:
        return self.directory / f"{key}.pickle"

    def get(self, key: str) -> Any | None:
        """The piece kept under ``key``; None when there is none, or its file cannot be read (computed again)."""
        try:
            with self._path(key).open("rb") as f:
                value = pickle.load(f)
        except _UNREADABLE:
            return None
        self.reused += 1
        return value

    def put(self, key: str, value: Any) -> None:
        """Keep ``value`` under ``key`` (atomically: a run killed while writing leaves no half piece)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        atomic_write(self._path(key), lambda f: f.write(data), mode=0o644)
        self.kept += 1

    def computed(self, key: str, compute: Callable[[], T]) -> T:
        """The piece under ``key``, computed and kept when there is none."""
        kept = self.get(key)
        if kept is not None:
            return kept
        value = compute()
        self.put(key, value)
        return value
