"""Injected env failures (``general_cfg.fault_injection.env_error_rate`` for the workers'
envs, ``eval_env_error_rate`` for the online evaluator's), for checking that a run survives
a flaky simulator: the wrapped env's ``step`` raises at random. Also how either role closes
an env that raised."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import VectorEnv


class InjectedEnvError(RuntimeError):
    """What a flaky env raises on purpose."""


class RandomStepErrors(gym.Wrapper):
    """Raises :class:`InjectedEnvError` from ``step`` with probability ``rate`` (the config
    key ``key``, which the error names)."""

    def __init__(
        self, env: gym.Env, rate: float, seed: int | None, key: str = "env_error_rate"
    ) -> None:
        super().__init__(env)
        self.rate = rate
        self.key = key
        self.draws = np.random.default_rng(seed)

    def step(self, action: Any) -> Any:
        if self.draws.random() < self.rate:
            raise InjectedEnvError(f"injected env error (fault_injection.{self.key}={self.rate})")
        return self.env.step(action)


def with_step_errors(
    make: Callable[[], gym.Env],
    rate: float,
    seed: int | None,
    n_envs: int,
    key: str = "env_error_rate",
) -> list[Callable[[], gym.Env]]:
    """``n_envs`` copies of ``make`` whose envs fail at ``rate`` per step (plain copies when
    ``rate`` is 0).

    Each env's draws are seeded here, in the caller: an async vector env builds its envs in
    subprocesses, each from its own copy of the thunk, where a shared generator would give
    them all the same draws.
    """
    if rate <= 0:
        return [make] * n_envs
    seeds = np.random.default_rng(seed).integers(2**31, size=n_envs).tolist()
    return [_with_errors(make, rate, int(s), key) for s in seeds]


def close_broken(env: gym.Env | VectorEnv) -> None:
    """Close an env that raised; one that fails to close too is replaced anyway."""
    try:
        env.close()
    except Exception:
        pass


def _with_errors(
    make: Callable[[], gym.Env], rate: float, seed: int, key: str
) -> Callable[[], gym.Env]:
    return lambda: RandomStepErrors(make(), rate, seed, key)
