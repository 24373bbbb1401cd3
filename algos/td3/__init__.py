"""TD3 for bounded continuous action spaces."""

from algos.registry import register_algorithm
from algos.td3.config import TD3Config
from algos.td3.policy import TD3Policy

register_algorithm("TD3", TD3Config, TD3Policy)
