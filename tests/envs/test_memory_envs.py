"""Envs that need memory: the mask_velocity wrapper and the cue recall task."""

from __future__ import annotations

import warnings
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from envs import EnvConfig, EnvSpecError, check_wrappers, make_env, probe_env
from envs.memory import VELOCITY_ENTRIES, CueRecallEnv
from tests.support.runs import needs_extra

#: env id -> indices mask_velocity keeps, written out rather than derived from the table
KEPT = {
    "CartPole-v1": [0, 2],
    "Pendulum-v1": [0, 1],
    "MountainCar-v0": [0],
    "MountainCarContinuous-v0": [0],
    "Acrobot-v1": [0, 1, 2, 3],
    "LunarLander-v3": [0, 1, 4, 6, 7],
}


def masked(env_id: str, *wrappers: str) -> gym.Env:
    return make_env(EnvConfig(id=env_id, wrappers=[*wrappers, "mask_velocity"]))


def paired_observations(env_id: str, seed: int, steps: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """(full, masked) observations of two copies of ``env_id`` under one seed and actions."""
    full, mask = gym.make(env_id), masked(env_id)
    full.action_space.seed(seed)
    pairs = [(full.reset(seed=seed)[0], mask.reset(seed=seed)[0])]
    for _ in range(steps):
        action = full.action_space.sample()
        full_obs, _, terminated, truncated, _ = full.step(action)
        pairs.append((full_obs, mask.step(action)[0]))
        if terminated or truncated:
            break
    full.close()
    mask.close()
    return pairs


def test_the_table_is_the_documented_one() -> None:
    assert set(VELOCITY_ENTRIES) == set(KEPT)


def test_cartpole_keeps_cart_position_and_pole_angle() -> None:
    pairs = paired_observations("CartPole-v1", seed=3, steps=8)
    assert len(pairs) == 9
    for full_obs, mask_obs in pairs:
        assert mask_obs.shape == (2,) and mask_obs.dtype == np.float32
        np.testing.assert_array_equal(mask_obs, full_obs[[0, 2]])


def test_pendulum_keeps_cos_and_sin_of_the_angle() -> None:
    for full_obs, mask_obs in paired_observations("Pendulum-v1", seed=5, steps=8):
        assert mask_obs.shape == (2,)
        np.testing.assert_array_equal(mask_obs, full_obs[:2])
        assert mask_obs[0] ** 2 + mask_obs[1] ** 2 == pytest.approx(1.0, abs=1e-5)


@pytest.mark.parametrize("env_id", sorted(KEPT))
def test_observation_space_is_the_full_box_sliced(env_id: str) -> None:
    if env_id.startswith("LunarLander"):
        needs_extra("Box2D", "requirements-box2d.txt")
    full_space = gym.make(env_id).observation_space
    env = masked(env_id)
    space, keep = env.observation_space, KEPT[env_id]
    assert isinstance(space, gym.spaces.Box) and space.shape == (len(keep),)
    assert space.dtype == full_space.dtype
    np.testing.assert_array_equal(space.low, full_space.low[keep])
    np.testing.assert_array_equal(space.high, full_space.high[keep])
    obs, _ = env.reset(seed=0)
    assert space.contains(obs)
    assert space.contains(env.step(env.action_space.sample())[0])
    env.close()


def test_ids_match_by_name_whatever_the_version() -> None:
    env = masked("CartPole-v0")
    assert env.observation_space.shape == (2,)
    env.close()


def test_the_driver_accepts_the_name_and_probes_the_masked_spaces() -> None:
    check_wrappers(["mask_velocity"])
    obs_space, action_space = probe_env(EnvConfig(id="Acrobot-v1", wrappers=["mask_velocity"]))
    assert obs_space.shape == (4,) and action_space == gym.spaces.Discrete(3)


@pytest.mark.parametrize("env_id", ["Taxi-v4", "envs.memory:CueRecallEnv"])
def test_an_env_not_in_the_table_is_refused_before_anything_starts(env_id: str) -> None:
    with pytest.raises(EnvSpecError) as info:
        probe_env(EnvConfig(id=env_id, wrappers=["mask_velocity"]))
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("env_cfg.wrappers: mask_velocity ")
    assert env_id in message
    for supported in KEPT:
        assert supported in message


def test_an_observation_changed_by_an_earlier_wrapper_is_refused() -> None:
    with pytest.raises(EnvSpecError, match=r"list mask_velocity before wrappers"):
        masked("CartPole-v1", "frame_stack")


def play(env: CueRecallEnv, seed: int, answer: str) -> list[tuple[np.ndarray, float, bool, bool]]:
    """One episode: (observation, reward, terminated, truncated) after reset and each step.

    ``answer``: "recall" names the cue seen at reset, "wrong" another one, "zero" always 0.
    """
    obs, _ = env.reset(seed=seed)
    cue = int(np.argmax(obs[: env.n_cues]))
    pick = {"recall": cue, "wrong": (cue + 1) % env.n_cues, "zero": 0}[answer]
    trace = [(obs, 0.0, False, False)]
    while not (trace[-1][2] or trace[-1][3]):
        obs, reward, terminated, truncated, _ = env.step(pick)
        trace.append((obs, float(reward), terminated, truncated))
    return trace


@pytest.mark.parametrize(("n_cues", "delay"), [(2, 5), (3, 0), (4, 2)])
def test_the_cue_shows_only_at_reset_and_only_the_answer_step_is_flagged(
    n_cues: int, delay: int
) -> None:
    env = CueRecallEnv(n_cues=n_cues, delay=delay)
    for seed in range(10):
        trace = play(env, seed, "recall")
        observations = np.stack([obs for obs, *_ in trace])
        assert len(trace) == delay + 3  # the reset, then delay + 2 steps
        assert observations.shape[1:] == (n_cues + 1,) and observations.dtype == np.float32
        assert observations[0, :n_cues].sum() == 1.0 and observations[0, env.cue] == 1.0
        assert not observations[1:, :n_cues].any()
        flags = observations[:, -1].tolist()
        assert flags == [0.0] * (delay + 1) + [1.0, 0.0]


@pytest.mark.parametrize(("n_cues", "wrong"), [(2, -1.0), (3, -0.5), (5, -0.25)])
def test_a_right_answer_earns_one_and_a_wrong_one_loses(n_cues: int, wrong: float) -> None:
    env = CueRecallEnv(n_cues=n_cues, delay=3)
    for seed in range(10):
        for answer, reward in (("recall", 1.0), ("wrong", wrong)):
            trace = play(env, seed, answer)
            assert [r for _, r, *_ in trace] == [0.0] * (len(trace) - 1) + [reward]
            assert [t for *_, t, _ in trace] == [False] * (len(trace) - 1) + [True]
            assert not any(cut for *_, cut in trace)


@pytest.mark.parametrize("n_cues", [2, 3])
def test_a_policy_without_memory_scores_chance_and_recall_scores_one(n_cues: int) -> None:
    env = CueRecallEnv(n_cues=n_cues)
    returns = [sum(r for _, r, *_ in play(env, seed, "zero")) for seed in range(400)]
    assert abs(np.mean(returns)) < 0.15  # chance is 0; the standard error is about 0.05
    assert all(sum(r for _, r, *_ in play(env, s, "recall")) == 1.0 for s in range(20))


def test_cues_follow_the_seed() -> None:
    env = CueRecallEnv(n_cues=4)
    cues = [int(np.argmax(env.reset(seed=seed)[0])) for seed in range(40)]
    assert cues == [int(np.argmax(env.reset(seed=seed)[0])) for seed in range(40)]
    assert set(cues) == {0, 1, 2, 3}
    env.reset(seed=7)
    unseeded = [int(np.argmax(env.reset()[0])) for _ in range(40)]
    assert set(unseeded) == {0, 1, 2, 3}


def test_gymnasium_env_checker_passes_without_a_warning() -> None:
    # The render check only warns that a class built without gymnasium.make has no spec
    # to list render modes from; the env renders nothing.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(CueRecallEnv(), skip_render_check=True)
        check_env(CueRecallEnv(n_cues=3, delay=0), skip_render_check=True)


def test_class_id_takes_kwargs_from_env_cfg() -> None:
    env = make_env(EnvConfig(id="envs.memory:CueRecallEnv", kwargs={"n_cues": 3, "delay": 1}))
    assert env.observation_space.shape == (4,) and env.action_space == gym.spaces.Discrete(3)
    env.close()


@pytest.mark.parametrize("kwargs", [{"n_cues": 1}, {"delay": -1}])
def test_bad_kwargs_are_refused(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="CueRecallEnv"):
        CueRecallEnv(**kwargs)
