"""The Q-function interface shared by the ESN, the feed-forward net and the table.

A Q-function scores the candidate actions of one decision in ONE vectorised call:
``scores(state, actions)`` takes the state vector (d_s,) and an action matrix (n, d_a)
and returns n values.  Learning goes through *design rows*: ``encode(state, actions)``
gives, for each candidate, the row the model's trainable part reads (for the ESN, the
reservoir state reached by that candidate plus the inputs; for the FFNN and the table,
the inputs themselves), ``predict(rows)`` evaluates rows, ``fit(rows, targets)``
re-fits the trainable part.  Learners store the design rows of the chosen actions, so
a re-fit never needs to replay the past through the model.

Recurrent models (the ESN) carry a memory of the past decisions: ``encode`` reads it
without changing it, and ``advance(row)`` moves it to the state reached by the chosen
action.  Stateless models ignore ``advance``.

Every model saves to one ``.npz`` file holding a JSON header (``format_version``,
``kind``, hyper-parameters) and its arrays, written atomically (temporary file, fsync,
rename) so that a crash at any moment leaves either the old or the new file.
"""

from __future__ import annotations

import json
import os
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import scipy.linalg

from rlsched.core.atomic import atomic_write
from rlsched.core.view import FloatArray

#: Bumped whenever the layout of a saved file changes incompatibly.
FORMAT_VERSION = 1


class QFunction(ABC):
    """Q(s, a) for a batch of candidate actions sharing one state."""

    kind: ClassVar[str]

    def __init__(self, state_dim: int, action_dim: int) -> None:
        if state_dim < 0 or action_dim < 1:
            raise ValueError(f"{type(self).__name__}: bad input sizes state={state_dim} action={action_dim}")
        self.state_dim = state_dim
        self.action_dim = action_dim

    @property
    def input_dim(self) -> int:
        return self.state_dim + self.action_dim

    @property
    def design_dim(self) -> int:
        """Width of a design row: the state and the action side by side, unless a model adds more."""
        return self.input_dim

    def encode(self, state: FloatArray, actions: FloatArray) -> FloatArray:
        """Design rows (n, design_dim) of the candidates; does not change the model."""
        self._check_inputs(state, actions)
        return np.hstack([np.broadcast_to(state, (actions.shape[0], self.state_dim)), actions])

    @abstractmethod
    def predict(self, rows: FloatArray) -> FloatArray:
        """Q-values (n,) of design rows."""

    @abstractmethod
    def fit(self, rows: FloatArray, targets: FloatArray, gram: FloatArray | None = None) -> None:
        """Re-fit the trainable part so that ``predict(rows) ≈ targets``.

        ``gram`` may pass ``rows.T @ rows`` when the caller keeps it up to date
        incrementally; linear read-outs then skip the O(n d²) product.
        """

    def fit_subset(
        self, rows: FloatArray, subset: np.ndarray, targets: FloatArray, gram: FloatArray | None = None
    ) -> None:
        """Like ``fit(rows[subset], targets, gram)``; linear read-outs avoid copying the rows."""
        self.fit(rows[subset], targets, gram)

    def scores(self, state: FloatArray, actions: FloatArray) -> FloatArray:
        """Q(state, a) for every row ``a`` of ``actions``, in one vectorised call."""
        return self.predict(self.encode(state, actions))

    def advance(self, row: FloatArray) -> None:  # noqa: B027 - stateless models keep no memory
        """Move the memory to the state reached by the chosen action's design row."""

    def reset_memory(self) -> None:  # noqa: B027 - stateless models keep no memory
        """Forget the past decisions (start of an episode)."""

    def _check_inputs(self, state: FloatArray, actions: FloatArray) -> None:
        if state.shape != (self.state_dim,):
            raise ValueError(f"{self.kind}: state has shape {state.shape}, expected ({self.state_dim},)")
        if actions.ndim != 2 or actions.shape[1] != self.action_dim:
            raise ValueError(f"{self.kind}: actions have shape {actions.shape}, expected (n, {self.action_dim})")

    # -- persistence ----------------------------------------------------------------------
    @abstractmethod
    def to_arrays(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """(JSON-able hyper-parameters, arrays) that fully describe the model."""

    @classmethod
    @abstractmethod
    def from_arrays(cls, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> QFunction:
        """Rebuild a model from :meth:`to_arrays` output."""

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the model to one file, atomically."""
        meta, arrays = self.to_arrays()
        save_checkpoint(path, {"kind": self.kind, "model": meta}, arrays)


_REGISTRY: dict[str, type[QFunction]] = {}


def register(cls: type[QFunction]) -> type[QFunction]:
    """Class decorator: make ``load_qfunction`` know this kind."""
    _REGISTRY[cls.kind] = cls
    return cls


def load_qfunction(path: str | os.PathLike[str]) -> QFunction:
    """Load any saved Q-function (the file says which kind)."""
    meta, arrays = read_checkpoint(path)
    return qfunction_from_checkpoint(path, meta, arrays)


def qfunction_from_checkpoint(
    path: str | os.PathLike[str], meta: dict[str, Any], arrays: dict[str, np.ndarray], prefix: str = ""
) -> QFunction:
    """Rebuild the Q-function stored under ``prefix`` in an already-read checkpoint."""
    kind = meta.get("kind")
    if kind not in _REGISTRY:
        raise ValueError(f"{path}: unknown Q-function kind {kind!r} (known: {sorted(_REGISTRY)})")
    sub = {k[len(prefix) :]: v for k, v in arrays.items() if k.startswith(prefix)}
    try:
        return _REGISTRY[kind].from_arrays(meta["model"], sub)
    except KeyError as exc:
        raise ValueError(f"{path}: missing key {exc.args[0]!r} in {kind} model") from exc


def save_checkpoint(path: str | os.PathLike[str], meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
    """Write ``meta`` (JSON) and ``arrays`` to one ``.npz`` file, atomically."""
    target = Path(path)
    header = dict(meta, format_version=FORMAT_VERSION)
    if "__meta__" in arrays:
        raise ValueError("array name '__meta__' is reserved")
    payload = dict(arrays, __meta__=np.array(json.dumps(header, sort_keys=True)))
    atomic_write(target, lambda handle: np.savez(handle, **payload))  # type: ignore[arg-type]


def read_checkpoint(path: str | os.PathLike[str]) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Read a file written by :func:`save_checkpoint`; one-line errors name the file and key."""
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {name: data[name] for name in data.files}
    except FileNotFoundError:
        raise
    except Exception as exc:
        raise ValueError(f"{path}: not a readable rlsched checkpoint ({exc})") from exc
    if "__meta__" not in arrays:
        raise ValueError(f"{path}: missing key '__meta__' (not an rlsched checkpoint)")
    try:
        meta = json.loads(str(arrays.pop("__meta__")))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: key '__meta__' is not valid JSON ({exc})") from exc
    version = meta.get("format_version")
    if version != FORMAT_VERSION:
        raise ValueError(f"{path}: format_version {version!r} is not supported (expected {FORMAT_VERSION})")
    return meta, arrays


def ridge_solve(gram: FloatArray, rhs: FloatArray, alpha: float, unpenalised: int | None = None) -> FloatArray:
    """Solve ``(G + αI) w = b`` (the ridge normal equations) by Cholesky.

    ``unpenalised`` is the index of a column left out of the penalty (the bias).
    """
    reg = np.full(gram.shape[0], alpha)
    if unpenalised is not None:
        reg[unpenalised] = 0.0
    lhs = gram + np.diag(reg)
    try:
        return np.asarray(scipy.linalg.solve(lhs, rhs, assume_a="pos", check_finite=False))
    except (np.linalg.LinAlgError, scipy.linalg.LinAlgError):
        # Only reached when a column is constant zero and unpenalised: fall back to least squares.
        return np.asarray(scipy.linalg.lstsq(lhs, rhs)[0])
