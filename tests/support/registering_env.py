"""A user env module that registers its own gymnasium id on import.

``env_cfg.id=tests.support.registering_env:JoyrlCountdown-v0`` must import this module and
then make the registered id, as ``gymnasium.make`` does; ``...:CountdownEnv`` names the
class itself.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np

ENV_ID = "JoyrlCountdown-v0"


class CountdownEnv(gym.Env):
    """Reward 1 per step; terminates after ``length`` steps."""

    def __init__(self, length: int = 5) -> None:
        self.length = length
        self.observation_space = gym.spaces.Box(0.0, 1.0, shape=(1,), dtype=np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self.t = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.ones(1, dtype=np.float32), {}

    def step(self, action):
        self.t += 1
        obs = np.array([1.0 - self.t / self.length], dtype=np.float32)
        return obs, 1.0, self.t >= self.length, False, {}


if ENV_ID not in gym.registry:
    gym.register(ENV_ID, entry_point=f"{__name__}:CountdownEnv", kwargs={"length": 5})
