"""Envs whose rewards stop being numbers: ``OverflowingRewardEnv`` (every reward infinite:
a learner's TD errors, and so its PER priorities, stop being finite) and ``NanRewardEnv``
(finite rewards, then nan ones: a learner's gradient turns nan)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np


class OverflowingRewardEnv(gym.Env):
    """Discrete(2) on a 2-d observation; every reward is infinite."""

    def __init__(self) -> None:
        self.observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self.t = 0

    def reset(self, *, seed: int | None = None, options: Any = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(2, np.float32), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        self.t += 1
        return np.full(2, 0.1, np.float32), float("inf"), False, self.t >= 20, {}


class NanRewardEnv(OverflowingRewardEnv):
    """As :class:`OverflowingRewardEnv`, with a reward of 1 for the first ``clean_steps``
    steps of the env's life and nan after them."""

    def __init__(self, clean_steps: int = 600) -> None:
        super().__init__()
        self.clean_steps = clean_steps
        self.steps = 0

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        obs, _, terminated, truncated, info = super().step(action)
        self.steps += 1
        reward = 1.0 if self.steps <= self.clean_steps else float("nan")
        return obs, reward, terminated, truncated, info
