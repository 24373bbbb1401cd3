"""Nested observations (Dict, Tuple) come out of the vector envs packed: one structured array
per batch, a field per leaf, the final observations of ended episodes too, in both vector
modes; unpacking gives back what the env returned."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from envs.goal_grid import GoalGridEnv
from envs.observations import PackedLayout, packed_env
from envs.vector import close_vector_env, make_vector_env


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("observation", ["dict", "tuple"])
def test_vector_envs_pack_observations_and_final_observations(mode: str, observation: str):
    envs = make_vector_env([lambda: GoalGridEnv(observation=observation)] * 3, mode)
    names = ("goal", "pos") if observation == "dict" else ("0", "1")
    try:
        obs, _ = envs.reset(seed=[1, 2, 3])
        assert obs.shape == (3,) and obs.dtype.names == names
        rng = np.random.default_rng(0)
        finals = 0
        for _ in range(60):
            obs, _, terminated, truncated, info = envs.step(rng.integers(0, 4, size=3))
            assert obs.dtype.names == names
            ended = terminated | truncated
            if ended.any():
                assert np.array_equal(info["_final_obs"], ended)
                for final in info["final_obs"][ended]:
                    assert final.shape == () and final.dtype.names == names
                    finals += 1
        assert finals > 0
    finally:
        close_vector_env(envs)


def test_unpacking_gives_back_what_the_env_returned():
    space = gym.spaces.Dict(
        {
            "arm": gym.spaces.Tuple((gym.spaces.Box(-1, 1, (3,)), gym.spaces.Discrete(5))),
            "camera": gym.spaces.Box(0, 255, (4, 4, 3), np.uint8),
            "flags": gym.spaces.MultiBinary(2),
        }
    )
    space.seed(0)
    layout = PackedLayout(space)
    assert layout.dtype.names == ("arm.0", "arm.1", "camera", "flags")
    observations = [space.sample() for _ in range(4)]
    batch = {
        "arm": tuple(np.stack([o["arm"][i] for o in observations]) for i in range(2)),
        "camera": np.stack([o["camera"] for o in observations]),
        "flags": np.stack([o["flags"] for o in observations]),
    }
    packed = layout.pack(batch, rows=4)
    for i, observation in enumerate(observations):
        assert space.contains(layout.unpack(packed[i]))
        np.testing.assert_array_equal(layout.unpack(packed[i])["camera"], observation["camera"])
        assert int(packed[i]["arm.1"]) == observation["arm"][1]
    unpacked = layout.unpack(packed)
    np.testing.assert_array_equal(unpacked["arm"][0], batch["arm"][0])


def test_a_single_env_packs_too_and_keeps_its_space():
    env = packed_env(GoalGridEnv())
    obs, _ = env.reset(seed=0)
    assert isinstance(env.observation_space, gym.spaces.Dict)
    assert obs.shape == () and obs.dtype.names == ("goal", "pos")
    assert env.observation_space.contains(env.layout.unpack(obs))
    plain = packed_env(gym.make("CartPole-v1"))
    assert isinstance(plain.reset(seed=0)[0], np.ndarray)
