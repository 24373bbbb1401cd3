"""A user env module that registers its own gymnasium id on import.

``env_cfg.id=tests.support.registering_env:JoyrlCountdown-v0`` must import this module and
then make the registered id, as ``gymnasium.make`` does; ``...:CountdownEnv`` names the
class itself.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np

from tests.support.custom_env import CountingEnv

ENV_ID = "JoyrlCountdown-v0"


class CountdownEnv(CountingEnv):
    """Reward 1 per step; terminates after ``length`` steps."""

    def __init__(self, length: int = 5) -> None:
        super().__init__(goal=length)
        self.length = length

    def reward(self, action) -> float:
        return 1.0

    def observe(self) -> np.ndarray:
        return np.array([1.0 - self.t / self.length], dtype=np.float32)


if ENV_ID not in gym.registry:
    gym.register(ENV_ID, entry_point=f"{__name__}:CountdownEnv", kwargs={"length": 5})
