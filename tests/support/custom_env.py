"""A tiny user-defined env, loaded by import path in the registry tests."""

from __future__ import annotations

import gymnasium as gym
import numpy as np


class CountingEnv(gym.Env):
    """Reward 1 for action 1; the episode ends after ``goal`` steps."""

    def __init__(self, goal: int = 5) -> None:
        self.goal = goal
        self.observation_space = gym.spaces.Box(0.0, 1.0, shape=(1,), dtype=np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self.t = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(1, dtype=np.float32), {}

    def step(self, action):
        self.t += 1
        obs = np.array([self.t / self.goal], dtype=np.float32)
        return obs, float(action == 1), self.t >= self.goal, False, {}
