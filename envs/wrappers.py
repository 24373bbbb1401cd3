"""Wrappers selectable by name in ``env_cfg.wrappers``: gymnasium's own, configured from env_cfg.

For Atari, ``[atari_preprocessing, frame_stack]`` is the standard pipeline (Machado et al.
2018, as in SB3 and CleanRL): no-op resets, frame skip with max-pooling, grayscale 84x84
frames kept as uint8 (the network scales them), then the last ``frame_stack`` frames
stacked on the first axis, so observations come out as ``[stack, 84, 84]`` uint8, the
``[C, H, W]`` layout conv2d layers take.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

from envs.errors import EnvSpecError
from envs.latency import StepLatency, step_latency_of
from envs.memory import mask_velocity


def _atari_preprocessing(env: gym.Env, env_cfg: Any) -> gym.Env:
    """gymnasium's AtariPreprocessing; frames stay uint8 (scale_obs off) for a compact replay."""
    if not hasattr(env.unwrapped, "ale"):
        raise EnvSpecError(
            f"env_cfg.wrappers: atari_preprocessing needs an Atari env (an ALE/... id), "
            f"not env_cfg.id={env_cfg.id!r}"
        )
    return gym.wrappers.AtariPreprocessing(
        env,
        noop_max=int(env_cfg.atari_noop_max),
        frame_skip=int(env_cfg.atari_frame_skip),
        screen_size=int(env_cfg.atari_screen_size),
        terminal_on_life_loss=bool(env_cfg.atari_terminal_on_life_loss),
        grayscale_obs=bool(env_cfg.atari_grayscale),
        scale_obs=False,
    )


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


def _step_latency(env: gym.Env, env_cfg: Any) -> gym.Env:
    """A slow env for measurements: every step takes ``env_cfg.step_latency_s`` more."""
    return StepLatency(env, step_latency_of(env_cfg, None))


WRAPPERS: dict[str, Callable[[gym.Env, Any], gym.Env]] = {
    "atari_preprocessing": _atari_preprocessing,
    "grayscale": _grayscale,
    "resize": _resize,
    "frame_stack": _frame_stack,
    "channels_first": _channels_first,
    "flatten": _flatten,
    "step_latency": _step_latency,
    "mask_velocity": mask_velocity,
}
# Wrappers that read the raw env (AtariPreprocessing grabs frames from the emulator itself,
# ignoring observations from any wrapper below it), so they must be listed first.
FIRST_WRAPPERS = ("atari_preprocessing",)
