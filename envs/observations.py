"""Observation spaces: which ones the runtime takes, and how nested ones travel.

Plain spaces (``Box``, ``Discrete``, ``MultiDiscrete``, ``MultiBinary``) travel as they
come: one numpy array per batch of observations. A ``Dict`` or ``Tuple`` space (nested to
any depth, of those leaves) travels *packed*: one numpy structured array whose fields are
the leaves, named by their path (``"pos"``, ``"goal"``, ``"0"``, ``"arm.joints"``). Each
field is one column of that array, read as ``obs["pos"]`` without a copy; and since a
packed batch is still one array with rows on its first axis, everything that moves, stores,
samples, saves or pickles observations (chunks, n-step folding, replay shards, rollout
queues, trajectories, Ray's object store) takes it unchanged. Only the two ends look inside:
the env wrappers here pack what the env returns, and the policy's encoder
(``algos/observations.py``) reads the fields. The spaces the policy is given stay the env's
own ``Dict`` / ``Tuple``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

LEAF_SPACES = (spaces.Box, spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary)
NESTED_SPACES = (spaces.Dict, spaces.Tuple)
SUPPORTED = "Box, Discrete, MultiDiscrete, MultiBinary, and Dict or Tuple of these (nested)"


def unsupported_observation_space(space: gym.Space) -> str | None:
    """Why the runtime cannot take ``space`` as an observation space (None when it can)."""
    if isinstance(space, NESTED_SPACES):
        children = space.spaces.values() if isinstance(space, spaces.Dict) else space.spaces
        if not children:
            return f"the observation space {space} is empty; supported: {SUPPORTED}"
        for child in children:
            reason = unsupported_observation_space(child)
            if reason is not None:
                return reason
        return None
    if isinstance(space, LEAF_SPACES):
        return None
    return (
        f"the observation space {space} ({type(space).__name__}) is not supported; "
        f"supported: {SUPPORTED}"
    )


def is_nested(space: gym.Space) -> bool:
    return isinstance(space, NESTED_SPACES)


@dataclass(frozen=True)
class Leaf:
    """One leaf of a nested space: its field name, the keys that reach it, its space."""

    name: str
    keys: tuple[str | int, ...]
    space: gym.Space


def leaves(space: gym.Space, keys: tuple[str | int, ...] = ()) -> Iterator[Leaf]:
    """The leaves of ``space`` in its own order (a plain space is one leaf, named ``""``)."""
    if isinstance(space, spaces.Dict):
        for key, child in space.spaces.items():
            yield from leaves(child, (*keys, key))
    elif isinstance(space, spaces.Tuple):
        for index, child in enumerate(space.spaces):
            yield from leaves(child, (*keys, index))
    else:
        yield Leaf(".".join(str(k) for k in keys), keys, space)


def leaf_dtype(space: gym.Space) -> tuple[np.dtype, tuple[int, ...]]:
    """(dtype, shape) of one observation of a leaf space."""
    if isinstance(space, spaces.Discrete):
        return np.dtype(np.int64), ()
    assert space.dtype is not None and space.shape is not None
    return np.dtype(space.dtype), tuple(space.shape)


class PackedLayout:
    """The structured dtype of a nested space, and the packing both ways."""

    def __init__(self, space: gym.Space) -> None:
        self.space = space
        self.leaves = list(leaves(space))
        self.dtype = np.dtype(
            [(leaf.name, *leaf_dtype(leaf.space)) for leaf in self.leaves]  # type: ignore[misc]
        )

    def pack(self, observation: Any, rows: int | None = None) -> np.ndarray:
        """A nested observation (``rows=None``) or a batch of ``rows`` of them (dicts /
        tuples of arrays, as gymnasium's vector envs batch them) as one structured array."""
        packed = np.empty(() if rows is None else (rows,), dtype=self.dtype)
        for leaf in self.leaves:
            value = observation
            for key in leaf.keys:
                value = value[key]
            packed[leaf.name] = value
        return packed

    def unpack(self, packed: np.ndarray) -> Any:
        """The nested dicts / tuples of arrays that ``packed`` holds (for Minari, say)."""
        return self._unpack(self.space, packed, ())

    def _unpack(self, space: gym.Space, packed: np.ndarray, keys: tuple[str | int, ...]) -> Any:
        if isinstance(space, spaces.Dict):
            return {k: self._unpack(s, packed, (*keys, k)) for k, s in space.spaces.items()}
        if isinstance(space, spaces.Tuple):
            return tuple(self._unpack(s, packed, (*keys, i)) for i, s in enumerate(space.spaces))
        return np.array(packed[".".join(str(k) for k in keys)])  # a copy, 0-d kept


class PackedObservation(gym.ObservationWrapper):
    """One env whose nested observations come packed (its observation space stays the env's)."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.layout = PackedLayout(env.observation_space)

    def observation(self, observation: Any) -> np.ndarray:
        return self.layout.pack(observation)


class PackedVectorObservations(gym.vector.VectorWrapper):
    """A vector env whose batches of nested observations come packed, the final observations
    of the episodes that ended (``info["final_obs"]``) too."""

    def __init__(self, env: gym.vector.VectorEnv) -> None:
        super().__init__(env)
        self.layout = PackedLayout(env.single_observation_space)

    def reset(self, **kwargs: Any) -> tuple[np.ndarray, dict[str, Any]]:
        obs, info = self.env.reset(**kwargs)
        return self.layout.pack(obs, self.num_envs), self._pack_finals(info)

    def step(self, actions: Any) -> tuple[Any, Any, Any, Any, dict[str, Any]]:
        obs, rewards, terminated, truncated, info = self.env.step(actions)
        packed = self.layout.pack(obs, self.num_envs)
        return packed, rewards, terminated, truncated, self._pack_finals(info)

    def _pack_finals(self, info: dict[str, Any]) -> dict[str, Any]:
        if "final_obs" not in info:
            return info
        finals = info["final_obs"].copy()
        for i in np.flatnonzero(info["_final_obs"]):
            finals[i] = self.layout.pack(finals[i])
        return {**info, "final_obs": finals}


def packed_env(env: gym.Env) -> gym.Env:
    """``env``, its observations packed when its space is nested."""
    return PackedObservation(env) if is_nested(env.observation_space) else env


def packed_vector_env(envs: gym.vector.VectorEnv) -> gym.vector.VectorEnv:
    """``envs``, their observations packed when the space is nested."""
    return PackedVectorObservations(envs) if is_nested(envs.single_observation_space) else envs
