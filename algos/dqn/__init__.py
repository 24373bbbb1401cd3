"""The DQN family: DQN, DoubleDQN, DuelingDQN; JoyRL's DQN_new runs as DQN."""

from algos.dqn.config import DoubleDQNConfig, DQNConfig, DuelingDQNConfig
from algos.registry import register_algorithm, register_alias

register_algorithm("DQN", DQNConfig, "algos.dqn.policy:DQN")
register_algorithm("DoubleDQN", DoubleDQNConfig, "algos.dqn.policy:DQN")
register_algorithm("DuelingDQN", DuelingDQNConfig, "algos.dqn.policy:DQN")
register_alias("DQN_new", "DQN", "JoyRL's name for its DQN")
