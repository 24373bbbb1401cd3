"""Envs for the env-family tests: big rewards, and constructors that lack a dependency."""

from __future__ import annotations

import gymnasium as gym
import numpy as np

from tests.support.custom_env import CountingEnv

BIG_REWARDS = (5.0, -3.0, 10.0, 2.0)  # one episode; clipped they would sum to 2


class BigRewardEnv(CountingEnv):
    """Rewards of magnitude > 1, whatever the action; an episode is ``len(BIG_REWARDS)`` steps."""

    def __init__(self) -> None:
        super().__init__(goal=len(BIG_REWARDS))

    def reward(self, action) -> float:
        return BIG_REWARDS[self.t]


class UnboundedActionEnv(CountingEnv):
    """A continuous action with no bounds (``Box(-inf, inf, (1,))``): SAC and TD3 squash
    their actions into the bounds, so they cannot act here."""

    def __init__(self) -> None:
        super().__init__()
        self.action_space = gym.spaces.Box(-np.inf, np.inf, shape=(1,), dtype=np.float32)

    def reward(self, action) -> float:
        return -float(np.square(action).sum())


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
