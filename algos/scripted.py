"""Policies that act without learning: uniformly at random, or by a script of the user's.

A multi-agent run may have agents that act with fixed behaviour (the opponent of a game, a
scripted teammate): ``multi_agent.policies.<name>.fixed: random`` or ``fixed:
my_pkg.my_module:MyPolicy``. Both are :class:`~algos.base.Policy` objects with no weights,
so a worker acts with them as with any other. A random one draws only legal actions where
the observation says which (an ``action_mask`` key of a ``Dict`` observation).

A scripted policy is a class of the user's, built with the agent's two spaces and asked for
a batch of actions at a time::

    class MyPolicy:
        def __init__(self, observation_space, action_space): ...
        def act(self, obs):  # a batch of observations (nested ones as dicts of arrays)
            return actions   # one per row
"""

from __future__ import annotations

import importlib
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from algos.base import Policy
from algos.masks import random_legal_actions
from algos.observations import ACTION_MASK, action_mask_space
from envs.observations import PackedLayout
from joyrl_ray.batch import Batch


def legal_actions(obs_space: gym.Space, obs: np.ndarray) -> np.ndarray | None:
    """``[B, n]`` bool: the legal actions of each row, when the observations say (a ``Dict``
    space with an ``action_mask`` key, packed); None when they do not."""
    if action_mask_space(obs_space) is None:
        return None
    return np.asarray(obs[ACTION_MASK]).reshape(len(obs), -1) != 0


class RandomPolicy(Policy):
    """Uniformly random legal actions (any action space)."""

    def __init__(self, obs_space: gym.Space, action_space: gym.Space) -> None:
        super().__init__(None, obs_space, action_space, torch.device("cpu"))

    @property
    def gamma(self) -> float:
        return 1.0

    def act(self, obs: np.ndarray, *, explore: bool, env_steps: int) -> tuple[np.ndarray, Batch]:
        rows = len(obs)
        legal = legal_actions(self.obs_space, obs)
        space = self.action_space
        if legal is not None and isinstance(space, gym.spaces.Discrete):
            return random_legal_actions(legal, self.rng), {}
        space.seed(int(self.rng.integers(2**31)))
        return np.stack([space.sample() for _ in range(rows)]), {}

    def acting_modules(self) -> dict[str, nn.Module]:
        return {}


class ScriptedPolicy(Policy):
    """A user's class (``pkg.module:Class``) acting for a batch of observations."""

    def __init__(self, path: str, obs_space: gym.Space, action_space: gym.Space) -> None:
        super().__init__(None, obs_space, action_space, torch.device("cpu"))
        self.script = load_script(path)(obs_space, action_space)

    @property
    def gamma(self) -> float:
        return 1.0

    def act(self, obs: np.ndarray, *, explore: bool, env_steps: int) -> tuple[np.ndarray, Batch]:
        return np.asarray(self.script.act(unpacked(self.obs_space, obs))), {}

    def acting_modules(self) -> dict[str, nn.Module]:
        return {}


def unpacked(space: gym.Space, obs: np.ndarray) -> Any:
    """A batch of observations as gymnasium gives them: nested ones as dicts / tuples of
    arrays (the runtime moves them packed)."""
    if not isinstance(space, gym.spaces.Dict | gym.spaces.Tuple):
        return obs
    return PackedLayout(space).unpack(obs)


def load_script(path: str) -> type[Any]:
    """The class ``pkg.module:Class`` names; ValueError (one line) when it names none."""
    module_name, _, name = path.partition(":")
    if not module_name or not name:
        raise ValueError(f"{path!r} is not an import path 'pkg.module:Class'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"cannot import module {module_name!r} ({exc})") from None
    cls = getattr(module, name, None)
    if not callable(cls) or not callable(getattr(cls, "act", None)):
        raise ValueError(f"{path!r} is not a class with an act(obs) method")
    return cls
