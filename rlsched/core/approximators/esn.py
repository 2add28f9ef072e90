"""Echo State Network Q-function (P-grid §3.3 and §4.1, P-fqi §3.2; Jaeger 2003).

A fixed random recurrent *reservoir* of ``n_units`` sigmoid units is driven by the
inputs u_t = [s_t, a_t, 1] of the successive decisions:

    x_t = σ(W x_{t−1} + W_in u_t)

and a linear *readout* maps the reservoir state and the inputs to the value,
``Q(s_t, a_t) = w · [x_t, u_t]``.  Only the readout is trained, by ridge regression
(P-grid §3.3: "a linear regression over the output weights is used to learn the
target function").  The reservoir gives the Q-function a memory of past decisions,
which is the point of P-fqi (the decision process is not Markovian in the state
descriptors).

Defaults and where they come from:

- ``n_units = 100`` sigmoid units, reservoir weights drawn in [0, 1] with 10 %
  connectivity, and 15 % connectivity from the reservoir to the output: P-grid §4.1
  and P-fqi §4.1 ("as in Jaeger 2003").  The readout therefore reads a random 15 % of
  the reservoir units, plus every input and a bias.
- ``spectral_radius = 0.9``: the papers do not give it; the reservoir is rescaled to a
  spectral radius below 1 so that the echo-state property holds (the influence of the
  initial state fades; Jaeger 2001, 2003).  With sigmoid units (slope ≤ 1/4) the
  contraction is stronger still.
- Input weights uniform in [−1, 1] times ``input_scaling = 0.5`` (not given by the
  papers; features are already scaled to about [0, 1] by :mod:`rlsched.core.features`).
- ``ridge_alpha = 100``: the papers do not give the regulariser (Jaeger 2003 and
  Lukoševičius, "A practical guide to applying echo state networks", 2012, choose it on
  validation data).  It was chosen on LAL-like *tuning* seeds 1000–1001
  (``benchmarks/diag_perez_learning.py --esn ridge_alpha=…``), from 1e-2, 1, 10, 30, 100:
  at 1e-2 (the previous default) the read-out put weights of ±10–20 on reservoir units
  whose activations vary by ~0.08, and of ±4 on VO one-hots that only mark which burst a
  job came from, so that noise, not the class of the job, decided the greedy choice
  (greedy picks between an interactive and a batch job went interactive 12–85 % of the
  time); from 30 up they went interactive in 100 % of such choices.  With the "no job"
  action (``SchedulingAgent(keep_idle_cores=2)``) it was re-chosen on tuning seeds
  1000–1003 from 10, 30, 100, 300, 1000: interactive W 0.926, 0.952, 0.972, 0.967, 0.968
  (SARSA, estimated runtimes, λ = 0.5; batch W 0.797–0.799 throughout).  100 was kept, and
  it matched or beat 30 on the other settings checked there: without the action
  0.909 / 0.908 against 0.910 / 0.908 (λ = 0.5 / 1), with it 0.966 against 0.944 (λ = 1)
  and 0.967 against 0.939 (oracle), fitted Q 0.906 against 0.894.  The penalty is on
  the sum of squares (not the mean), so it weighs less as the memory grows (≈ 10⁴
  transitions per LAL-like run).

Scoring the n candidates of one decision is one matrix product: all candidates share
the previous reservoir state, so ``W x_{t−1}`` and the state part of ``W_in u`` are
computed once and only ``A W_aᵀ`` (n × d_a times d_a × units) depends on the candidate;
only the reservoir units the readout reads are evaluated.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

from rlsched.core.approximators.base import QFunction, register, ridge_solve
from rlsched.core.view import FloatArray

Activation = Literal["sigmoid", "tanh"]


def _activate(pre: FloatArray, activation: str) -> FloatArray:
    if activation == "sigmoid":
        # The logistic function via tanh: same values, no overflow warnings for large |pre|.
        return 0.5 * (1.0 + np.tanh(0.5 * pre))
    return np.tanh(pre)


def reservoir_matrix(n_units: int, connectivity: float, spectral_radius: float, rng: np.random.Generator) -> FloatArray:
    """Sparse random reservoir, weights uniform in [0, 1] (P-grid §4.1), scaled to ``spectral_radius``."""
    if not 0.0 < connectivity <= 1.0:
        raise ValueError(f"esn: connectivity must lie in (0, 1], got {connectivity}")
    if not 0.0 < spectral_radius < 1.0:
        raise ValueError(f"esn: spectral radius must lie in (0, 1) for the echo-state property, got {spectral_radius}")
    mask = rng.random((n_units, n_units)) < connectivity
    weights = np.where(mask, rng.random((n_units, n_units)), 0.0)
    radius = float(np.max(np.abs(np.linalg.eigvals(weights))))
    if radius == 0.0:  # a nilpotent draw (possible for tiny reservoirs): nothing to scale
        return weights
    return weights * (spectral_radius / radius)


@register
class EchoStateQ(QFunction):
    """ESN Q-function: fixed sparse reservoir, ridge readout on [reservoir state, inputs, 1]."""

    kind = "esn"

    def __init__(
        self,
        state_dim: int,
        action_dim: int,
        *,
        n_units: int = 100,
        connectivity: float = 0.10,
        spectral_radius: float = 0.9,
        input_scaling: float = 0.5,
        activation: Activation = "sigmoid",
        readout_fraction: float = 0.15,
        ridge_alpha: float = 100.0,
        seed: int | np.random.Generator = 0,
    ) -> None:
        super().__init__(state_dim, action_dim)
        if n_units < 1:
            raise ValueError(f"esn: n_units must be ≥ 1, got {n_units}")
        if activation not in ("sigmoid", "tanh"):
            raise ValueError(f"esn: activation must be 'sigmoid' or 'tanh', got {activation!r}")
        if not 0.0 <= readout_fraction <= 1.0:
            raise ValueError(f"esn: readout_fraction must lie in [0, 1], got {readout_fraction}")
        if ridge_alpha < 0:
            raise ValueError(f"esn: ridge_alpha must be ≥ 0, got {ridge_alpha}")
        rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
        self.n_units = n_units
        self.connectivity = connectivity
        self.spectral_radius = spectral_radius
        self.input_scaling = input_scaling
        self.activation: Activation = activation
        self.readout_fraction = readout_fraction
        self.ridge_alpha = ridge_alpha
        self.w_res = reservoir_matrix(n_units, connectivity, spectral_radius, rng)
        # Input weights for [state, action, bias].
        self.w_in = input_scaling * rng.uniform(-1.0, 1.0, size=(n_units, self.input_dim + 1))
        n_read = round(readout_fraction * n_units)
        read_units = np.sort(rng.choice(n_units, size=n_read, replace=False))
        self.readout_cols = np.concatenate([read_units, n_units + np.arange(self.input_dim + 1)])
        self.readout = np.zeros(self.design_dim)
        self.memory = np.zeros(n_units)

    @property
    def design_dim(self) -> int:
        return self.n_units + self.input_dim + 1

    @property
    def _read_units(self) -> np.ndarray:
        return self.readout_cols[self.readout_cols < self.n_units]

    def _shared_pre(self, state: FloatArray) -> FloatArray:
        """The part of the reservoir's pre-activation common to all candidates."""
        s = self.state_dim
        return self.w_res @ self.memory + self.w_in[:, :s] @ state + self.w_in[:, -1]

    def encode(self, state: FloatArray, actions: FloatArray) -> FloatArray:
        self._check_inputs(state, actions)
        s = self.state_dim
        pre = self._shared_pre(state)[None, :] + actions @ self.w_in[:, s : s + self.action_dim].T
        n = actions.shape[0]
        return np.hstack([_activate(pre, self.activation), np.broadcast_to(state, (n, s)), actions, np.ones((n, 1))])

    def scores(self, state: FloatArray, actions: FloatArray) -> FloatArray:
        """Q of every candidate without building design rows: only read-out units are evaluated."""
        self._check_inputs(state, actions)
        s, units = self.state_dim, self._read_units
        shared = self._shared_pre(state)[units]
        pre = actions @ self.w_in[units, s : s + self.action_dim].T
        pre += shared
        hidden = _activate(pre, self.activation)
        w = self.readout
        constant = float(w[self.n_units : self.n_units + s] @ state + w[-1])
        return hidden @ w[units] + actions @ w[self.n_units + s : self.n_units + s + self.action_dim] + constant

    def predict(self, rows: FloatArray) -> FloatArray:
        return rows @ self.readout

    def fit(self, rows: FloatArray, targets: FloatArray, gram: FloatArray | None = None) -> None:
        """Ridge readout over the connected columns (P-grid §3.3): ``(ZᵀZ + αI) w = Zᵀy``."""
        cols = self.readout_cols
        sub_rows = rows[:, cols]
        sub_gram = sub_rows.T @ sub_rows if gram is None else gram[np.ix_(cols, cols)]
        self.fit_normal(sub_gram, sub_rows.T @ targets)

    def fit_subset(
        self, rows: FloatArray, subset: np.ndarray, targets: FloatArray, gram: FloatArray | None = None
    ) -> None:
        """Ridge fit on ``rows[subset]`` computing ``Zᵀy`` over all rows with zero targets elsewhere."""
        if gram is None:
            self.fit(rows[subset], targets)
            return
        y = np.zeros(rows.shape[0])
        y[subset] = targets
        cols = self.readout_cols
        self.fit_normal(gram[np.ix_(cols, cols)], (rows.T @ y)[cols])

    def fit_normal(self, sub_gram: FloatArray, sub_rhs: FloatArray) -> None:
        """Solve the normal equations restricted to ``readout_cols`` (bias not penalised)."""
        weights = ridge_solve(sub_gram, sub_rhs, self.ridge_alpha, unpenalised=len(self.readout_cols) - 1)
        self.readout = np.zeros(self.design_dim)
        self.readout[self.readout_cols] = weights

    def advance(self, row: FloatArray) -> None:
        self.memory = np.array(row[: self.n_units], dtype=np.float64)

    def reset_memory(self) -> None:
        self.memory = np.zeros(self.n_units)

    def step(self, inputs: FloatArray) -> FloatArray:
        """Drive the reservoir with one input vector [state, action]; returns the new state."""
        pre = self.w_res @ self.memory + self.w_in[:, :-1] @ inputs + self.w_in[:, -1]
        self.memory = _activate(pre, self.activation)
        return self.memory.copy()

    def to_arrays(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        meta = {
            "state_dim": self.state_dim,
            "action_dim": self.action_dim,
            "n_units": self.n_units,
            "connectivity": self.connectivity,
            "spectral_radius": self.spectral_radius,
            "input_scaling": self.input_scaling,
            "activation": self.activation,
            "readout_fraction": self.readout_fraction,
            "ridge_alpha": self.ridge_alpha,
        }
        arrays = {
            "w_res": self.w_res,
            "w_in": self.w_in,
            "readout_cols": self.readout_cols,
            "readout": self.readout,
            "memory": self.memory,
        }
        return meta, arrays

    @classmethod
    def from_arrays(cls, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> EchoStateQ:
        model = cls(
            meta["state_dim"],
            meta["action_dim"],
            n_units=meta["n_units"],
            connectivity=meta["connectivity"],
            spectral_radius=meta["spectral_radius"],
            input_scaling=meta["input_scaling"],
            activation=meta["activation"],
            readout_fraction=meta["readout_fraction"],
            ridge_alpha=meta["ridge_alpha"],
            seed=0,
        )
        for name in ("w_res", "w_in", "readout_cols", "readout", "memory"):
            expected = getattr(model, name).shape
            if arrays[name].shape != expected:
                raise ValueError(f"esn: array {name!r} has shape {arrays[name].shape}, expected {expected}")
        model.w_res = arrays["w_res"].astype(np.float64)
        model.w_in = arrays["w_in"].astype(np.float64)
        model.readout_cols = arrays["readout_cols"].astype(np.int64)
        model.readout = arrays["readout"].astype(np.float64)
        model.memory = arrays["memory"].astype(np.float64)
        return model
