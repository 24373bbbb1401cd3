"""TD3's target policy smoothing, read off the actions its target critics are evaluated at.

``a' = clip(mu'(s') + clip(policy_noise * eps, -noise_clip, noise_clip), -1, 1)``, all in
normalised action units (``[-1, 1]`` per dimension, whatever the Box's bounds). The target
actor's head is set so that ``mu'(s')`` is a known constant; a forward hook on the target
critics records ``a'``, so ``a' - mu'(s')`` is the noise the learner drew. One seeded
learner and 8192 rows x 2 dimensions per test: the figures are deterministic, and the
bounds are several standard errors wide.
"""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch import nn

from algos.td3.config import TD3Config
from algos.td3.policy import TD3

ROWS = 8192
OBS = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
# Bounds of different widths: the noise scale must not follow them (normalised units).
ACTIONS = gym.spaces.Box(np.array([-2.0, 0.0], np.float32), np.array([2.0, 1.0], np.float32))


def td3_with_constant_target_actor(target_action: list[float], **overrides: float) -> TD3:
    """A seeded TD3 whose target actor outputs ``target_action`` (normalised) everywhere."""
    cfg = TD3Config(random_steps=0, batch_size=ROWS, **overrides)
    algo = TD3(cfg, OBS, ACTIONS, torch.device("cpu"))
    algo.seed(0)
    head = [m for m in algo.actor_target.modules() if isinstance(m, nn.Linear)][-1]
    with torch.no_grad():
        head.weight.zero_()
        head.bias.copy_(torch.atanh(torch.tensor(target_action)))  # the tanh head undoes it
    return algo


def smoothed_target_actions(algo: TD3) -> np.ndarray:
    """The actions ``a'`` one ``learn`` evaluates the target critics at, ``[ROWS, 2]``."""
    recorded: list[torch.Tensor] = []
    hook = algo.critic_target.register_forward_hook(
        lambda _module, args, _out: recorded.append(args[1].clone())
    )
    rng = np.random.default_rng(0)
    algo.learn(
        {
            "obs": rng.uniform(-1, 1, (ROWS, 3)).astype(np.float32),
            "actions": rng.uniform(ACTIONS.low, ACTIONS.high, (ROWS, 2)).astype(np.float32),
            "rewards": rng.normal(size=ROWS).astype(np.float32),
            "next_obs": rng.uniform(-1, 1, (ROWS, 3)).astype(np.float32),
            "discounts": np.full(ROWS, 0.99, np.float32),
            "weights": np.ones(ROWS, np.float32),
        }
    )
    hook.remove()
    (actions,) = recorded
    return actions.numpy().astype(np.float64)


def clipped_normal_std(std: float, clip: float) -> float:
    """The standard deviation of ``clip(N(0, std^2), -clip, clip)``."""
    a = clip / std
    inside = math.erf(a / math.sqrt(2))  # P(|Z| < a)
    pdf = math.exp(-a * a / 2) / math.sqrt(2 * math.pi)
    return math.sqrt(std**2 * (inside - 2 * a * pdf) + clip**2 * (1 - inside))


@pytest.mark.parametrize(("policy_noise", "noise_clip"), [(0.2, 0.5), (0.1, 0.15)])
def test_td3_target_noise_has_the_policy_noise_scale_and_is_clipped_to_noise_clip(
    policy_noise: float, noise_clip: float
) -> None:
    algo = td3_with_constant_target_actor(
        [0.0, 0.0], policy_noise=policy_noise, noise_clip=noise_clip
    )
    noise = smoothed_target_actions(algo)  # mu'(s') = 0: the actions are the noise

    largest = float(np.abs(noise).max())
    assert largest <= noise_clip + 1e-6, f"noise up to {largest:.3f}, noise_clip {noise_clip}"
    # Each dimension: the share of draws cut at +-noise_clip is P(|Z| > noise_clip /
    # policy_noise) (1.2% for 0.2/0.5, 13.4% for 0.1/0.15) and the spread is that of the
    # clipped normal; the bounds are about 5 standard errors of 8192 draws.
    expected_clipped = 1 - math.erf(noise_clip / policy_noise / math.sqrt(2))
    clipped = np.mean(np.abs(noise) >= noise_clip - 1e-6, axis=0)
    tolerance = 5 * math.sqrt(expected_clipped * (1 - expected_clipped) / ROWS) + 1e-3
    np.testing.assert_allclose(clipped, expected_clipped, atol=tolerance)
    expected_std = clipped_normal_std(policy_noise, noise_clip)
    np.testing.assert_allclose(noise.std(axis=0), expected_std, rtol=0.03)
    np.testing.assert_allclose(noise.mean(axis=0), 0.0, atol=5 * expected_std / math.sqrt(ROWS))


def test_td3_smoothed_target_actions_stay_within_the_action_bounds() -> None:
    # mu'(s') near both bounds: 0.9 for the first dimension, -0.9 for the second.
    algo = td3_with_constant_target_actor([0.9, -0.9], policy_noise=0.2, noise_clip=0.5)
    actions = smoothed_target_actions(algo)

    assert actions.min() >= -1.0 and actions.max() <= 1.0, (actions.min(), actions.max())
    # The noise pushed P(Z > 0.5) = 31% of the draws past the bound; each was cut at it,
    # not dropped or rescaled, and the noise clip still bounds the other side.
    at_bound = np.mean(actions == [1.0, -1.0], axis=0)
    np.testing.assert_allclose(at_bound, 0.3085, atol=0.03)
    lowest, highest = float(actions[:, 0].min()), float(actions[:, 1].max())
    assert lowest >= 0.9 - 0.5 - 1e-6 and highest <= -0.9 + 0.5 + 1e-6, (lowest, highest)
