"""Algorithms: one folder each (config + policy), registered by name on import."""

from algos import appo, dqn, ppo, sac, td3  # noqa: F401  (each registers its algorithms)
from algos.registry import ALGORITHMS, AlgoSpec, get_algorithm, register_algorithm

__all__ = ["ALGORITHMS", "AlgoSpec", "get_algorithm", "register_algorithm"]
