"""Algorithms: one folder each (config + policy), registered by name on import."""

from algos import dqn  # noqa: F401  (registers DQN, DoubleDQN, DuelingDQN)
from algos.registry import ALGORITHMS, AlgoSpec, get_algorithm, register_algorithm

__all__ = ["ALGORITHMS", "AlgoSpec", "get_algorithm", "register_algorithm"]
