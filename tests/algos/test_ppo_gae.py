"""GAE(lambda) against a hand-computed example with a truncation and a termination."""

import numpy as np
import pytest

from algos.ppo.gae import compute_gae, discounted_returns

GAMMA, LAM = 0.9, 0.5  # gamma * lambda = 0.45


def test_gae_bootstraps_truncation_and_cuts_termination() -> None:
    # Two envs, time-major [T=4, N=2]. Env 0 is truncated at t=1: its bootstrap is the value
    # of the final obs (10.0), not of the reset obs at t=2. Env 1 terminates at t=2: no
    # bootstrap there (its next value 5.0 must be ignored).
    rewards = np.array([[1, 1], [2, 1], [3, 1], [4, 1]], dtype=np.float32)
    values = np.array([[0.5, 2], [1.0, 2], [1.5, 2], [2.0, 2]], dtype=np.float32)
    next_values = np.array([[1.0, 2], [10.0, 2], [0.7, 5], [3.0, 2]], dtype=np.float32)
    terminated = np.array([[0, 0], [0, 0], [0, 1], [0, 0]], dtype=bool)
    truncated = np.array([[0, 0], [1, 0], [0, 0], [0, 0]], dtype=bool)

    adv, ret = compute_gae(rewards, values, next_values, terminated, truncated, GAMMA, LAM)

    # env 0, by hand:
    #   t=3: delta = 4 + .9*3.0 - 2.0 = 4.7                        A = 4.7
    #   t=2: delta = 3 + .9*0.7 - 1.5 = 2.13                       A = 2.13 + .45*4.7 = 4.245
    #   t=1: delta = 2 + .9*10  - 1.0 = 10.0 (truncated: cut)      A = 10.0
    #   t=0: delta = 1 + .9*1.0 - 0.5 = 1.4                        A = 1.4 + .45*10 = 5.9
    # env 1:
    #   t=3: delta = 1 + .9*2 - 2 = 0.8                            A = 0.8
    #   t=2: delta = 1 + 0 - 2 = -1 (terminated: no bootstrap)     A = -1.0
    #   t=1: delta = 0.8                                           A = 0.8 + .45*(-1) = 0.35
    #   t=0: delta = 0.8                                           A = 0.8 + .45*0.35 = 0.9575
    expected = np.array([[5.9, 0.9575], [10.0, 0.35], [4.245, -1.0], [4.7, 0.8]])
    np.testing.assert_allclose(adv, expected, rtol=1e-6)
    np.testing.assert_allclose(ret, expected + values, rtol=1e-6)
    assert adv.dtype == np.float32 and adv.shape == (4, 2)


def test_gae_lambda_one_is_monte_carlo_and_zero_is_td() -> None:
    rewards = np.array([[1.0], [1.0], [1.0]], dtype=np.float32)
    values = np.zeros((3, 1), dtype=np.float32)
    next_values = np.array([[0.0], [0.0], [2.0]], dtype=np.float32)
    term = np.zeros((3, 1), dtype=bool)
    adv1, _ = compute_gae(rewards, values, next_values, term, term, 0.5, 1.0)
    # Monte Carlo with bootstrap at the end: 1 + .5 + .25 + .125 * 2
    assert adv1[0, 0] == pytest.approx(1.0 + 0.5 + 0.25 + 0.125 * 2.0)
    adv0, _ = compute_gae(rewards, values, next_values, term, term, 0.5, 0.0)
    np.testing.assert_allclose(adv0[:, 0], [1.0, 1.0, 2.0])


def test_discounted_returns_reset_after_episode_end() -> None:
    rewards = np.array([[1.0], [1.0], [1.0]])
    dones = np.array([[0.0], [1.0], [0.0]])
    np.testing.assert_allclose(discounted_returns(rewards, dones, 0.5)[:, 0], [1.0, 1.5, 1.0])
