"""Envs for the env-family tests: big rewards, and constructors that lack a dependency."""

from __future__ import annotations

import gymnasium as gym
import numpy as np

BIG_REWARDS = (5.0, -3.0, 10.0, 2.0)  # one episode; clipped they would sum to 2


class BigRewardEnv(gym.Env):
    """Rewards of magnitude > 1, whatever the action; an episode is ``len(BIG_REWARDS)`` steps."""

    def __init__(self) -> None:
        self.observation_space = gym.spaces.Box(0.0, 1.0, shape=(1,), dtype=np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self.t = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(1, dtype=np.float32), {}

    def step(self, action):
        reward = BIG_REWARDS[self.t]
        self.t += 1
        obs = np.array([self.t / len(BIG_REWARDS)], dtype=np.float32)
        return obs, reward, self.t >= len(BIG_REWARDS), False, {}


class NeedsBox2DEnv(gym.Env):
    """Fails as gymnasium's LunarLander does when Box2D is not installed."""

    def __init__(self) -> None:
        raise gym.error.DependencyNotInstalled(
            "Box2D is not installed, you can install it by run `pip install swig` "
            'followed by `pip install "gymnasium[box2d]"`'
        )


class NeedsMujocoEnv(gym.Env):
    """Fails on a plain ``import mujoco``, as a user env built on MuJoCo would."""

    def __init__(self) -> None:
        raise ModuleNotFoundError("No module named 'mujoco'", name="mujoco")


class MissingRomEnv(gym.Env):
    """Fails as ale-py does when a ROM file is gone."""

    def __init__(self) -> None:
        raise FileNotFoundError("[Errno 2] No such file or directory: '/x/ale_py/roms/pong.bin'")


class BuggyEnv(gym.Env):
    """A bug in the env itself: no hint helps, the traceback must survive."""

    def __init__(self) -> None:
        raise ZeroDivisionError("division by zero")
