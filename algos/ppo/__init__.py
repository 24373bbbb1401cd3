"""PPO for Discrete, MultiDiscrete and Box action spaces."""

from algos.ppo.config import PPOConfig
from algos.ppo.policy import PPOPolicy
from algos.registry import register_algorithm

register_algorithm("PPO", PPOConfig, PPOPolicy)
