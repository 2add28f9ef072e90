"""SARSA and fitted-Q learners on a small MDP whose best policy is known; replay memory."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rlsched.core.approximators import EchoStateQ, TableQ
from rlsched.core.learners import BatchLearner, FittedQLearner, ReplayMemory, SarsaLearner

# A chain of 4 states.  Action 1 ("wait for it") moves right and pays 1 only when taken in
# the last state (then back to state 0); action 0 ("grab") pays 0.1 at once and goes back
# to state 0.  With γ = 0.8 always-1 is worth 0.8³/(1 − 0.8⁴) ≈ 0.87 from state 0, always-0
# only 0.1/(1 − 0.8) = 0.5: the best policy is action 1 everywhere, although a myopic
# policy grabs.
N_STATES = 4
#: Ridge penalty of the ESN on the chain (see test_sarsa_esn_converges_to_the_best_policy).
CHAIN_RIDGE = 1e-2


def step(s: int, a: int) -> tuple[float, int]:
    if a == 0:
        return 0.1, 0
    if s == N_STATES - 1:
        return 1.0, 0
    return 0.0, s + 1


def optimal_q(gamma: float) -> np.ndarray:
    q = np.zeros((N_STATES, 2))
    for _ in range(500):
        v = q.max(axis=1)
        for s in range(N_STATES):
            for a in (0, 1):
                r, s2 = step(s, a)
                q[s, a] = r + gamma * v[s2]
    return q


ACTIONS = np.array([[0.0], [1.0]])


def run_chain(learner: BatchLearner, steps: int, delay: int, state_fn) -> None:
    """Drive the learner on the chain; each reward arrives ``delay`` decisions later."""
    s = 0
    owed: list[tuple[int, float]] = []
    for _ in range(steps):
        a, decision = learner.act(state_fn(s), ACTIONS)
        r, s = step(s, a)
        owed.append((decision, r))
        if len(owed) > delay:
            learner.reward(*owed.pop(0))
        learner.maybe_refit()


def table_state(s: int) -> np.ndarray:
    return np.array([float(s)])


def greedy_policy(learner: BatchLearner, state_fn) -> list[int]:
    return [int(np.argmax(learner.q.scores(state_fn(s), ACTIONS))) for s in range(N_STATES)]


def test_sarsa_table_converges_to_the_best_policy_with_delayed_rewards() -> None:
    # Optimistic initial values (the 1/(1 − γ) bound on any return) make the greedy policy
    # try every action: ε = 0.1 alone would almost never walk the whole chain.
    q = TableQ(1, 1, edges=[[0.5, 1.5, 2.5], [0.5]], initial=5.0)
    learner = SarsaLearner(q, gamma=0.8, epsilon=0.1, eta=0.2, refit_every=5, seed=0)
    run_chain(learner, 4000, delay=3, state_fn=table_state)
    assert greedy_policy(learner, table_state) == [1, 1, 1, 1]
    # SARSA learns the ε-greedy policy's values: close to, and below, the optimal ones.
    learned = np.array([learner.q.scores(table_state(s), ACTIONS) for s in range(N_STATES)])
    best = optimal_q(0.8)
    assert np.all(learned[:, 1] <= best[:, 1] + 0.05)
    np.testing.assert_allclose(learned[:, 1], best[:, 1], atol=0.15)


def one_hot_state(s: int) -> np.ndarray:
    out = np.zeros(N_STATES)
    out[s] = 1.0
    return out


def test_sarsa_esn_converges_to_the_best_policy() -> None:
    # A noiseless 4-state chain whose Q-values differ by ~0.1: the light regulariser of a
    # small exact problem, not the default chosen for the noisy scheduling MDP (esn.py).
    q = EchoStateQ(N_STATES, 1, readout_fraction=0.15, ridge_alpha=CHAIN_RIDGE, seed=2)
    learner = SarsaLearner(q, epsilon=0.1, refit_every=10, seed=3)
    run_chain(learner, 3000, delay=2, state_fn=one_hot_state)
    assert greedy_policy(learner, one_hot_state) == [1, 1, 1, 1]


def test_fitted_q_esn_finds_the_best_policy() -> None:
    q = EchoStateQ(N_STATES, 1, ridge_alpha=CHAIN_RIDGE, seed=4)
    learner = FittedQLearner(q, epsilon=0.3, iterations=5, refit_every=50, n_candidates=2, seed=5)
    run_chain(learner, 2000, delay=2, state_fn=one_hot_state)
    learner.refit(sweeps=30)
    assert greedy_policy(learner, one_hot_state) == [1, 1, 1, 1]


def test_fitted_q_table_matches_value_iteration() -> None:
    q = TableQ(1, 1, edges=[[0.5, 1.5, 2.5], [0.5]])
    learner = FittedQLearner(q, epsilon=0.5, refit_every=100, n_candidates=2, seed=6)
    run_chain(learner, 3000, delay=0, state_fn=table_state)
    learner.refit(sweeps=100)
    learned = np.array([learner.q.scores(table_state(s), ACTIONS) for s in range(N_STATES)])
    np.testing.assert_allclose(learned, optimal_q(0.8), atol=1e-3)  # off-policy: the optimal Q


def test_same_seed_same_decisions() -> None:
    def trace(seed: int) -> list[int]:
        q = EchoStateQ(N_STATES, 1, seed=seed)
        learner = SarsaLearner(q, epsilon=0.2, seed=seed)
        out = []
        s = 0
        for _ in range(300):
            a, d = learner.act(one_hot_state(s), ACTIONS)
            r, s = step(s, a)
            learner.reward(d, r)
            learner.maybe_refit()
            out.append(a)
        return out

    assert trace(1) == trace(1)
    assert trace(1) != trace(2)


def test_replay_memory_ready_gram_and_round_trip(tmp_path: Path) -> None:
    memory = ReplayMemory(design_dim=3, n_candidates=2)
    rows = np.arange(12, dtype=float).reshape(4, 3)
    ids = [memory.append(r, candidates=np.vstack([r, r + 1])) for r in rows]
    assert ids == [0, 1, 2, 3]
    memory.set_reward(2, 0.5)
    memory.set_reward(3, 0.7)  # the last decision has no successor yet: not ready
    np.testing.assert_array_equal(memory.ready(), [False, False, True, False])
    assert memory.sync_gram() == 1
    np.testing.assert_allclose(memory.gram, np.outer(rows[2], rows[2]))
    with pytest.raises(KeyError):
        memory.set_reward(9, 1.0)
    path = tmp_path / "replay.npz"
    memory.save(path)
    loaded = ReplayMemory.load(path)
    np.testing.assert_array_equal(loaded.rows, memory.rows)
    np.testing.assert_array_equal(loaded.rewards, memory.rewards)
    np.testing.assert_allclose(loaded.gram, memory.gram)
    np.testing.assert_array_equal(loaded.candidate_counts, [2, 2, 2, 2])


def test_replay_memory_drops_oldest_and_keeps_ids() -> None:
    memory = ReplayMemory(design_dim=2, max_transitions=10)
    for i in range(25):
        memory.append(np.array([float(i), 1.0]))
        if i:
            memory.set_reward(i - 1, 1.0)
    assert len(memory) <= 10
    assert memory.offset + len(memory) == 25
    assert memory.set_reward(0, 1.0) is False  # dropped long ago
    memory.sync_gram()
    ready_rows = memory.rows[memory.ready()]
    np.testing.assert_allclose(memory.gram, ready_rows.T @ ready_rows)


@pytest.mark.parametrize("bound", [None, 6])
def test_the_pending_ready_count_follows_every_update(bound: int | None) -> None:
    # Kept incrementally (the learner asks at every decision); it must equal the count over the
    # whole memory after appends, rewards in any order (also re-set or cleared), syncs and drops.
    rng = np.random.default_rng(bound or 0)
    memory = ReplayMemory(3, max_transitions=bound)
    ids: list[int] = []
    for _ in range(400):
        op = rng.integers(0, 10)
        if op < 4 or not ids:
            ids.append(memory.append(rng.random(3)))
        elif op < 8:
            reward = np.nan if rng.random() < 0.1 else float(rng.random())
            memory.set_reward(int(rng.choice(ids)), reward)
        elif op < 9:
            memory.sync_gram()
        assert memory.pending_ready() == int((memory.ready() & ~memory._in_gram[: memory.size]).sum())


def test_learner_checkpoint_round_trip(tmp_path: Path) -> None:
    q = EchoStateQ(N_STATES, 1, seed=8)
    learner = SarsaLearner(q, epsilon=0.2, seed=9)
    run_chain(learner, 200, delay=1, state_fn=one_hot_state)
    path = tmp_path / "learner.npz"
    learner.save(path)
    other = SarsaLearner(EchoStateQ(N_STATES, 1, seed=99), seed=0)
    other.load_state(path)
    for s in range(N_STATES):
        np.testing.assert_array_equal(
            other.q.scores(one_hot_state(s), ACTIONS), learner.q.scores(one_hot_state(s), ACTIONS)
        )
    assert other.epsilon == 0.2
    assert [other.select(one_hot_state(0), ACTIONS) for _ in range(20)] == [
        learner.select(one_hot_state(0), ACTIONS) for _ in range(20)
    ]
