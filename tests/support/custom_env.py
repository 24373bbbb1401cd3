"""A tiny user-defined env, loaded by import path in the registry tests; the other toy envs
of the tests (``registering_env``, ``extra_envs``) are this one with other rewards and
observations."""

from __future__ import annotations

import gymnasium as gym
import numpy as np


class CountingEnv(gym.Env):
    """Reward 1 for action 1; the episode ends after ``goal`` steps. The observation is the
    share of the episode done; a variant changes :meth:`reward` or :meth:`observe`."""

    def __init__(self, goal: int = 5) -> None:
        self.goal = goal
        self.observation_space = gym.spaces.Box(0.0, 1.0, shape=(1,), dtype=np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self.t = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self.observe(), {}

    def step(self, action):
        reward = self.reward(action)
        self.t += 1
        return self.observe(), reward, self.t >= self.goal, False, {}

    def reward(self, action) -> float:
        """The reward of ``action`` at step ``self.t`` (0 for the first step)."""
        return float(action == 1)

    def observe(self) -> np.ndarray:
        return np.array([self.t / self.goal], dtype=np.float32)
