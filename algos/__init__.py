"""Algorithms: one folder each (config + policy), registered by name on import."""

from algos import appo, bc, cql, discrete_cql, dqn, iql, ppo, r2d2, sac, td3  # noqa: F401  (each registers its algorithms)
from algos.registry import (
    ALGORITHMS,
    ALIASES,
    AlgoAlias,
    AlgoSpec,
    canonical_name,
    get_algorithm,
    register_algorithm,
    register_alias,
)

__all__ = [
    "ALGORITHMS",
    "ALIASES",
    "AlgoAlias",
    "AlgoSpec",
    "canonical_name",
    "get_algorithm",
    "register_algorithm",
    "register_alias",
]
