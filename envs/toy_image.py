"""A tiny image env for smoke tests of conv layers: which half of the picture is lit?

Observations are ``(16, 16, 3)`` uint8 images (channels last, like a camera; use the
``channels_first`` wrapper for conv2d layers) with a bright 4x4 patch on the left or the
right half. Action 0 means "left", 1 "right"; a correct guess earns 1. Episodes last
``length`` steps and end by termination.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

SIZE = 16


class ToyImageEnv(gym.Env):
    """Discrete(2) guesses on 16x16 RGB images."""

    metadata = {"render_modes": ["rgb_array"]}

    def __init__(self, length: int = 8, render_mode: str | None = None) -> None:
        self.length = length
        self.render_mode = render_mode
        self.observation_space = gym.spaces.Box(0, 255, (SIZE, SIZE, 3), np.uint8)
        self.action_space = gym.spaces.Discrete(2)
        self.t = 0
        self.side = 0
        self.image = np.zeros((SIZE, SIZE, 3), np.uint8)

    def _draw(self) -> np.ndarray:
        self.side = int(self.np_random.integers(2))
        row = int(self.np_random.integers(0, SIZE - 4))
        col = int(self.np_random.integers(0, SIZE // 2 - 4)) + self.side * SIZE // 2
        image = np.zeros((SIZE, SIZE, 3), np.uint8)
        image[row : row + 4, col : col + 4] = 255
        self.image = image
        return image.copy()

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self.t = 0
        return self._draw(), {}

    def step(self, action: Any):
        reward = float(int(action) == self.side)
        self.t += 1
        return self._draw(), reward, self.t >= self.length, False, {}

    def render(self) -> np.ndarray:
        return self.image.copy()
