"""SAC for bounded continuous action spaces."""

from algos.registry import register_algorithm
from algos.sac.config import SACConfig
from algos.sac.policy import SACPolicy

register_algorithm("SAC", SACConfig, SACPolicy)
