"""PPO's action distributions: log-probabilities, entropies and sampling for each space type."""

import math

import gymnasium as gym
import numpy as np
import pytest
import torch

from algos.ppo.config import PPOConfig
from algos.ppo.policy import PPOPolicy

OBS_SPACE = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)


def make_policy(action_space: gym.Space, **overrides: object) -> PPOPolicy:
    cfg = PPOConfig(**overrides)
    policy = PPOPolicy(cfg, OBS_SPACE, action_space, torch.device("cpu"))
    policy.seed(0)
    return policy


def observations(rows: int = 64) -> np.ndarray:
    return np.random.default_rng(1).uniform(-1, 1, (rows, 4)).astype(np.float32)


def test_discrete_log_prob_matches_torch_and_sums_to_one() -> None:
    policy = make_policy(gym.spaces.Discrete(3))
    obs = observations()
    actions, extras = policy.act(obs, explore=True, env_steps=0)
    assert actions.shape == (64,) and actions.dtype == np.int64
    assert set(np.unique(actions)) <= {0, 1, 2}
    with torch.no_grad():
        logits = policy.actor.net(torch.as_tensor(obs))
        reference = torch.distributions.Categorical(logits=logits)
        dist = policy.actor(torch.as_tensor(obs))
        np.testing.assert_allclose(
            extras["log_prob"], reference.log_prob(torch.as_tensor(actions)), atol=1e-6
        )
        total = sum(dist.log_prob(torch.full((64,), a)).exp() for a in range(3))
        np.testing.assert_allclose(total, np.ones(64), atol=1e-6)
        np.testing.assert_allclose(dist.entropy(), reference.entropy(), atol=1e-6)
        # the 0.01-gain head starts near uniform
        assert float(dist.entropy().mean()) == pytest.approx(math.log(3), abs=1e-2)


def test_categorical_sampling_follows_probabilities() -> None:
    from algos.ppo.distributions import CategoricalDist

    probs = torch.tensor([[0.1, 0.6, 0.3]])
    dist = CategoricalDist(probs.log().expand(20_000, 3))
    draws = dist.sample(np.random.default_rng(0))
    freq = np.bincount(draws, minlength=3) / len(draws)
    np.testing.assert_allclose(freq, [0.1, 0.6, 0.3], atol=0.015)


def test_multidiscrete_log_prob_is_sum_of_components() -> None:
    space = gym.spaces.MultiDiscrete([3, 2])
    policy = make_policy(space)
    obs = observations()
    actions, extras = policy.act(obs, explore=True, env_steps=0)
    assert actions.shape == (64, 2)
    assert all(space.contains(a) for a in actions)
    with torch.no_grad():
        logits = policy.actor.net(torch.as_tensor(obs))
        parts = [
            torch.distributions.Categorical(logits=x) for x in torch.split(logits, [3, 2], dim=-1)
        ]
        a = torch.as_tensor(actions)
        expected = parts[0].log_prob(a[:, 0]) + parts[1].log_prob(a[:, 1])
        np.testing.assert_allclose(extras["log_prob"], expected, atol=1e-6)
        entropy = policy.actor(torch.as_tensor(obs)).entropy()
        np.testing.assert_allclose(entropy, parts[0].entropy() + parts[1].entropy(), atol=1e-6)
        assert float(entropy.mean()) == pytest.approx(math.log(3) + math.log(2), abs=1e-2)


@pytest.mark.parametrize("state_dependent", [False, True])
def test_gaussian_log_prob_entropy_and_clipping(state_dependent: bool) -> None:
    space = gym.spaces.Box(-2.0, 2.0, (2,), np.float32)
    policy = make_policy(space, state_dependent_std=state_dependent, log_std_init=-0.5)
    obs = observations()
    actions, extras = policy.act(obs, explore=True, env_steps=0)
    assert actions.shape == (64, 2) and actions.dtype == np.float32
    with torch.no_grad():
        dist = policy.actor(torch.as_tensor(obs))
        normal = torch.distributions.Normal(dist.mean, dist.log_std.exp())
        expected = normal.log_prob(torch.as_tensor(actions)).sum(-1)
        np.testing.assert_allclose(extras["log_prob"], expected, atol=1e-5)
        np.testing.assert_allclose(dist.entropy(), normal.entropy().sum(-1), atol=1e-5)
        # log-std starts at log_std_init (a parameter, or the head's bias with tiny weights)
        np.testing.assert_allclose(dist.log_std, -0.5, atol=0.05)
    assert policy.actor.state_dependent_std is state_dependent
    # deterministic acting returns the mean; the env gets samples clipped to the bounds
    mode, _ = policy.act(obs, explore=False, env_steps=0)
    np.testing.assert_allclose(mode, dist.mean.numpy(), atol=1e-6)
    wild = np.array([[-5.0, 0.5], [3.0, -2.5]], dtype=np.float32)
    np.testing.assert_array_equal(policy.env_action(wild), [[-2.0, 0.5], [2.0, -2.0]])


def test_gaussian_samples_have_the_configured_spread() -> None:
    space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    policy = make_policy(space, log_std_init=math.log(0.3))
    obs = np.zeros((20_000, 4), dtype=np.float32)
    actions, _ = policy.act(obs, explore=True, env_steps=0)
    mean = policy.actor(torch.as_tensor(obs[:1])).mean.item()
    assert actions.mean() == pytest.approx(mean, abs=0.01)
    assert actions.std() == pytest.approx(0.3, rel=0.03)


def test_weights_round_trip_to_a_fresh_policy() -> None:
    space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    learner, worker = make_policy(space, log_std_init=-1.0), make_policy(space)
    worker.set_weights(learner.get_weights())
    obs = observations(8)
    a, _ = learner.act(obs, explore=False, env_steps=0)
    b, _ = worker.act(obs, explore=False, env_steps=0)
    np.testing.assert_array_equal(a, b)
    assert float(worker.actor.log_std.detach().mean()) == pytest.approx(-1.0)
