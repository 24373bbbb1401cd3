"""The DQN family: DQN, DoubleDQN, DuelingDQN."""

from algos.dqn.config import DoubleDQNConfig, DQNConfig, DuelingDQNConfig
from algos.dqn.policy import DQNPolicy
from algos.registry import register_algorithm

register_algorithm("DQN", DQNConfig, DQNPolicy)
register_algorithm("DoubleDQN", DoubleDQNConfig, DQNPolicy)
register_algorithm("DuelingDQN", DuelingDQNConfig, DQNPolicy)
