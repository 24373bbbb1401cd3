"""SAC for bounded continuous action spaces."""

from algos.registry import register_algorithm
from algos.sac.config import SACConfig

register_algorithm("SAC", SACConfig, "algos.sac.policy:SAC")
