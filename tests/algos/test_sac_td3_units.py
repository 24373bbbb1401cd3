"""SAC and TD3 pieces without a run: squashed log-probs, bounds, weighted losses, priorities."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest
import torch

from algos.continuous import BoxScaler
from algos.sac.config import SACConfig
from algos.sac.policy import SAC
from algos.td3.config import TD3Config
from algos.td3.policy import TD3
from joyrl_ray.data.buffers import PrioritizedReplayBuffer

OBS = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
ACTIONS = gym.spaces.Box(np.array([-2.0, 0.0], np.float32), np.array([2.0, 1.0], np.float32))
ALGORITHMS = {"SAC": (SACConfig, SAC), "TD3": (TD3Config, TD3)}


def make(name: str, **overrides: object):
    config_cls, algorithm_cls = ALGORITHMS[name]
    cfg = config_cls(**{"random_steps": 0, "batch_size": 32, **overrides})
    algo = algorithm_cls(cfg, OBS, ACTIONS, torch.device("cpu"))
    algo.seed(0)
    algo.policy.seed(0)
    return algo


def transitions(rows: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        "obs": rng.uniform(-1, 1, (rows, 3)).astype(np.float32),
        "actions": rng.uniform(ACTIONS.low, ACTIONS.high, (rows, 2)).astype(np.float32),
        "rewards": rng.normal(size=rows).astype(np.float32),
        "next_obs": rng.uniform(-1, 1, (rows, 3)).astype(np.float32),
        "discounts": np.full(rows, 0.99, np.float32),
        "weights": np.ones(rows, np.float32),
    }


def test_box_scaler_round_trip() -> None:
    scaler = BoxScaler(ACTIONS)
    env = scaler.to_env(np.array([[-1.0, -1.0], [0.0, 0.0], [1.0, 1.0]], np.float32))
    np.testing.assert_allclose(env, [[-2.0, 0.0], [0.0, 0.5], [2.0, 1.0]])
    np.testing.assert_allclose(
        scaler.to_normalised(torch.as_tensor(env)), [[-1, -1], [0, 0], [1, 1]]
    )


def test_sac_squashed_log_prob_matches_torch_transform() -> None:
    algo = make("SAC")
    obs = torch.as_tensor(transitions(64)["obs"])
    torch.manual_seed(0)
    noise = torch.randn(64, 2)
    actions, log_prob = algo.policy.actor(obs, noise)
    mean, log_std = algo.policy.actor.net(obs).chunk(2, dim=-1)
    reference = torch.distributions.TransformedDistribution(
        torch.distributions.Normal(mean, log_std.clamp(-20, 2).exp()),
        [torch.distributions.TanhTransform()],
    )
    expected = reference.log_prob(actions.clamp(-1 + 1e-6, 1 - 1e-6)).sum(-1)
    np.testing.assert_allclose(log_prob.detach(), expected.detach(), atol=1e-3)
    assert algo.target_entropy == -2.0 and algo.alpha == pytest.approx(0.2)


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_actions_stay_in_bounds_and_weights_travel(name: str) -> None:
    algo = make(name)
    obs = np.random.default_rng(0).uniform(-1, 1, (256, 3)).astype(np.float32) * 50
    for explore in (True, False):
        actions, extras = algo.policy.act(obs, explore=explore, env_steps=10**6)
        assert extras == {} and actions.shape == (256, 2)
        assert np.all(actions >= ACTIONS.low) and np.all(actions <= ACTIONS.high)
    random_policy = make(name, random_steps=100)
    uniform, _ = random_policy.policy.act(obs, explore=True, env_steps=0)
    assert uniform[:, 0].min() < -1.5 and uniform[:, 0].max() > 1.5
    twin = make(name)
    twin.policy.set_weights(algo.get_weights())
    np.testing.assert_array_equal(
        twin.policy.act(obs, explore=False, env_steps=0)[0],
        algo.policy.act(obs, explore=False, env_steps=0)[0],
    )


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_zero_is_weights_leave_the_critic_unchanged(name: str) -> None:
    algo = make(name)
    batch = transitions(32)
    batch["weights"] = np.zeros(32, np.float32)
    before = [p.detach().clone() for p in algo.critic.parameters()]
    result = algo.learn(batch)
    assert unchanged(before, algo.critic)
    assert result.priorities is not None and result.priorities.shape == (32,)
    assert np.all(result.priorities >= 0) and math.isfinite(result.metrics["critic_loss"])


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_priorities_flow_back_into_prioritized_replay(name: str) -> None:
    algo = make(name)
    buffer = PrioritizedReplayBuffer(256, seed=0)
    buffer.add(transitions(256))
    for _ in range(4):
        batch = buffer.sample(32)
        result = algo.learn(batch)
        assert buffer.update_priorities(batch["slots"], batch["generations"], result.priorities)
    assert algo.updates == 4


def unchanged(before: list[torch.Tensor], module: torch.nn.Module) -> bool:
    return all(torch.equal(a, b) for a, b in zip(before, module.parameters(), strict=True))


def test_td3_delays_actor_and_target_updates() -> None:
    algo = make("TD3", policy_delay=3)
    actor_before = [p.detach().clone() for p in algo.policy.actor.parameters()]
    target_before = [p.detach().clone() for p in algo.critic_target.parameters()]
    batch = transitions(32)
    for _ in range(2):
        algo.learn(batch)
    assert unchanged(actor_before, algo.policy.actor)
    assert unchanged(target_before, algo.critic_target)
    algo.learn(batch)
    assert not unchanged(actor_before, algo.policy.actor)
    assert not unchanged(target_before, algo.critic_target)


def test_sac_alpha_tuning_and_state_round_trip() -> None:
    algo = make("SAC")
    batch = transitions(32)
    for _ in range(3):
        algo.learn(batch)
    assert algo.alpha != pytest.approx(0.2)
    restored = make("SAC")
    restored.load_state_dict(algo.state_dict())
    assert restored.alpha == pytest.approx(algo.alpha) and restored.updates == 3


@pytest.mark.parametrize("name", list(ALGORITHMS))
def test_critic_targets_bootstrap_truncated_steps_and_not_terminated_ones(name: str) -> None:
    """By hand: ``y = r + discounts * V'(s')``, where the worker's folding gives a step cut
    off by a time limit its discount (gamma^n) and a terminated one 0."""
    algo = make(name, **({"policy_noise": 0.0} if name == "TD3" else {}))
    batch = transitions(4)
    gamma = 0.99
    # truncated after 1 step, terminated, truncated after 3 folded steps, terminated
    batch["discounts"] = np.array([gamma, 0.0, gamma**3, 0.0], np.float32)
    next_obs = torch.as_tensor(batch["next_obs"])
    with torch.no_grad():
        if name == "SAC":
            noise_rng = torch.Generator().manual_seed(0)
            noise_rng.set_state(algo.torch_rng.get_state())  # the noise learn() will draw
            noise = algo.parallel.global_randn(4, 2, noise_rng, torch.device("cpu"))
            next_actions, log_prob = algo.policy.actor(next_obs, noise)
            value = torch.min(*algo.critic_target(next_obs, next_actions)) - algo.alpha * log_prob
        else:
            next_actions = algo.actor_target(next_obs).clamp(-1.0, 1.0)
            value = torch.min(*algo.critic_target(next_obs, next_actions))
    expected = batch["rewards"] + batch["discounts"] * value.numpy()

    targets: list[torch.Tensor] = []
    update_critic = algo.update_critic

    def recording(columns, actions, target):  # the target the critics are moved towards
        targets.append(target.clone())
        return update_critic(columns, actions, target)

    algo.update_critic = recording  # type: ignore[method-assign]
    algo.learn(batch)
    (target,) = targets
    np.testing.assert_allclose(target.numpy(), expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(target.numpy()[[1, 3]], batch["rewards"][[1, 3]])
    assert (value.abs() > 1e-4).all()  # so the bootstrapped rows do differ from the rewards
