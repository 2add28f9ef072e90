"""Q-function approximators: ESN properties, readout regression, FFNN, table, persistence."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from rlsched.core.approximators import (
    EchoStateQ,
    FeedForwardQ,
    QFunction,
    TableQ,
    load_qfunction,
    read_checkpoint,
    save_checkpoint,
)


def test_reservoir_defaults_from_pgrid() -> None:
    esn = EchoStateQ(4, 3, seed=1)
    assert esn.n_units == 100
    assert np.all(esn.w_res >= 0)  # weights drawn in [0, 1], then scaled
    density = np.count_nonzero(esn.w_res) / esn.w_res.size
    assert 0.07 < density < 0.13  # 10 % connectivity
    radius = np.max(np.abs(np.linalg.eigvals(esn.w_res)))
    assert radius == pytest.approx(0.9)
    assert np.count_nonzero(esn.readout_cols < esn.n_units) == 15  # 15 % reservoir-to-output


@pytest.mark.parametrize("activation", ["sigmoid", "tanh"])
def test_echo_state_property_perturbation_fades(activation: str) -> None:
    a = EchoStateQ(3, 2, activation=activation, seed=7)  # type: ignore[arg-type]
    b = EchoStateQ(3, 2, activation=activation, seed=7)  # type: ignore[arg-type]
    b.memory = np.random.default_rng(0).uniform(-1, 1, size=b.n_units)  # a different initial state
    inputs = np.random.default_rng(1).uniform(0, 1, size=(200, 5))
    gaps = []
    for u in inputs:
        gaps.append(np.linalg.norm(a.step(u) - b.step(u)))
    assert gaps[0] > 1e-2
    assert gaps[-1] < 1e-8 * gaps[0]
    assert all(later <= earlier + 1e-12 for earlier, later in itertools.pairwise(gaps[:51]))


def test_spectral_radius_must_be_below_one() -> None:
    with pytest.raises(ValueError, match="spectral radius"):
        EchoStateQ(2, 2, spectral_radius=1.2)


def drive(esn: EchoStateQ, n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Design rows of n decisions with 4 candidates each; the first candidate is chosen."""
    rng = np.random.default_rng(seed)
    rows, states, actions = [], [], []
    for _ in range(n):
        s = rng.uniform(0, 1, esn.state_dim)
        acts = rng.uniform(0, 1, (4, esn.action_dim))
        enc = esn.encode(s, acts)
        rows.append(enc[0])
        states.append(s)
        actions.append(acts)
        esn.advance(enc[0])
    return np.array(rows), np.array(states), np.array(actions)


def test_readout_recovers_known_linear_target() -> None:
    esn = EchoStateQ(3, 2, ridge_alpha=1e-9, seed=3)
    rows, _, _ = drive(esn, 2000, seed=4)
    true_w = np.zeros(esn.design_dim)
    true_w[esn.readout_cols] = np.random.default_rng(5).normal(size=esn.readout_cols.size)
    targets: np.ndarray = rows @ true_w
    esn.fit(rows, targets)
    np.testing.assert_allclose(esn.readout, true_w, atol=1e-4)
    # Same answer through a cached Gram matrix.
    other = EchoStateQ(3, 2, ridge_alpha=1e-9, seed=3)
    other.fit(rows, targets, gram=rows.T @ rows)
    np.testing.assert_allclose(other.readout, esn.readout, atol=1e-8)


def test_fast_scores_match_design_rows() -> None:
    esn = EchoStateQ(4, 3, seed=11)
    rows, _, _ = drive(esn, 300, seed=12)
    esn.fit(rows, np.random.default_rng(13).normal(size=(rows.shape[0],)))
    state = np.full(4, 0.3)
    actions = np.random.default_rng(14).uniform(0, 1, (1000, 3))
    np.testing.assert_allclose(esn.scores(state, actions), esn.predict(esn.encode(state, actions)), atol=1e-10)
    # Scoring does not move the memory; advancing does.
    before = esn.memory.copy()
    esn.scores(state, actions)
    np.testing.assert_array_equal(esn.memory, before)


def test_ffnn_learns_a_smooth_target() -> None:
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, (2000, 3))
    y = np.sin(2 * x[:, 0]) + 0.5 * x[:, 1] * x[:, 2]
    net = FeedForwardQ(1, 2, hidden=(32,), epochs=60, learning_rate=5e-3, max_steps=None, seed=1)
    before = float(np.mean((net.predict(x) - y) ** 2))
    net.fit(x, y)
    after = float(np.mean((net.predict(x) - y) ** 2))
    assert after < 0.02 < before


@pytest.mark.parametrize(("max_steps", "steps"), [(None, 60 * 8), (50, 50), (10_000, 60 * 8)])
def test_ffnn_refit_takes_at_most_max_steps(max_steps: int | None, steps: int) -> None:
    """2,000 rows in batches of 256 are 8 steps an epoch; the cap bounds a re-fit whatever the memory."""
    x = np.random.default_rng(3).uniform(-1, 1, (2000, 3))
    net = FeedForwardQ(1, 2, epochs=60, max_steps=max_steps, seed=1)
    net.fit(x, x.sum(axis=1))
    assert net._t == steps
    again = FeedForwardQ.from_arrays(*net.to_arrays())
    assert again.max_steps == max_steps
    with pytest.raises(ValueError, match="max_steps"):
        FeedForwardQ(1, 2, max_steps=0)


def test_a_table_too_large_to_count_in_int64_is_refused_not_left_empty() -> None:
    # 2 bins on 64 columns: 2 ** 64 cells, which an int64 product wraps to 0 (an empty table, then IndexError).
    with pytest.raises(ValueError, match=r"table: more than 10\^19 cells \(64 binned input columns\) exceed the limit"):
        TableQ(60, 4, edges=[[0.5]] * 64)


def test_table_cells_take_the_mean_target() -> None:
    table = TableQ(1, 1, edges=[[0.5, 1.5], [0.5]], initial=-1.0)
    rows = np.array([[0.0, 0.0], [0.0, 0.0], [2.0, 1.0]])
    table.fit(rows, np.array([1.0, 3.0, 5.0]))
    np.testing.assert_allclose(table.predict(np.array([[0.0, 0.0], [2.0, 1.0], [1.0, 0.0]])), [2.0, 5.0, -1.0])
    np.testing.assert_allclose(table.scores(np.array([2.0]), np.array([[1.0], [0.0]])), [5.0, -1.0])


def make_models() -> list[QFunction]:
    esn = EchoStateQ(3, 2, seed=21)
    rows, _, _ = drive(esn, 200, seed=22)
    esn.fit(rows, np.random.default_rng(23).normal(size=(200,)))
    net = FeedForwardQ(3, 2, epochs=2, seed=24)
    x = np.random.default_rng(25).uniform(0, 1, (100, 5))
    net.fit(x, x.sum(axis=1))
    table = TableQ(3, 2, edges=[[0.5]] * 5)
    table.fit(x, x[:, 0])
    return [esn, net, table]


@pytest.mark.parametrize("index", [0, 1, 2])
def test_save_load_round_trip_gives_identical_scores(tmp_path: Path, index: int) -> None:
    model = make_models()[index]
    path = tmp_path / f"{model.kind}.npz"
    model.save(path)
    loaded = load_qfunction(path)
    assert type(loaded) is type(model)
    state = np.array([0.2, 0.7, 0.1])
    actions = np.random.default_rng(30).uniform(0, 1, (50, 2))
    np.testing.assert_array_equal(loaded.scores(state, actions), model.scores(state, actions))
    assert not list(tmp_path.glob(".*.tmp"))  # the temporary file was renamed away


def test_bad_checkpoints_give_one_line_errors(tmp_path: Path) -> None:
    path = tmp_path / "m.npz"
    save_checkpoint(path, {"kind": "esn"}, {"x": np.zeros(2)})
    meta, _ = read_checkpoint(path)
    assert meta["format_version"] == 1
    np.savez(path, __meta__=np.array(json.dumps({"format_version": 99, "kind": "esn"})))
    with pytest.raises(ValueError, match=r"m\.npz: format_version 99 is not supported"):
        load_qfunction(path)
    save_checkpoint(path, {"kind": "esn", "model": {"state_dim": 1}}, {})
    with pytest.raises(ValueError, match=r"m\.npz: missing key 'action_dim' in esn model"):
        load_qfunction(path)
    path.write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="not a readable rlsched checkpoint"):
        load_qfunction(path)
