"""Envs with the observation spaces users bring: unsupported ones (refused before anything
starts) and a Dict with an image beside a vector (the conv layers go to the image key)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from envs.toy_image import ToyImageEnv


class _FixedObservationEnv(gym.Env):
    """One-step episodes of a fixed observation in ``observation_space``."""

    observation_space: gym.Space
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        return self.observation_space.sample(), {}

    def step(self, action: Any):
        return self.observation_space.sample(), 0.0, True, False, {}


class TextObservationEnv(_FixedObservationEnv):
    observation_space = gym.spaces.Text(8)


class GraphObservationEnv(_FixedObservationEnv):
    observation_space = gym.spaces.Graph(gym.spaces.Box(0, 1, (3,)), gym.spaces.Discrete(2))


class SequenceObservationEnv(_FixedObservationEnv):
    observation_space = gym.spaces.Sequence(gym.spaces.Box(0, 1, (2,)))


class DictWithTextEnv(_FixedObservationEnv):
    observation_space = gym.spaces.Dict(
        {"pos": gym.spaces.Box(0, 1, (2,)), "note": gym.spaces.Dict({"text": gym.spaces.Text(4)})}
    )


class ImageDictEnv(gym.Env):
    """:class:`ToyImageEnv`'s guess, seen as ``{"image": (16, 16, 3) uint8, "time": Box(1)}``."""

    def __init__(self, length: int = 8) -> None:
        self.inner = ToyImageEnv(length)
        self.observation_space = gym.spaces.Dict(
            {"image": self.inner.observation_space, "time": gym.spaces.Box(0, 1, (1,), np.float32)}
        )
        self.action_space = self.inner.action_space

    def _obs(self, image: np.ndarray) -> dict[str, np.ndarray]:
        return {"image": image, "time": np.array([self.inner.t / self.inner.length], np.float32)}

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        image, info = self.inner.reset(seed=seed)
        return self._obs(image), info

    def step(self, action: Any):
        image, reward, terminated, truncated, info = self.inner.step(action)
        return self._obs(image), reward, terminated, truncated, info


class MaskWiderThanActionsEnv(_FixedObservationEnv):
    """A PettingZoo-style Dict observation whose action mask names 3 actions of 2."""

    observation_space = gym.spaces.Dict(
        {
            "observation": gym.spaces.Box(0.0, 1.0, (2,), np.float32),
            "action_mask": gym.spaces.Box(0, 1, (3,), np.int8),
        }
    )
