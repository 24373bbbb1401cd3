"""PPO's learn() on hand-made rollouts: bookkeeping, lr schedule, and a bandit per space type.

The bandits are one-step episodes (every step terminated), so the advantage is just
``r - V(s)``: if the surrogate, log-probs or GAE had the wrong sign for an action type,
the return would fall instead of rise.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

from algos.ppo.config import PPOConfig
from algos.ppo.policy import PPO, PPOPolicy

OBS = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
SPACES = {
    "discrete": gym.spaces.Discrete(3),
    "multi_discrete": gym.spaces.MultiDiscrete([3, 4]),
    "gaussian": gym.spaces.Box(-1.0, 1.0, (2,), np.float32),
}


def make(space: gym.Space, **overrides: object) -> PPO:
    torch.manual_seed(0)
    algo = PPO(PPOConfig(**overrides), OBS, space, torch.device("cpu"))
    algo.seed(0)
    algo.policy.seed(0)
    return algo


def bandit_reward(kind: str, obs: np.ndarray, actions: np.ndarray) -> np.ndarray:
    """The best action depends on the sign of the first observation."""
    right = obs[:, 0] > 0
    if kind == "discrete":
        return (actions == np.where(right, 2, 0)).astype(np.float32)
    if kind == "multi_discrete":
        target = np.stack([np.where(right, 2, 0), np.where(right, 0, 3)], axis=1)
        return (actions == target).sum(axis=1).astype(np.float32)
    target = np.where(right, 0.5, -0.5)[:, None]
    return -np.square(np.clip(actions, -1, 1) - target).sum(axis=1).astype(np.float32)


def greedy_return(policy: PPOPolicy, kind: str, obs: np.ndarray) -> float:
    """The bandit's mean reward for the policy's greedy actions on ``obs``."""
    actions, _ = policy.act(obs, explore=False, env_steps=0)
    return float(bandit_reward(kind, obs, actions).mean())


def assert_learned(kind: str, before: float, after: float) -> None:
    """The greedy return rose, at least halfway from ``before`` to the best one."""
    best = {"discrete": 1.0, "multi_discrete": 2.0, "gaussian": 0.0}[kind]
    assert after > before and after >= best - 0.5 * abs(best - before), (before, after)


def rollout(policy: PPOPolicy, kind: str, rng: np.random.Generator, steps: int = 16, envs: int = 8):
    cols: dict[str, list[np.ndarray]] = {}
    for _ in range(steps):
        obs = rng.uniform(-1, 1, (envs, 2)).astype(np.float32)
        actions, extras = policy.act(obs, explore=True, env_steps=0)
        step = {
            "obs": obs,
            "actions": actions,
            "rewards": bandit_reward(kind, obs, actions),
            "next_obs": np.zeros_like(obs),
            "terminated": np.ones(envs, bool),
            "truncated": np.zeros(envs, bool),
            **extras,
        }
        for key, value in step.items():
            cols.setdefault(key, []).append(value)
    return {key: np.stack(values) for key, values in cols.items()}


@pytest.mark.parametrize("kind", sorted(SPACES))
def test_ppo_improves_a_bandit(kind: str) -> None:
    algo = make(SPACES[kind], lr=3e-3, n_epochs=4, n_minibatches=2, log_std_init=-1.0)
    rng = np.random.default_rng(0)
    obs = rng.uniform(-1, 1, (512, 2)).astype(np.float32)
    before = greedy_return(algo.policy, kind, obs)
    for _ in range(40):
        result = algo.learn(rollout(algo.policy, kind, rng))
    after = greedy_return(algo.policy, kind, obs)
    assert algo.updates == 40
    assert all(np.isfinite(v) for v in result.metrics.values()), result.metrics
    assert_learned(kind, before, after)


def test_linear_lr_schedule_and_state_round_trip() -> None:
    space = SPACES["discrete"]
    algo = make(
        space,
        lr=1e-3,
        lr_schedule="linear",
        lr_decay_steps=256,
        lr_end_factor=0.1,
        reward_scaling=True,
        n_epochs=1,
        value_clip=0.2,
    )
    rng = np.random.default_rng(1)
    lrs = [algo.learn(rollout(algo.policy, "discrete", rng)).metrics["lr"] for _ in range(3)]
    # 128 transitions per call: half-way, then the floor, then the floor again
    np.testing.assert_allclose(lrs, [1e-3 * 0.55, 1e-4, 1e-4], rtol=1e-6)
    restored = make(space, lr_schedule="linear", reward_scaling=True)
    restored.load_state_dict(algo.state_dict())
    assert restored.updates == 3 and restored.transitions_learned == 384
    assert restored.reward_scaler.stats.count == pytest.approx(algo.reward_scaler.stats.count)


def test_target_kl_stops_the_epochs_early() -> None:
    algo = make(SPACES["gaussian"], lr=1e-2, n_epochs=50, n_minibatches=4, target_kl=1e-4)
    batch = rollout(algo.policy, "gaussian", np.random.default_rng(2))
    metrics = algo.learn(batch).metrics
    assert 1 <= metrics["minibatch_updates"] < 50 * 4
    assert algo.updates == 1


def test_unknown_lr_schedule_is_refused() -> None:
    with pytest.raises(ValueError, match="lr_schedule"):
        PPOConfig(lr_schedule="cosine").check()
