"""The rewards a learner learns from, apart from the score that episodes report.

Reward clipping is a learning device (Mnih et al. 2015: one learning rate across Atari
games whose scores differ by orders of magnitude), not part of the task. It is therefore
a function the worker applies to the rewards it stores, not an env wrapper: episode
returns, evaluations and collected trajectories keep the real score.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def learning_rewards(rewards: np.ndarray, env_cfg: Any) -> np.ndarray:
    """``rewards`` clipped to [-1, 1] when ``env_cfg.clip_rewards`` (Atari's integer rewards
    become their sign); the same array, untouched, otherwise."""
    if not env_cfg.clip_rewards:
        return rewards
    return np.clip(rewards, -1.0, 1.0).astype(rewards.dtype, copy=False)
