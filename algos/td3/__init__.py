"""TD3 for bounded continuous action spaces."""

from algos.registry import register_algorithm
from algos.td3.config import TD3Config

register_algorithm("TD3", TD3Config, "algos.td3.policy:TD3")
