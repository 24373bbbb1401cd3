"""CQL without a run: its conservative term worked by hand on a linear critic, SAC's update
when it is off, registration, and an offline learning loop on noisy Pendulum data."""

from __future__ import annotations

import math
import time

import gymnasium as gym
import numpy as np
import pytest
import torch

from algos import get_algorithm
from algos.cql.config import CQLConfig
from algos.cql.policy import CQL
from algos.layers import mlp_layers
from algos.sac.config import SACConfig
from algos.sac.policy import SAC, SACPolicy
from joyrl_ray.config import load_config
from tests.support.pendulum_data import learned_return as pendulum_learned_return
from tests.support.pendulum_data import pendulum_episodes

OBS = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
ACTIONS = gym.spaces.Box(np.array([-2.0, 0.0], np.float32), np.array([2.0, 1.0], np.float32))
CPU = torch.device("cpu")


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


def build(config_cls: type, algorithm_cls: type, **overrides: object):
    cfg = config_cls(**{"batch_size": 8, "random_steps": 0, **overrides})
    cfg.check()
    torch.manual_seed(0)
    algo = algorithm_cls(cfg, OBS, ACTIONS, CPU)
    algo.seed(0)
    algo.policy.seed(0)
    return algo


def test_the_conservative_term_is_logsumexp_minus_the_data_q_for_a_linear_critic() -> None:
    """Each critic a known linear map of ``[s, a]``, the sampled actions fixed: the reported
    ``cql_loss`` is ``cql_alpha * mean over rows of the sum over both critics of
    (logsumexp_k [Q(s, a_k) - log mu_k] - Q(s, a_data))``, worked in numpy; the critics'
    loss is that plus their squared TD error."""
    algo = build(CQLConfig, CQL, critic_layers=[], cql_alpha=2.5)
    w = {"q1": np.array([0.5, -1.0, 0.25, 2.0, -0.5]), "q2": np.array([-0.3, 0.8, 1.0, 0.5, 1.5])}
    bias = {"q1": 0.1, "q2": -0.2}
    with torch.no_grad():
        for name in ("q1", "q2"):
            head = getattr(algo.critic, name)[-1]
            head.weight.copy_(torch.as_tensor(w[name], dtype=torch.float32)[None])
            head.bias.fill_(bias[name])
    batch = transitions(3)
    rng = np.random.default_rng(1)
    sampled = rng.uniform(-1, 1, (3, 5, 2)).astype(np.float32)  # [B, K, D]
    log_density = rng.normal(size=(3, 5)).astype(np.float32)
    algo.action_samples = lambda obs, next_obs: (  # type: ignore[method-assign]
        torch.as_tensor(sampled),
        torch.as_tensor(log_density),
    )
    targets: list[torch.Tensor] = []
    update = algo.update_critic

    def record(columns, actions, target):  # the TD target SAC's learn hands the critics
        targets.append(target.clone())
        return update(columns, actions, target)

    algo.update_critic = record  # type: ignore[method-assign]
    metrics = algo.learn(batch).metrics

    obs = batch["obs"].astype(np.float64)
    data = (batch["actions"] - [0.0, 0.5]) / [2.0, 0.5]  # normalised to [-1, 1]
    expected_gap = np.zeros(3)
    q_data = {}
    for name in ("q1", "q2"):
        q_data[name] = np.concatenate([obs, data], 1) @ w[name] + bias[name]
        rows = np.concatenate([np.repeat(obs[:, None], 5, 1), sampled], 2)
        q_sampled = rows @ w[name] + bias[name]
        shifted = q_sampled - log_density
        top = shifted.max(1)
        logsumexp = top + np.log(np.exp(shifted - top[:, None]).sum(1))
        expected_gap += logsumexp - q_data[name]
    cql_loss = 2.5 * expected_gap.mean()
    assert metrics["cql_loss"] == pytest.approx(cql_loss, rel=1e-5)
    (target,) = targets
    td = sum((q_data[name] - target.numpy()) ** 2 for name in ("q1", "q2"))
    assert metrics["critic_loss"] == pytest.approx(0.5 * td.mean() + cql_loss, rel=1e-5)


def test_cql_alpha_zero_is_sacs_update_exactly() -> None:
    cql = build(CQLConfig, CQL, cql_alpha=0.0)
    sac = build(SACConfig, SAC)
    for seed in range(3):
        batch = transitions(8, seed)
        cql_metrics = cql.learn(batch).metrics
        sac_metrics = sac.learn(batch).metrics
        assert cql_metrics["critic_loss"] == sac_metrics["critic_loss"]
        assert cql_metrics["cql_loss"] == 0.0
    for name in ("critic", "critic_target"):
        for a, b in zip(
            getattr(cql, name).parameters(), getattr(sac, name).parameters(), strict=True
        ):
            assert torch.equal(a, b)
    for a, b in zip(cql.policy.actor.parameters(), sac.policy.actor.parameters(), strict=True):
        assert torch.equal(a, b)
    assert cql.alpha == sac.alpha


def test_sampled_actions_are_uniform_then_the_policys_at_s_and_at_next_s() -> None:
    algo = build(CQLConfig, CQL, n_action_samples=400)
    batch = transitions(2)
    obs, next_obs = torch.as_tensor(batch["obs"]), torch.as_tensor(batch["next_obs"])
    actions, log_density = algo.action_samples(obs, next_obs)
    assert actions.shape == (2, 1200, 2) and log_density.shape == (2, 1200)
    uniform = actions[:, :400]
    assert uniform.min() >= -1 and uniform.max() <= 1
    assert uniform.mean().abs() < 0.05 and (uniform.var() - 1 / 3).abs() < 0.03
    torch.testing.assert_close(log_density[:, :400], torch.full((2, 400), -2 * math.log(2.0)))
    with torch.no_grad():  # the policy's actions: tanh of its Gaussian at s, then at s'
        for states, part in ((obs, actions[:, 400:800]), (next_obs, actions[:, 800:])):
            mean, log_std = algo.policy.actor.gaussian(states)
            u = torch.atanh(part.clamp(-1 + 1e-6, 1 - 1e-6))
            z = (u - mean[:, None]) / log_std.exp()[:, None]
            assert z.mean().abs() < 0.1 and (z.std() - 1).abs() < 0.1


def test_cql_is_registered_acts_as_sac_and_refuses_a_negative_weight_in_one_line() -> None:
    spec = get_algorithm("CQL")
    cfg = spec.config_cls()
    assert cfg.learn_start == 0 and cfg.random_steps == 0 and cfg.n_action_samples == 10
    assert spec.policy_cls is SACPolicy
    assert isinstance(spec.algorithm_cls(cfg, OBS, ACTIONS, CPU), CQL)
    with pytest.raises(ValueError) as refused:
        load_config(None, ["general_cfg.algo_name=CQL", "algo_cfg.cql_alpha=-1"])
    (line,) = str(refused.value).splitlines()
    assert "algo_cfg.cql_alpha=-1" in line and "0 <= cql_alpha" in line, line


def test_the_pendulum_datasets_actions_are_in_env_units_as_sacs_workers_store_them() -> None:
    env = gym.make("Pendulum-v1")
    (episode,) = pendulum_episodes(200, noise=1.0, seed=0)
    policy = SACPolicy(CQLConfig(), env.observation_space, env.action_space, CPU)
    stored, _ = policy.act(episode["obs"], explore=True, env_steps=0)  # what a worker stores
    for actions in (episode["actions"], stored):
        assert actions.dtype == np.float32 and actions.shape == (200, 1)
        assert actions.min() >= -2.0 and actions.max() <= 2.0
    assert np.abs(episode["actions"]).max() > 1.5  # torques, not [-1, 1]
    assert episode["obs"].shape == (200, 3) and episode["truncated"][-1]


def learned_return(seed: int) -> float:
    """CQL's greedy return on 10 fixed Pendulum episodes after 4000 updates of 64-unit
    networks on 40k steps of the controller with torque noise of std 2."""
    layers = mlp_layers(64, 64)
    cfg = CQLConfig(
        actor_layers=layers,
        critic_layers=layers,
        actor_lr=1e-3,
        critic_lr=1e-3,
        alpha_lr=1e-3,
        cql_alpha=10.0,
        n_action_samples=4,
    )
    return pendulum_learned_return(CQL, cfg, updates=4000, seed=seed)


@pytest.mark.slow
def test_cql_learns_pendulum_from_a_noisy_controllers_episodes() -> None:
    """The data's own mean return is about -450 (tests/support/pendulum_data.py); the
    learnt greedy policy's (:func:`learned_return`): -180 to -204 over seeds 1-5, 45-50 s
    each on two shared CPU cores."""
    torch.set_num_threads(1)
    started = time.monotonic()
    mean_return = learned_return(seed=1)
    assert mean_return >= -300, (mean_return, time.monotonic() - started)
