"""Envs whose observations are badly scaled, for the normalization tests: ``module:Class`` ids."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

SCALE = 1000.0


class ScaledPendulum(gym.Env):
    """Pendulum-v1 with every observation multiplied by 1000 (same dynamics, same rewards):
    a policy that reads raw inputs saturates; one on normalized inputs learns as usual."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 30}

    def __init__(self, render_mode: str | None = None) -> None:
        self.inner = gym.make("Pendulum-v1", render_mode=render_mode).unwrapped
        high = self.inner.observation_space.high * SCALE
        self.observation_space = gym.spaces.Box(-high, high, dtype=np.float32)
        self.action_space = self.inner.action_space
        self.render_mode = render_mode

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> Any:
        obs, info = self.inner.reset(seed=seed, options=options)
        return (obs * SCALE).astype(np.float32), info

    def step(self, action: Any) -> Any:
        obs, reward, terminated, truncated, info = self.inner.step(action)
        return (obs * SCALE).astype(np.float32), reward, terminated, truncated, info

    def render(self) -> Any:
        return self.inner.render()

    def close(self) -> None:
        self.inner.close()
