"""Algorithms and envs are found by name; users add their own without touching the runtime."""

from __future__ import annotations

import gymnasium as gym
import pytest

from algos import ALGORITHMS, get_algorithm
from envs import EnvConfig, EnvSpecError, check_env_id, make_env
from joyrl_ray.config import RunConfig, load_config
from joyrl_ray.data_needs import ReplayNeeds


def test_dqn_family_is_registered() -> None:
    assert {"DQN", "DoubleDQN", "DuelingDQN"} <= set(ALGORITHMS)
    spec = get_algorithm("DQN")
    assert isinstance(spec.policy_cls.data_needs(spec.config_cls()), ReplayNeeds)


def test_an_algorithm_of_ones_own_by_import_path() -> None:
    spec = get_algorithm("tests.support.custom_algo:COUNTING_DQN")
    assert spec.name == "CountingDQN" and spec.config_cls().batch_size == 8
    with pytest.raises(KeyError, match="not an AlgoSpec"):
        get_algorithm("tests.support.custom_env:CountingEnv")


def test_unknown_algorithm_lists_registered_names() -> None:
    with pytest.raises(KeyError, match="DQN"):
        get_algorithm("NoSuchAlgo")


def test_gymnasium_env_by_id() -> None:
    env = make_env(EnvConfig(id="CartPole-v1"), max_episode_steps=7)
    env.reset(seed=0)
    steps = 0
    while True:
        steps += 1
        *_, terminated, truncated, _ = env.step(0)
        if terminated or truncated:
            break
    assert steps <= 7


def test_custom_env_by_import_path() -> None:
    cfg = RunConfig.from_omegaconf(
        load_config(
            None, ["env_cfg.id=tests.support.custom_env:CountingEnv", "env_cfg.kwargs={goal: 3}"]
        )
    )
    env = make_env(cfg.env)
    env.reset(seed=0)
    assert env.step(1)[1] == 1.0 and env.unwrapped.goal == 3


def test_custom_env_by_gymnasium_register() -> None:
    gym.register("CountingEnv-v0", entry_point="tests.support.custom_env:CountingEnv")
    check_env_id("CountingEnv-v0")
    assert isinstance(make_env(EnvConfig(id="CountingEnv-v0")).unwrapped.goal, int)


def test_bad_import_path_is_named() -> None:
    with pytest.raises(EnvSpecError, match="tests.support.custom_env"):
        check_env_id("tests.support.custom_env:NoSuchEnv")
