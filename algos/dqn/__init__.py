"""The DQN family: DQN, DoubleDQN, DuelingDQN."""

from algos.dqn.config import DoubleDQNConfig, DQNConfig, DuelingDQNConfig
from algos.registry import register_algorithm

register_algorithm("DQN", DQNConfig, "algos.dqn.policy:DQN")
register_algorithm("DoubleDQN", DoubleDQNConfig, "algos.dqn.policy:DQN")
register_algorithm("DuelingDQN", DuelingDQNConfig, "algos.dqn.policy:DQN")
