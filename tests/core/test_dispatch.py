"""The Q-learning dispatcher of the decision core (Tong Algorithm 1, Eqs. 6-7)."""

import numpy as np
import pytest

from rlsched.core.dispatch import QLearningDispatcher
from rlsched.sim.dispatch.model import Flow, Units, simulate
from rlsched.sim.dispatch.policies import FeedbackAt, QLearning


def test_update_follows_eq6_with_alpha_from_eq7():
    agent = QLearningDispatcher(2, 2, gamma=0.5, rng=0)
    agent.q[1] = [4.0, 2.0]  # V(t2) = 4
    # First visit: alpha = 1/(1+0) = 1, Q = r + gamma V = 1 + 2 = 3.
    assert agent.learn(0, 1, 1.0, 1) == pytest.approx(3.0)
    # Second visit: alpha = 1/2, Q = 0.5*3 + 0.5*(5 + 2) = 5.
    assert agent.learn(0, 1, 5.0, 1) == pytest.approx(5.0)
    # Third: alpha = 1/3.
    assert agent.learn(0, 1, 2.0, 1) == pytest.approx(2 / 3 * 5.0 + 1 / 3 * (2.0 + 2.0))
    assert agent.visits[0, 1] == 3 and agent.updates == 3


def test_constant_learning_rate_and_negative_reward():
    agent = QLearningDispatcher(1, 2, gamma=0.0, rng=0, learning_rate=0.5, reward="negative")
    agent.dispatch(0, 0)
    agent.dispatch(1, 0)
    unit0 = agent._pending[0].unit
    assert agent.complete(0, 2.0)  # successor known: update now, reward -2
    assert agent.q[0, unit0] == pytest.approx(-1.0)


def test_greedy_without_exploration_and_random_ties():
    agent = QLearningDispatcher(1, 3, epsilon=0.0, rng=1)
    agent.q[0] = [0.1, 0.7, 0.3]
    assert {agent.choose(0) for _ in range(50)} == {1}
    agent.q[0] = [0.0, 0.0, 0.0]
    assert {agent.choose(0) for _ in range(200)} == {0, 1, 2}


def test_exploration_rate_is_epsilon():
    agent = QLearningDispatcher(1, 4, epsilon=0.2, rng=3)
    agent.q[0] = [1.0, 0.0, 0.0, 0.0]
    picks = np.array([agent.choose(0) for _ in range(20000)])
    # Unit 0 is chosen greedily 80 % of the time plus 1/4 of the explorations.
    assert np.mean(picks == 0) == pytest.approx(0.8 + 0.2 / 4, abs=0.015)


def test_update_waits_for_reward_and_successor():
    agent = QLearningDispatcher(2, 2, epsilon=0.0, gamma=0.0, rng=0)
    agent.dispatch(10, 0)
    assert not agent.complete(10, 0.5)  # successor unknown yet
    assert agent.updates == 0
    agent.dispatch(11, 1)  # successor arrives: the update of task 10 happens now
    assert agent.updates == 1
    assert agent.q[0].max() == pytest.approx(2.0)
    assert agent.waiting_updates == 1
    with pytest.raises(KeyError):
        agent.complete(10, 1.0)
    with pytest.raises(ValueError):
        agent.dispatch(11, 0)
    with pytest.raises(ValueError):
        agent.complete(11, 0.0)


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="epsilon"):
        QLearningDispatcher(1, 1, epsilon=1.5)
    with pytest.raises(ValueError, match="gamma"):
        QLearningDispatcher(1, 1, gamma=1.0)
    with pytest.raises(ValueError, match="task type"):
        QLearningDispatcher(2, 2).choose(2)


def test_state_dict_round_trip():
    agent = QLearningDispatcher(2, 3, rng=0, reward="negative")
    agent.learn(1, 2, 0.5, 0)
    clone = QLearningDispatcher.from_state_dict(agent.state_dict(), rng=1)
    np.testing.assert_array_equal(clone.q, agent.q)
    np.testing.assert_array_equal(clone.visits, agent.visits)
    assert clone.reward_kind == "negative" and clone.updates == 1
    with pytest.raises(ValueError, match="missing key"):
        QLearningDispatcher.from_state_dict({"n_types": 2})


def test_learner_converges_to_the_fast_unit():
    """One type, unit 0 ten times faster than unit 1, light load: the greedy choice is unit 0."""
    rng = np.random.default_rng(5)
    n = 3000
    arrival = np.cumsum(rng.exponential(1 / 2.0, n))  # 2 tasks/h
    flow = Flow(arrival, np.zeros(n, dtype=np.int64), rng.exponential(1.0, n))
    units = Units(np.array([[20.0, 2.0]]))
    for reward in ("inverse", "negative"):
        policy = QLearning(1, 2, np.random.default_rng(7), reward=reward)
        result = simulate(flow, units, policy)
        assert policy.agent.greedy(0) == 0
        assert policy.agent.q[0, 0] > policy.agent.q[0, 1]
        # After learning, about 80 % + 10 % of tasks go to unit 0.
        assert np.mean(result.unit[1000:] == 0) == pytest.approx(0.9, abs=0.04)


def test_known_reward_is_learned_before_the_next_choice():
    """Alg. 1 learns from allocation k (step 3) before choosing for task k+1 (goto 2)."""
    for seed in range(40):
        agent = QLearningDispatcher(1, 2, epsilon=0.0, gamma=0.0, rng=seed, reward="negative")
        first = agent.dispatch(0, 0)
        agent.complete(0, 5.0)  # reward -5 known before task 1 arrives
        # Task 1's arrival supplies the next state; the update (Q = -5 on `first`) must come
        # first, so the greedy choice is the other, still-zero unit.  Choosing before the
        # update would pick `first` on half of the seeds (all-zero tie).
        assert agent.dispatch(1, 0) == 1 - first
        assert agent.q[0, first] == pytest.approx(-5.0)


def test_dispatch_time_feedback_learns_from_the_realised_response():
    """feedback_at="dispatch": every placed task is learned from before the next one arrives."""
    rng = np.random.default_rng(2)
    n = 200
    flow = Flow(np.cumsum(rng.exponential(0.5, n)), np.zeros(n, dtype=np.int64), rng.exponential(1.0, n))
    units = Units(np.array([[3.0, 1.0]]))
    timings: tuple[tuple[FeedbackAt, str], ...] = (("dispatch", "qlearning"), ("completion", "qlearning-delayed"))
    for feedback_at, name in timings:
        policy = QLearning(1, 2, np.random.default_rng(0), feedback_at=feedback_at)
        assert policy.name == name
        result = simulate(flow, units, policy)
        learned = policy.agent.updates
        if feedback_at == "dispatch":
            # All but the last task (whose successor never comes) are learned from, and in
            # arrival order, with reward 1/response of the realised schedule.
            assert learned == n - 1
            replay = QLearningDispatcher(1, 2, rng=0)
            for k in range(n - 1):
                replay.learn(0, int(result.unit[k]), 1.0 / float(result.response_h[k]), 0)
            np.testing.assert_allclose(policy.agent.q, replay.q)
        else:
            assert learned == n - 1  # all complete by the end of the run, too
    with pytest.raises(ValueError, match="feedback_at"):
        QLearning(1, 2, np.random.default_rng(0), feedback_at="never")  # type: ignore[arg-type]
