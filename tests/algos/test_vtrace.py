"""V-trace against a hand-computed rollout, and against GAE(lambda=1) on on-policy data."""

import numpy as np
import pytest
import torch

from algos.ppo.gae import compute_gae
from algos.vtrace import vtrace

GAMMA = 0.9


def column(*values: float) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.float32)[:, None]  # [T=5, N=1]


def test_vtrace_clips_ratios_cuts_at_episode_ends_and_bootstraps_truncation() -> None:
    # Ratios pi/mu 2.0 and 3.0 are clipped to rho_bar = c_bar = 1; 0.5 and 0.8 are kept.
    # t=1 is truncated (bootstrapped from its final observation's value, 10.0), t=2 is
    # terminated (its next value 7.0 must be ignored), t=4 ends the rollout (bootstrap 3.0).
    ratios = column(2.0, 0.5, 1.0, 0.8, 3.0)
    rewards = column(1, 2, 3, 4, 5)
    values = column(0.5, 1.0, 1.5, 2.0, 2.5)
    next_values = column(1.0, 10.0, 7.0, 2.5, 3.0)
    terminated = column(0, 0, 1, 0, 0).bool()
    truncated = column(0, 1, 0, 0, 0).bool()

    out = vtrace(
        torch.log(ratios), rewards, values, next_values, terminated, truncated, gamma=GAMMA
    )

    # By hand, rhos = cs = [1, .5, 1, .8, 1]:
    #   deltas: t0 1*(1 + .9*1 - .5) = 1.4     t1 .5*(2 + .9*10 - 1) = 5.0
    #           t2 1*(3 - 1.5) = 1.5            t3 .8*(4 + .9*2.5 - 2) = 3.4
    #           t4 1*(5 + .9*3 - 2.5) = 5.2
    #   v - V:  t4 5.2; t3 3.4 + .9*.8*5.2 = 7.144; t2 1.5 (terminated); t1 5.0 (truncated);
    #           t0 1.4 + .9*1*5.0 = 5.9
    np.testing.assert_allclose(out.vs[:, 0], [6.4, 6.0, 3.0, 9.144, 7.7], rtol=1e-6)
    #   advantages rho_t * (r_t + gamma * v_{t+1} - V_t), v_{t+1} the bootstrap at ends:
    #           t0 1*(1 + .9*6.0 - .5) = 5.9    t1 .5*(2 + .9*10 - 1) = 5.0
    #           t2 1*(3 - 1.5) = 1.5            t3 .8*(4 + .9*7.7 - 2) = 7.144
    #           t4 1*(5 + .9*3 - 2.5) = 5.2
    np.testing.assert_allclose(out.pg_advantages[:, 0], [5.9, 5.0, 1.5, 7.144, 5.2], rtol=1e-6)
    np.testing.assert_allclose(out.rhos[:, 0], [1.0, 0.5, 1.0, 0.8, 1.0], rtol=1e-6)


def test_vtrace_on_policy_targets_equal_gae_lambda_one_returns() -> None:
    rng = np.random.default_rng(0)
    shape = (16, 3)
    rewards = rng.normal(size=shape).astype(np.float32)
    values = rng.normal(size=shape).astype(np.float32)
    next_values = np.concatenate([values[1:], rng.normal(size=(1, 3))]).astype(np.float32)
    terminated = rng.random(shape) < 0.1
    truncated = (rng.random(shape) < 0.1) & ~terminated
    # At an episode end the next value is the final observation's, not the next row's.
    ends = terminated | truncated
    next_values[ends] = rng.normal(size=int(ends.sum()))

    out = vtrace(
        torch.zeros(shape),
        *(torch.as_tensor(a) for a in (rewards, values, next_values, terminated, truncated)),
        gamma=0.97,
    )
    _, returns = compute_gae(rewards, values, next_values, terminated, truncated, 0.97, 1.0)
    np.testing.assert_allclose(out.vs.numpy(), returns, rtol=1e-5, atol=1e-5)


def test_vtrace_refuses_non_positive_clipping_thresholds() -> None:
    zeros = torch.zeros((2, 1))
    with pytest.raises(ValueError, match="rho_bar and c_bar must be > 0"):
        vtrace(zeros, zeros, zeros, zeros, zeros, zeros, gamma=0.9, rho_bar=0.0)
