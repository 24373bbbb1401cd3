"""Test mode's ``general_cfg.random_action_rate``: some of the policy's actions replaced
by uniformly random ones (legal ones, where the observations hold an action mask).

With ``collect_traj`` this records a dataset of a chosen quality from one checkpoint: an
expert's at rate 0, a noisier one's above it. The recorded action is the one the env
received, so the dataset is what happened.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np

from algos.scripted import RandomPolicy


class RandomActions:
    """Replaces each row's action by a random one with probability ``rate``."""

    def __init__(self, obs_space: gym.Space, action_space: gym.Space, rate: float) -> None:
        self.rate = rate
        self.random = RandomPolicy(obs_space, action_space)
        self.rng = np.random.default_rng()

    def seed(self, seed: int | None) -> None:
        self.rng = np.random.default_rng(seed)
        self.random.seed(None if seed is None else seed + 1)

    def mix(self, actions: np.ndarray, obs: np.ndarray) -> np.ndarray:
        """``actions`` (changed in place) with the drawn rows replaced."""
        rows = np.flatnonzero(self.rng.random(len(actions)) < self.rate)
        if len(rows):
            drawn, _ = self.random.act(obs[rows], explore=True, env_steps=0)
            actions[rows] = np.asarray(drawn, dtype=actions.dtype).reshape(actions[rows].shape)
        return actions
