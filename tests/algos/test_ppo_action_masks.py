"""PPO, APPO and IMPALA keep to the legal actions of masked observations: sampled and greedy
actions are legal, an illegal action has probability 0 (log-probability far below any legal
one's), and learning takes log-probabilities and entropies over the legal actions as the
workers did (the learner's first ratio is 1; one legal action leaves no entropy)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

from algos import get_algorithm
from algos.layers import LayerConfig
from algos.ppo.policy import PPO, PPOPolicy
from joyrl_ray.batch import NEXT_OBS, OBS, REWARDS, TERMINATED, TRUNCATED, Batch
from tests.algos.mask_support import masked_space, packed, random_masks

CPU = torch.device("cpu")
N = 5
FEED_FORWARD = [LayerConfig("linear", [16], "tanh")]
RECURRENT = [LayerConfig("linear", [16], "tanh"), LayerConfig("gru", [8], "none")]


def make(name: str = "PPO", layers: list[LayerConfig] = FEED_FORWARD, **cfg: object) -> PPO:
    torch.manual_seed(0)
    spec = get_algorithm(name)
    config = spec.config_cls(actor_layers=layers, critic_layers=FEED_FORWARD, **cfg)
    algo = spec.algorithm_cls(config, masked_space(N), gym.spaces.Discrete(N), CPU)
    assert isinstance(algo, PPO)
    algo.seed(0)
    algo.policy.seed(0)
    return algo


def masked_obs(rng: np.random.Generator, masks: np.ndarray) -> np.ndarray:
    features = rng.normal(size=(*masks.shape[:-1], 2)).astype(np.float32) * 3
    return packed(masked_space(N), features, masks)


@pytest.mark.parametrize("layers", [FEED_FORWARD, RECURRENT], ids=["mlp", "gru"])
def test_sampled_and_greedy_actions_are_always_legal_over_many_random_masks(
    layers: list[LayerConfig],
) -> None:
    policy = make(layers=layers).policy
    rng = np.random.default_rng(0)
    for explore in (True, False):
        policy.reset_memory(64)
        for _ in range(40):
            masks = random_masks(rng, (64,), N)
            actions, extras = policy.act(masked_obs(rng, masks), explore=explore, env_steps=0)
            assert masks[np.arange(64), actions].all(), (explore, actions)
            assert np.all(extras["log_prob"] > -50.0)  # a legal action's, stored


def test_an_illegal_action_has_probability_zero_and_a_log_prob_near_minus_infinity() -> None:
    policy: PPOPolicy = make().policy
    rng = np.random.default_rng(1)
    masks = random_masks(rng, (32,), N)
    obs = masked_obs(rng, masks)
    dist = policy.actor(policy.obs_tensor(obs), policy.mask_tensor(obs))
    legal = torch.as_tensor(masks.astype(bool))
    probs = dist.logits.exp()
    assert torch.all(probs[~legal] == 0.0)
    torch.testing.assert_close(probs.sum(-1), torch.ones(32))
    for action in range(N):
        log_prob = dist.log_prob(torch.full((32,), action))
        assert torch.all(log_prob[~legal[:, action]] < -1e7)
        assert torch.all(log_prob[legal[:, action]] > -50.0)
    entropy = dist.entropy()
    assert torch.all(torch.isfinite(entropy))
    assert torch.all(entropy <= torch.log(legal.sum(-1).float()) + 1e-5)


def masked_rollout(policy: PPOPolicy, masks: np.ndarray) -> Batch:
    """A rollout ``[T, N]`` the policy acts on, with the given masks ``[T, N, n]``."""
    rng = np.random.default_rng(2)
    obs = masked_obs(rng, masks)
    steps, envs = masks.shape[:2]
    policy.reset_memory(envs)
    acted = [policy.act(obs[t], explore=True, env_steps=0) for t in range(steps)]
    return {
        OBS: obs,
        "actions": np.stack([actions for actions, _ in acted]),
        REWARDS: rng.normal(size=(steps, envs)).astype(np.float32),
        NEXT_OBS: masked_obs(rng, masks),
        TERMINATED: np.zeros((steps, envs), bool),
        TRUNCATED: np.zeros((steps, envs), bool),
        **{key: np.stack([extras[key] for _, extras in acted]) for key in acted[0][1]},
    }


@pytest.mark.parametrize("name", ["PPO", "APPO", "IMPALA"])
@pytest.mark.parametrize("layers", [FEED_FORWARD, RECURRENT], ids=["mlp", "gru"])
def test_learning_takes_log_probs_and_entropy_over_the_legal_actions(
    name: str, layers: list[LayerConfig]
) -> None:
    # One legal action per step: the masked policy is certain, so no entropy, and with lr 0
    # the learner's log-probabilities are the workers' (ratio 1, KL 0).
    algo = make(name, layers, lr=0.0, n_epochs=1, n_minibatches=1, ent_coef=0.01)
    rng = np.random.default_rng(3)
    steps, envs = 8, 4
    masks = np.zeros((steps, envs, N), np.int8)
    masks[..., 0] = 0
    legal = rng.integers(1, N, (steps, envs))
    np.put_along_axis(masks, legal[..., None], 1, axis=-1)
    batch = masked_rollout(algo.policy, masks)
    np.testing.assert_array_equal(batch["actions"], legal)
    np.testing.assert_allclose(batch["log_prob"], 0.0, atol=1e-5)
    metrics = algo.learn(batch).metrics
    assert abs(metrics["entropy"]) < 1e-5, metrics
    assert abs(metrics["approx_kl"]) < 1e-6 and metrics["clip_frac"] == 0.0, metrics
