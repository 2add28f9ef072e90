"""Learners: batch SARSA (P-grid) and ESN fitted-Q iteration (P-fqi), over a replay memory."""

from rlsched.core.learners.base import BatchLearner
from rlsched.core.learners.fqi import FittedQLearner
from rlsched.core.learners.replay import ReplayMemory
from rlsched.core.learners.sarsa import SarsaLearner

__all__ = ["BatchLearner", "FittedQLearner", "ReplayMemory", "SarsaLearner"]
