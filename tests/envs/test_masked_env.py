"""MaskedChoiceEnv: a new legal set every step (never empty), +1 for the best legal action,
0 for another legal one, the illegal penalty otherwise; the hidden values agree across
copies whatever their reset seeds, so a worker's and an evaluator's env pose one task."""

from __future__ import annotations

import numpy as np
import pytest

from envs import EnvConfig, make_env
from envs.masked import MaskedChoiceEnv


def test_every_step_has_a_legal_action_and_observations_fit_the_space() -> None:
    env = MaskedChoiceEnv(n_actions=4, legal_prob=0.1)
    obs, _ = env.reset(seed=0)
    for _ in range(200):
        assert env.observation_space.contains(obs) and obs["action_mask"].any()
        obs, *_ = env.step(env.action_space.sample())
        if env.t >= env.max_steps:
            obs, _ = env.reset()


def test_rewards_pay_the_best_legal_action_and_penalise_illegal_ones() -> None:
    env = MaskedChoiceEnv(n_actions=5, illegal_reward=-2.0)
    obs, _ = env.reset(seed=1)
    seen = set()
    for _ in range(300):
        mask = obs["action_mask"].astype(bool)
        best = env.best_legal()
        assert mask[best] and env.values[best] == env.values[mask].max()
        action = int(np.random.default_rng(len(seen)).integers(5))
        expected = -2.0 if not mask[action] else (1.0 if action == best else 0.0)
        obs, reward, terminated, truncated, info = env.step(action)
        assert reward == expected and info["illegal"] == (not mask[action]) and not truncated
        seen.add(expected)
        if terminated:
            obs, _ = env.reset()
    assert seen == {-2.0, 0.0, 1.0}


def test_an_episode_lasts_max_steps_and_the_best_return_is_max_steps() -> None:
    env = MaskedChoiceEnv(max_steps=5)
    env.reset(seed=2)
    rewards, terminated = [], False
    while not terminated:
        _, reward, terminated, _, _ = env.step(env.best_legal())
        rewards.append(reward)
    assert rewards == [1.0] * 5


def test_the_hidden_values_do_not_depend_on_the_reset_seed() -> None:
    a, b = MaskedChoiceEnv(), MaskedChoiceEnv()
    a.reset(seed=3)
    b.reset(seed=4)
    np.testing.assert_array_equal(a.values, b.values)
    assert not np.array_equal(MaskedChoiceEnv(value_seed=1).values, a.values)


def test_made_by_import_path_with_kwargs() -> None:
    env = make_env(EnvConfig(id="envs.masked:MaskedChoiceEnv", kwargs={"n_actions": 3}))
    obs, _ = env.reset(seed=0)
    assert env.action_space.n == 3 and obs["action_mask"].shape == (3,)


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="n_actions >= 2"):
        MaskedChoiceEnv(n_actions=1)
