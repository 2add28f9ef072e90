"""Feed-forward neural network Q-function, the baseline of P-fqi §4.3 (FFNN / "RL-NN").

P-grid §3.3: "an ordinary feed-forward neural net [...] trained using standard
back-propagation", re-trained in batch on the whole training set.  This one is a small
multi-layer perceptron in NumPy: inputs [s, a] → ``hidden`` tanh layers → one linear
output, trained on the mean squared error by mini-batch Adam (Kingma & Ba 2015, default
step sizes).  Re-fits start from the current weights (a warm start: the targets of
successive SARSA/fitted-Q re-fits move little, so this converges in few epochs).

Defaults (the papers give none): one hidden layer of 32 units, 30 epochs per re-fit but
at most 200 mini-batch steps, mini-batches of 256, learning rate 1e-3, Glorot-uniform
initialisation.  The step cap keeps a re-fit's cost flat as the replay memory grows (it
was 85 % of ``perez-fqi``'s time without it); on LAL-like tuning seeds 1000–1001
(``fqi-ffnn``, estimated, λ = 0.5) it gave interactive W 0.818 / 0.945 against 0.811 /
0.937 uncapped, in half the time.  The FFNN has
no memory: ``advance`` is a no-op, which is exactly the contrast P-fqi draws with the ESN.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

from rlsched.core.approximators.base import QFunction, register
from rlsched.core.view import FloatArray


@register
class FeedForwardQ(QFunction):
    """MLP Q-function trained by back-propagation (Adam) on the squared error."""

    kind = "ffnn"

    def __init__(
        self,
        state_dim: int,
        action_dim: int,
        *,
        hidden: Sequence[int] = (32,),
        epochs: int = 30,
        batch_size: int = 256,
        learning_rate: float = 1e-3,
        weight_decay: float = 0.0,
        max_steps: int | None = 200,
        seed: int | np.random.Generator = 0,
    ) -> None:
        super().__init__(state_dim, action_dim)
        if not hidden or any(h < 1 for h in hidden):
            raise ValueError(f"ffnn: hidden layer sizes must be ≥ 1, got {list(hidden)}")
        if epochs < 1 or batch_size < 1 or learning_rate <= 0:
            raise ValueError("ffnn: epochs and batch_size must be ≥ 1 and learning_rate > 0")
        if max_steps is not None and max_steps < 1:
            raise ValueError(f"ffnn: max_steps must be ≥ 1 or None, got {max_steps}")
        self.hidden = tuple(int(h) for h in hidden)
        self.epochs = epochs
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.weight_decay = weight_decay
        self.max_steps = max_steps
        self.rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
        sizes = [self.input_dim, *self.hidden, 1]
        self.weights: list[FloatArray] = []
        self.biases: list[FloatArray] = []
        for fan_in, fan_out in itertools.pairwise(sizes):
            limit = np.sqrt(6.0 / (fan_in + fan_out))
            self.weights.append(self.rng.uniform(-limit, limit, size=(fan_in, fan_out)))
            self.biases.append(np.zeros(fan_out))
        # Adam moments, one pair per parameter array (weights then biases).
        self._m = [np.zeros_like(p) for p in self._params()]
        self._v = [np.zeros_like(p) for p in self._params()]
        self._t = 0

    def _params(self) -> list[FloatArray]:
        return [*self.weights, *self.biases]

    def _forward(self, rows: FloatArray) -> list[FloatArray]:
        """Activations of every layer, input first, linear output last."""
        acts = [rows]
        for i, (w, b) in enumerate(zip(self.weights, self.biases, strict=True)):
            z = acts[-1] @ w + b
            acts.append(z if i == len(self.weights) - 1 else np.tanh(z))
        return acts

    def predict(self, rows: FloatArray) -> FloatArray:
        return self._forward(rows)[-1][:, 0]

    def fit(self, rows: FloatArray, targets: FloatArray, gram: FloatArray | None = None) -> None:
        """``epochs`` passes of mini-batch Adam on ½·mean squared error (``gram`` is ignored).

        At most ``max_steps`` mini-batches when set: a warm-started re-fit on a large replay
        memory then costs the same at every size, as in neural fitted Q with experience
        replay, instead of growing with the memory.
        """
        n = rows.shape[0]
        if n == 0:
            return
        beta1, beta2, eps = 0.9, 0.999, 1e-8
        steps_left = self.epochs * -(-n // self.batch_size)
        if self.max_steps is not None:
            steps_left = min(steps_left, self.max_steps)
        while steps_left > 0:
            order = self.rng.permutation(n)
            for start in range(0, n, self.batch_size):
                if steps_left == 0:
                    break
                steps_left -= 1
                idx = order[start : start + self.batch_size]
                acts = self._forward(rows[idx])
                delta = (acts[-1][:, 0] - targets[idx])[:, None] / idx.size
                grads_w: list[FloatArray] = []
                grads_b: list[FloatArray] = []
                for layer in range(len(self.weights) - 1, -1, -1):
                    grads_w.append(acts[layer].T @ delta + self.weight_decay * self.weights[layer])
                    grads_b.append(delta.sum(axis=0))
                    if layer:
                        delta = (delta @ self.weights[layer].T) * (1.0 - acts[layer] ** 2)
                grads = [*reversed(grads_w), *reversed(grads_b)]
                self._t += 1
                lr = self.learning_rate * np.sqrt(1 - beta2**self._t) / (1 - beta1**self._t)
                for p, g, m, v in zip(self._params(), grads, self._m, self._v, strict=True):
                    m *= beta1
                    m += (1 - beta1) * g
                    v *= beta2
                    v += (1 - beta2) * g * g
                    p -= lr * m / (np.sqrt(v) + eps)

    def to_arrays(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        meta = {
            "state_dim": self.state_dim,
            "action_dim": self.action_dim,
            "hidden": list(self.hidden),
            "epochs": self.epochs,
            "batch_size": self.batch_size,
            "learning_rate": self.learning_rate,
            "weight_decay": self.weight_decay,
            "max_steps": self.max_steps,
            "adam_t": self._t,
        }
        arrays: dict[str, np.ndarray] = {}
        for i, p in enumerate(self._params()):
            arrays[f"p{i}"] = p
            arrays[f"m{i}"] = self._m[i]
            arrays[f"v{i}"] = self._v[i]
        return meta, arrays

    @classmethod
    def from_arrays(cls, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> FeedForwardQ:
        model = cls(
            meta["state_dim"],
            meta["action_dim"],
            hidden=meta["hidden"],
            epochs=meta["epochs"],
            batch_size=meta["batch_size"],
            learning_rate=meta["learning_rate"],
            weight_decay=meta["weight_decay"],
            max_steps=meta.get("max_steps"),
        )
        for i, p in enumerate(model._params()):
            for prefix, target in (("p", p), ("m", model._m[i]), ("v", model._v[i])):
                src = arrays[f"{prefix}{i}"]
                if src.shape != target.shape:
                    raise ValueError(f"ffnn: array '{prefix}{i}' has shape {src.shape}, expected {target.shape}")
                target[...] = src
        model._t = int(meta["adam_t"])
        return model
