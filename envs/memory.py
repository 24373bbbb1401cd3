"""Envs that need memory: a feed-forward policy sees too little to act well in them.

``mask_velocity`` (an ``env_cfg.wrappers`` name) drops the velocity entries from a
classic-control or Box2D observation, as RL Zoo's ``CartPoleNoVel-v1`` does: the policy
has to infer velocities from the positions it saw before. :class:`CueRecallEnv` shows a
cue once and asks for it back after a delay of blank observations.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.envs.registration import parse_env_id

from envs.errors import EnvSpecError

#: env id -> (length of its observation, indices of the velocity entries that are dropped).
#: Ids match by name, any namespace or version: ``CartPole-v0`` is masked as ``CartPole-v1``.
VELOCITY_ENTRIES: dict[str, tuple[int, tuple[int, ...]]] = {
    "CartPole-v1": (4, (1, 3)),  # x, x dot, theta, theta dot
    "Pendulum-v1": (3, (2,)),  # cos theta, sin theta, theta dot
    "MountainCar-v0": (2, (1,)),  # position, velocity
    "MountainCarContinuous-v0": (2, (1,)),  # position, velocity
    "Acrobot-v1": (6, (4, 5)),  # cos/sin of both angles, both angular velocities
    "LunarLander-v3": (8, (2, 3, 5)),  # x, y, vx, vy, angle, angular velocity, two legs
}


def velocity_entry(env_id: str) -> tuple[int, tuple[int, ...]] | None:
    """(observation length, velocity indices) of ``env_id`` (``ns/Name-vN``, matched by
    ``Name``); None for an env not in the table."""
    name = parse_env_id(env_id)[1]
    return next((e for k, e in VELOCITY_ENTRIES.items() if parse_env_id(k)[1] == name), None)


def mask_velocity(env: gym.Env, env_cfg: Any) -> gym.Env:
    """``env`` with the velocity entries of its observation removed (a smaller Box)."""
    spec = env.unwrapped.spec
    entry = velocity_entry(spec.id) if spec is not None else None
    if spec is None or entry is None:
        shown = spec.id if spec is not None else f"{env_cfg.id} (no registered id)"
        raise EnvSpecError(
            f"env_cfg.wrappers: mask_velocity does not know which observation entries of "
            f"{shown} are velocities; supported ids (any version): {', '.join(VELOCITY_ENTRIES)}"
        )
    size, dropped = entry
    space = env.observation_space
    if not isinstance(space, gym.spaces.Box) or space.shape != (size,):
        raise EnvSpecError(
            f"env_cfg.wrappers: mask_velocity needs {spec.id}'s own observation, a Box of shape "
            f"({size},), got {type(space).__name__} {getattr(space, 'shape', None)}; "
            "list mask_velocity before wrappers that change observations"
        )
    keep = np.array([i for i in range(size) if i not in dropped], dtype=np.intp)
    new_space = gym.spaces.Box(low=space.low[keep], high=space.high[keep], dtype=space.dtype)
    return gym.wrappers.TransformObservation(env, lambda obs: obs[keep], new_space)


class CueRecallEnv(gym.Env):
    """Remember a cue through ``delay`` blank steps, then name it.

    Observation: ``Box(0, 1, (n_cues + 1,), float32)``; entries ``0 .. n_cues - 1`` are the
    cue as a one-hot, the last entry is the "answer now" flag. Action: ``Discrete(n_cues)``.

    An episode is exactly ``delay + 2`` steps:

    - ``reset`` draws the cue uniformly (from ``self.np_random``) and returns the one-hot
      cue, flag 0: the only observation that carries the cue;
    - the next ``delay + 1`` steps ignore the action, give reward 0 and return blank
      observations (all zeros), except that the last of them returns the flag alone
      (zeros, flag 1);
    - the step taken on that flagged observation is the answer: reward +1 if the action
      equals the cue, else ``-1 / (n_cues - 1)`` (-1 for two cues), and the episode
      terminates (the final observation is blank).

    The wrong-answer reward makes any policy that cannot recall the cue (a feed-forward one:
    every flagged observation is the same) score 0 on average for any ``n_cues``, while
    perfect recall scores 1.
    """

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(self, n_cues: int = 2, delay: int = 5, render_mode: str | None = None) -> None:
        if n_cues < 2 or delay < 0:
            raise ValueError(
                f"CueRecallEnv: n_cues={n_cues} (allowed: 2 or more), delay={delay} "
                "(allowed: 0 or more)"
            )
        self.n_cues, self.delay = int(n_cues), int(delay)
        self.render_mode = render_mode
        self.observation_space = gym.spaces.Box(0.0, 1.0, (self.n_cues + 1,), np.float32)
        self.action_space = gym.spaces.Discrete(self.n_cues)
        self.cue = 0
        self.t = 0

    def _blank(self, *, answer_now: bool = False) -> np.ndarray:
        obs = np.zeros(self.n_cues + 1, np.float32)
        obs[-1] = float(answer_now)
        return obs

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self.cue = int(self.np_random.integers(self.n_cues))
        self.t = 0
        obs = self._blank()
        obs[self.cue] = 1.0
        return obs, {}

    def step(self, action: Any):
        self.t += 1
        if self.t <= self.delay + 1:  # the cue step and the delay: no reward
            return self._blank(answer_now=self.t == self.delay + 1), 0.0, False, False, {}
        correct = int(action) == self.cue
        reward = 1.0 if correct else -1.0 / (self.n_cues - 1)
        return self._blank(), reward, True, False, {"correct": correct}
