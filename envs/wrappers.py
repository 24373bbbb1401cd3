"""Observation wrappers selectable by name in ``env_cfg.wrappers`` (Atari-style preprocessing)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np


def _grayscale(env: gym.Env, env_cfg: Any) -> gym.Env:
    return gym.wrappers.GrayscaleObservation(env, keep_dim=False)


def _resize(env: gym.Env, env_cfg: Any) -> gym.Env:
    height, width = (int(x) for x in env_cfg.resize)
    return gym.wrappers.ResizeObservation(env, (height, width))


def _frame_stack(env: gym.Env, env_cfg: Any) -> gym.Env:
    return gym.wrappers.FrameStackObservation(env, stack_size=int(env_cfg.frame_stack))


def _channels_first(env: gym.Env, env_cfg: Any) -> gym.Env:
    """[H, W, C] images to the [C, H, W] layout that conv2d layers expect."""
    space = env.observation_space
    assert isinstance(space, gym.spaces.Box) and len(space.shape) == 3
    new_space = gym.spaces.Box(
        low=np.moveaxis(space.low, -1, 0), high=np.moveaxis(space.high, -1, 0), dtype=space.dtype
    )
    return gym.wrappers.TransformObservation(env, lambda obs: np.moveaxis(obs, -1, 0), new_space)


def _flatten(env: gym.Env, env_cfg: Any) -> gym.Env:
    return gym.wrappers.FlattenObservation(env)


WRAPPERS: dict[str, Callable[[gym.Env, Any], gym.Env]] = {
    "grayscale": _grayscale,
    "resize": _resize,
    "frame_stack": _frame_stack,
    "channels_first": _channels_first,
    "flatten": _flatten,
}
