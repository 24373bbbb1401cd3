"""IQL without a run: its losses worked by hand, its registration and refusals. Its
learning check runs through a dataset run (tests/learning/test_offline_learning.py); in one
process, 6000 updates on the noisy swing-up controller's data reach -203 to -216 (seeds 1-5)."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest
import torch

from algos import get_algorithm
from algos.iql.config import IQLConfig
from algos.iql.policy import IQL, advantage_weights, expectile_loss
from joyrl_ray.config import load_config

OBS = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
ACTIONS = gym.spaces.Box(np.array([-2.0, 0.0], np.float32), np.array([2.0, 1.0], np.float32))
CPU = torch.device("cpu")


def make(**overrides: object) -> IQL:
    cfg = IQLConfig(**{"batch_size": 4, **overrides})
    cfg.check()
    torch.manual_seed(0)
    algo = IQL(cfg, OBS, ACTIONS, CPU)
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
        "discounts": np.array([0.99, 0.0, 0.99**3, 0.0][:rows], np.float32),
        "weights": np.ones(rows, np.float32),
    }


def test_expectile_loss_weights_the_square_by_tau_above_and_one_minus_tau_below() -> None:
    diff = torch.tensor([2.0, -1.0, 0.5, -3.0])  # target - V
    loss = expectile_loss(diff, 0.7)
    np.testing.assert_allclose(loss, [0.7 * 4, 0.3 * 1, 0.7 * 0.25, 0.3 * 9], rtol=1e-6)
    np.testing.assert_allclose(expectile_loss(diff, 0.5), 0.5 * diff.pow(2))


def test_actor_weights_are_exp_beta_advantage_clipped_at_max_weight() -> None:
    weights = advantage_weights(torch.tensor([-1.0, 0.0, 0.5, 2.0, 50.0]), 3.0, 100.0)
    np.testing.assert_allclose(
        weights, [math.exp(-3.0), 1.0, math.exp(1.5), 100.0, 100.0], rtol=1e-6
    )


def test_one_update_moves_value_critics_and_actor_towards_the_hand_computed_targets() -> None:
    """By hand with numpy, from the networks before the update: V's loss is the expectile
    square of ``min Q'(s, a) - V(s)``; the actor's is ``-mean(min(exp(beta * (min Q' -
    V)), max_weight) * log N(a; tanh mean, std))``; the critics move towards ``r +
    discounts * V(s')`` with the V the update left (0 discount: the reward alone)."""
    algo = make(max_weight=3.0, expectile=0.8)
    batch = transitions(4)
    obs = torch.as_tensor(batch["obs"])
    normalised = algo.policy.scaler.to_normalised(torch.as_tensor(batch["actions"]))

    def advantages() -> np.ndarray:  # min Q'(s, a) - V(s)
        with torch.no_grad():
            q = torch.min(*algo.critic_target(obs, normalised))
            return (q - algo.value(obs).squeeze(-1)).numpy()

    # V moved to the middle of the rows' Q, and beta so that the largest weight is clipped:
    # both sides of the expectile and both sides of the clip are in play
    with torch.no_grad():
        algo.value[-1].bias += float(np.median(advantages()))
    diff = advantages()
    algo.cfg.beta = beta = 2.0 * math.log(3.0) / float(diff.max())
    assert (diff > 0).any() and (diff < 0).any()
    assert (np.exp(beta * diff) > 3.0).any() and (np.exp(beta * diff) < 3.0).any()
    with torch.no_grad():
        mean = algo.policy.actor(obs).numpy()
        std = algo.policy.actor.std().numpy()
    value_loss = np.mean(np.where(diff > 0, 0.8, 0.2) * diff**2)
    a = normalised.numpy()
    log_prob = (-0.5 * ((a - mean) / std) ** 2 - np.log(std) - 0.5 * np.log(2 * np.pi)).sum(-1)
    actor_loss = -np.mean(np.minimum(np.exp(beta * diff), 3.0) * log_prob)

    targets: list[torch.Tensor] = []
    update_critic = algo.update_critic

    def recording(columns, actions, target):  # the target the critics are moved towards
        targets.append(target.clone())
        return update_critic(columns, actions, target)

    algo.update_critic = recording  # type: ignore[method-assign]
    metrics = algo.learn(batch).metrics
    assert metrics["value_loss"] == pytest.approx(value_loss, rel=1e-5)
    assert metrics["actor_loss"] == pytest.approx(actor_loss, rel=1e-5)
    with torch.no_grad():
        next_v = algo.value(torch.as_tensor(batch["next_obs"])).squeeze(-1).numpy()
    (target,) = targets
    expected = batch["rewards"] + batch["discounts"] * next_v
    np.testing.assert_allclose(target.numpy(), expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(target.numpy()[[1, 3]], batch["rewards"][[1, 3]])


def test_acting_is_the_mean_greedy_and_a_clipped_sample_exploring() -> None:
    algo = make()
    obs = np.random.default_rng(0).uniform(-1, 1, (64, 3)).astype(np.float32)
    greedy, extras = algo.policy.act(obs, explore=False, env_steps=0)
    with torch.no_grad():
        mean = algo.policy.actor(torch.as_tensor(obs)).numpy()
    assert extras == {}
    np.testing.assert_allclose(greedy, algo.policy.scaler.to_env(mean), rtol=1e-6)
    explored, _ = algo.policy.act(obs, explore=True, env_steps=0)
    assert not np.allclose(explored, greedy)
    assert np.all(explored >= ACTIONS.low) and np.all(explored <= ACTIONS.high)


def test_a_dataset_action_on_the_bounds_has_a_finite_log_likelihood() -> None:
    algo = make()
    batch = transitions(4)
    batch["actions"][:] = ACTIONS.high  # every action saturated
    metrics = algo.learn(batch).metrics
    assert all(math.isfinite(value) for value in metrics.values()), metrics


def test_a_checkpoint_restores_the_value_net_and_its_optimizer() -> None:
    algo = make()
    for seed in range(2):
        algo.learn(transitions(4, seed))
    restored = make()
    restored.load_state_dict(algo.state_dict())
    assert restored.updates == 2
    for a, b in zip(restored.value.parameters(), algo.value.parameters(), strict=True):
        assert torch.equal(a, b)
    moments = restored.value_optimizer.state_dict()["state"]
    assert moments and all(int(m["step"]) == 2 for m in moments.values())


def test_iql_is_registered_with_offline_defaults() -> None:
    spec = get_algorithm("IQL")
    cfg = spec.config_cls()
    assert cfg.learn_start == 0 and cfg.expectile == 0.7 and cfg.beta == 3.0
    algo = spec.algorithm_cls(cfg, OBS, ACTIONS, CPU)
    assert isinstance(algo, IQL) and algo.policy.data_needs(cfg).learn_start == 0


def test_an_expectile_out_of_range_is_one_line_naming_the_key_and_the_range() -> None:
    with pytest.raises(ValueError) as refused:
        load_config(None, ["general_cfg.algo_name=IQL", "algo_cfg.expectile=1.5"])
    (line,) = str(refused.value).splitlines()
    assert "algo_cfg.expectile=1.5" in line and "0 < expectile < 1" in line, line


def test_iql_refuses_a_discrete_action_space_in_one_line() -> None:
    with pytest.raises(ValueError) as refused:
        get_algorithm("IQL").policy_cls.check_spaces(OBS, gym.spaces.Discrete(3))
    (line,) = str(refused.value).splitlines()
    assert "Discrete" in line and "supports: Box" in line, line
