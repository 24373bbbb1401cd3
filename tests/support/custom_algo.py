"""An algorithm of a user's own, named by import path
(``tests.support.custom_algo:COUNTING_DQN``)."""

from __future__ import annotations

from dataclasses import dataclass

from algos.dqn.config import DQNConfig
from algos.dqn.policy import DQN
from algos.registry import AlgoSpec


@dataclass
class CountingDQNConfig(DQNConfig):
    batch_size: int = 8


COUNTING_DQN = AlgoSpec("CountingDQN", CountingDQNConfig, DQN)
