"""CQL defaults: SAC's, plus the weight of the conservative term and its sampled actions."""

from __future__ import annotations

from dataclasses import dataclass

from algos.base_config import in_range
from algos.sac.config import SACConfig


@dataclass
class CQLConfig(SACConfig):
    cql_alpha: float = 5.0  # weight of the conservative term on each critic; 0: SAC's loss
    n_action_samples: int = 10  # actions sampled per state from each of uniform, pi(s), pi(s')
    learn_start: int = 0  # offline: the replay holds the whole dataset from the start
    random_steps: int = 0  # env steps acting uniformly at random (when acting online)

    def check(self) -> None:
        super().check()
        in_range(self, "cql_alpha", 0)
        in_range(self, "n_action_samples", 1)
