"""A tiny grayscale-frame env for replay tests: every frame is unique and says which it is.

Frame pixels encode (episode, step), so a stack rebuilt from the wrong frames shows it.
Episodes end after ``length`` steps, alternately by termination and by truncation.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

SIDE = 6


class CountingFramesEnv(gym.Env):
    """Discrete(2); a ``(6, 6)`` uint8 frame per step."""

    def __init__(self, length: int = 5) -> None:
        self.length = length
        self.observation_space = gym.spaces.Box(0, 255, (SIDE, SIDE), np.uint8)
        self.action_space = gym.spaces.Discrete(2)
        self.episode = -1
        self.t = 0

    def _frame(self) -> np.ndarray:
        frame = np.zeros((SIDE, SIDE), np.uint8)
        frame[0, 0], frame[0, 1] = self.episode % 256, self.t
        frame[1:, :] = self.np_random.integers(0, 256, (SIDE - 1, SIDE))
        return frame

    def reset(self, *, seed: int | None = None, options: Any = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.episode += 1
        self.t = 0
        return self._frame(), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        self.t += 1
        end = self.t >= self.length
        terminated = end and self.episode % 2 == 0
        return self._frame(), float(action), terminated, end and not terminated, {}
