"""Tabular Q-function for discrete problems (small MDPs, tests, Tong-style type × unit tables).

Each input column is discretised by its own bin edges (``np.digitize``); the cell of a
(state, action) pair is the mixed-radix number of its bin indices.  ``fit`` sets every
visited cell to the mean of its targets — the exact least-squares fit of a one-hot
(tabular) linear model — and leaves unvisited cells at their previous value, so a
batch learner that re-fits on the whole history behaves like the classical table.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from rlsched.core.approximators.base import QFunction, register
from rlsched.core.view import FloatArray, IntArray

#: Refuse tables larger than this many cells (a sign that the problem is not discrete).
MAX_CELLS = 10_000_000


@register
class TableQ(QFunction):
    """Q as a lookup table over binned inputs [state, action]."""

    kind = "table"

    def __init__(self, state_dim: int, action_dim: int, edges: Sequence[Sequence[float]], initial: float = 0.0) -> None:
        super().__init__(state_dim, action_dim)
        if len(edges) != self.input_dim:
            raise ValueError(f"table: {len(edges)} edge lists for {self.input_dim} input columns")
        self.edges = [np.asarray(e, dtype=np.float64) for e in edges]
        for i, e in enumerate(self.edges):
            if e.ndim != 1 or np.any(np.diff(e) <= 0):
                raise ValueError(f"table: edges of column {i} must be strictly increasing")
        self.radix = np.array([e.size + 1 for e in self.edges], dtype=np.int64)
        # In Python integers: an int64 product wraps around (2 bins on 64 columns gives 0 cells) and would slip
        # past the limit into an empty table.
        n_cells = math.prod(int(r) for r in self.radix)
        if n_cells > MAX_CELLS:
            count = str(n_cells) if n_cells < 10**15 else f"more than 10^{len(str(n_cells)) - 1}"
            raise ValueError(
                f"table: {count} cells ({len(self.edges)} binned input columns) exceed the limit of {MAX_CELLS}"
            )
        self.initial = initial
        self.values = np.full(n_cells, initial, dtype=np.float64)
        self.visits = np.zeros(n_cells, dtype=np.int64)

    def cells(self, rows: FloatArray) -> IntArray:
        """Cell index of each design row."""
        cell = np.zeros(rows.shape[0], dtype=np.int64)
        for i, e in enumerate(self.edges):
            cell = cell * self.radix[i] + np.digitize(rows[:, i], e)
        return cell

    def predict(self, rows: FloatArray) -> FloatArray:
        return self.values[self.cells(rows)]

    def fit(self, rows: FloatArray, targets: FloatArray, gram: FloatArray | None = None) -> None:
        """Visited cells take the mean of their targets; others keep their value."""
        cell = self.cells(rows)
        n_cells = self.values.size
        counts = np.bincount(cell, minlength=n_cells)
        sums = np.bincount(cell, weights=targets, minlength=n_cells)
        seen = counts > 0
        self.values[seen] = sums[seen] / counts[seen]
        self.visits = np.maximum(self.visits, counts)

    def to_arrays(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        meta = {
            "state_dim": self.state_dim,
            "action_dim": self.action_dim,
            "edges": [e.tolist() for e in self.edges],
            "initial": self.initial,
        }
        return meta, {"values": self.values, "visits": self.visits}

    @classmethod
    def from_arrays(cls, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> TableQ:
        model = cls(meta["state_dim"], meta["action_dim"], meta["edges"], meta["initial"])
        if arrays["values"].shape != model.values.shape:
            raise ValueError(f"table: array 'values' has shape {arrays['values'].shape}, expected {model.values.shape}")
        model.values = arrays["values"].astype(np.float64)
        model.visits = arrays["visits"].astype(np.int64)
        return model
