"""DiscreteCQL defaults: DQN's, learning from a full replay, plus the conservative weight."""

from __future__ import annotations

from dataclasses import dataclass

from algos.base_config import in_range
from algos.dqn.config import DQNConfig


@dataclass
class DiscreteCQLConfig(DQNConfig):
    cql_alpha: float = 1.0  # weight of mean(logsumexp_a Q(s, a) - Q(s, a_data)); 0 is DQN
    batch_size: int = 256  # transitions per update
    learn_start: int = 0  # offline: the replay holds the whole dataset from the start
    n_step: int = 3  # n-step returns: values reach back through the fixed data sooner
    target_update: int = 100  # updates between target-network syncs
    epsilon_start: float = 0.01  # acting (evaluation, any workers) is nearly greedy
    epsilon_end: float = 0.01  # exploration floor

    def check(self) -> None:
        super().check()
        in_range(self, "cql_alpha", 0)
