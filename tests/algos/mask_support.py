"""Masked Dict observations as the runtime hands them to a policy: packed numpy records of
``{"observation": Box(2), "action_mask": Box(0, 1, (n,), int8)}``."""

from __future__ import annotations

import gymnasium as gym
import numpy as np

from envs.observations import PackedLayout


def masked_space(n_actions: int, width: int | None = None) -> gym.spaces.Dict:
    """The observation space, its mask ``width`` entries wide (``n_actions`` by default)."""
    return gym.spaces.Dict(
        {
            "observation": gym.spaces.Box(-5.0, 5.0, (2,), np.float32),
            "action_mask": gym.spaces.Box(0, 1, (width or n_actions,), np.int8),
        }
    )


def random_masks(rng: np.random.Generator, shape: tuple[int, ...], n: int) -> np.ndarray:
    """Random int8 masks ``[*shape, n]``, each with at least one legal action."""
    masks = (rng.random((*shape, n)) < 0.4).astype(np.int8)
    flat = masks.reshape(-1, n)
    empty = ~flat.any(axis=1)
    flat[empty, rng.integers(0, n, int(empty.sum()))] = 1
    return flat.reshape(*shape, n)


def packed(space: gym.spaces.Dict, features: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """Features ``[*lead, 2]`` and masks ``[*lead, n]`` as packed observations ``[*lead]``."""
    lead = features.shape[:-1]
    layout = PackedLayout(space)
    rows = layout.pack(
        {"observation": features.reshape(-1, 2), "action_mask": masks.reshape(-1, masks.shape[-1])},
        int(np.prod(lead)),
    )
    return rows.reshape(lead)
