"""Injected env failures (``general_cfg.fault_injection.env_error_rate``), for checking that
a run survives a flaky simulator: the wrapped env's ``step`` raises at random."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np


class InjectedEnvError(RuntimeError):
    """What a flaky env raises on purpose."""


class RandomStepErrors(gym.Wrapper):
    """Raises :class:`InjectedEnvError` from ``step`` with probability ``rate``."""

    def __init__(self, env: gym.Env, rate: float, seed: int | None) -> None:
        super().__init__(env)
        self.rate = rate
        self.draws = np.random.default_rng(seed)

    def step(self, action: Any) -> Any:
        if self.draws.random() < self.rate:
            rate = self.rate
            raise InjectedEnvError(f"injected env error (fault_injection.env_error_rate={rate})")
        return self.env.step(action)


def with_step_errors(
    make: Callable[[], gym.Env], rate: float, seed: int | None, n_envs: int
) -> list[Callable[[], gym.Env]]:
    """``n_envs`` copies of ``make`` whose envs fail at ``rate`` per step.

    Each env's draws are seeded here, in the caller: an async vector env builds its envs in
    subprocesses, each from its own copy of the thunk, where a shared generator would give
    them all the same draws.
    """
    seeds = np.random.default_rng(seed).integers(2**31, size=n_envs).tolist()
    return [_with_errors(make, rate, int(s)) for s in seeds]


def _with_errors(make: Callable[[], gym.Env], rate: float, seed: int) -> Callable[[], gym.Env]:
    return lambda: RandomStepErrors(make(), rate, seed)
