"""Action masks: the legal actions a Dict observation's ``"action_mask"`` names, applied to
acting, targets and evaluation of the discrete algorithms.

A mask is bool ``[*lead, n]`` (:meth:`algos.observations.ObservationInput.action_mask`);
its rows always hold a legal action (a row of zeros reads as all legal). Logits of illegal
actions become :data:`MASKED_LOGIT`, finite so that entropies and log-probabilities stay
free of nan (``0 * log 0``) while the probability underflows to exactly 0.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import torch

from algos.observations import ACTION_MASK, action_mask_space

MASKED_LOGIT = -1e8


def check_action_mask(obs_space: gym.Space, action_space: gym.Space) -> None:
    """Raise a one-line ValueError when the observation's mask cannot fit the actions."""
    mask_space = action_mask_space(obs_space)
    if mask_space is None:
        return
    if not isinstance(action_space, gym.spaces.Discrete):
        raise ValueError(
            f"the observation holds an {ACTION_MASK!r}, but masks apply to a Discrete action "
            f"space only; the env's action space is {action_space}"
        )
    width = int(np.prod(mask_space.shape or ()))
    if width != int(action_space.n):
        raise ValueError(
            f"the observation's {ACTION_MASK!r} has {width} entries but the action space "
            f"{action_space} has {int(action_space.n)} actions"
        )


def _legal(mask: torch.Tensor) -> torch.Tensor:
    """``mask`` with rows of no legal action made all legal."""
    mask = mask.bool()
    return mask | ~mask.any(dim=-1, keepdim=True)


def masked_logits(logits: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """``logits`` with illegal actions' set to :data:`MASKED_LOGIT` (unchanged without a mask)."""
    if mask is None:
        return logits
    return logits.masked_fill(~_legal(mask), MASKED_LOGIT)


def masked_argmax(q: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """The best legal action of each row of ``q`` ``[*lead, n]``: int64 ``[*lead]``."""
    if mask is None:
        return q.argmax(dim=-1)
    return q.masked_fill(~_legal(mask), float("-inf")).argmax(dim=-1)


def random_legal_actions(mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One action per row of ``mask`` ``[B, n]``, uniform among its legal ones (among all
    when a row has none): int64 ``[B]``."""
    legal = np.asarray(mask).astype(bool)  # a copy
    legal |= ~legal.any(axis=1, keepdims=True)
    counts = legal.sum(axis=1)
    picks = np.minimum((rng.random(len(legal)) * counts).astype(np.int64), counts - 1)
    return np.argmax(np.cumsum(legal, axis=1) > picks[:, None], axis=1).astype(np.int64)
