"""PPO for Discrete, MultiDiscrete and Box action spaces."""

from algos.ppo.config import PPOConfig
from algos.registry import register_algorithm

register_algorithm("PPO", PPOConfig, "algos.ppo.policy:PPO")
