"""R2D2 keeps to the legal actions of masked observations: greedy and exploring acting
step by step with its memory, and the double-Q bootstrap of its sequence targets, which an
illegal next action's Q value must not change."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

from algos.r2d2.policy import R2D2
from joyrl_ray.batch import (
    ACTIONS,
    MASK,
    MEMORY,
    NEXT_OBS,
    OBS,
    REWARDS,
    TERMINATED,
    TRUNCATED,
    WEIGHTS,
)
from tests.algos.mask_support import masked_space, packed, random_masks
from tests.algos.test_r2d2 import BATCH, BURN_IN, SEQUENCE_LEN, r2d2_cfg

CPU = torch.device("cpu")
N = 5


def make_r2d2(**overrides: object) -> R2D2:
    torch.manual_seed(0)
    algo = R2D2(r2d2_cfg(**overrides), masked_space(N), gym.spaces.Discrete(N), CPU)
    algo.policy.seed(0)
    return algo


def test_greedy_and_exploring_steps_are_always_legal_over_many_random_masks() -> None:
    policy = make_r2d2(epsilon_start=0.5, epsilon_end=0.5).policy
    rng = np.random.default_rng(0)
    for explore in (False, True):
        policy.reset_memory(16)
        for _ in range(40):
            masks = random_masks(rng, (16,), N)
            obs = packed(masked_space(N), rng.normal(size=(16, 2)).astype(np.float32), masks)
            actions, extras = policy.act(obs, explore=explore, env_steps=0)
            assert masks[np.arange(16), actions].all(), (explore, actions)
            assert extras[MEMORY].shape[0] == 16


def set_head_bias(algo: R2D2, q: list[float]) -> None:
    """Both nets' Q values are ``q`` whatever the input (the head's last layer: bias only)."""
    for net in (algo.policy.q_net, algo.target_net):
        (*_, last) = [m for m in net.head.modules() if isinstance(m, torch.nn.Linear)]
        with torch.no_grad():
            last.weight.zero_()
            last.bias.copy_(torch.tensor(q))


def masked_sequences(next_masks: np.ndarray) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(1)
    length = BURN_IN + SEQUENCE_LEN
    space = masked_space(N)
    features = rng.normal(size=(BATCH, length, 2)).astype(np.float32)
    return {
        OBS: packed(space, features, random_masks(rng, (BATCH, length), N)),
        NEXT_OBS: packed(space, features, next_masks),
        ACTIONS: np.full((BATCH, length), 4),
        REWARDS: rng.normal(size=(BATCH, length)).astype(np.float32),
        TERMINATED: np.zeros((BATCH, length), bool),
        TRUNCATED: np.zeros((BATCH, length), bool),
        MASK: np.ones((BATCH, length), bool),
        MEMORY: rng.normal(size=(BATCH, 2, 8)).astype(np.float32),
        WEIGHTS: np.ones(BATCH, np.float32),
    }


@pytest.mark.parametrize("double_q", [True, False])
def test_the_sequence_targets_ignore_an_illegal_next_action_with_a_huge_q(double_q: bool) -> None:
    next_masks = random_masks(np.random.default_rng(2), (BATCH, BURN_IN + SEQUENCE_LEN), N)
    next_masks[..., 0] = 0  # action 0 is never legal next
    next_masks[..., 1] = 1
    batch = masked_sequences(next_masks)
    algo = make_r2d2(double_q=double_q)
    losses = []
    for q0 in (1e6, -5.0):  # action 0's Q: huge, then small; the others' as they were
        set_head_bias(algo, [q0, 2.0, 1.0, 0.5, 0.0])
        losses.append(algo.sequence_loss(batch))
    torch.testing.assert_close(losses[0].td_error, losses[1].td_error)
    # The unmasked targets would take the huge value: the mask is what keeps them equal.
    assert float(losses[0].td_error.detach().abs().max()) < 50.0
