"""One env of a worker's vector env that outlives its own errors (on-policy flows).

A rollout is a ``[time, env]`` grid learned from whole, so an env that raises must not
cost the other envs' steps, nor its own steps before the error. :class:`RebuildOnError`
wraps each env: when ``step`` raises it hands back the observation the failed step started
from, as a truncated step with no reward (the one step lost), and builds the env afresh;
the vector env's same-step autoreset then resets the fresh env, whose reset info names the
error (``info["env_error"]``). The worker marks that step as not learned from (``valid``),
cuts the env's episode at its last good step as a time limit would, and counts the error.

An env that fails again right after each of ``FAILED_REBUILDS_BEFORE_GIVING_UP`` rebuilds
(its step, or its rebuild and reset) raises :class:`EnvKeepsFailing`, which stops the run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym

from envs.faults import close_broken
from joyrl_ray.seeding import derive_seed
from joyrl_ray.wire.handles import first_line

#: The reset info key that names the error a rebuilt env replaced.
ENV_ERROR = "env_error"
FAILED_REBUILDS_BEFORE_GIVING_UP = 3


class EnvKeepsFailing(RuntimeError):
    """An env failed again right after each of its rebuilds; the message says where and
    what it raised (a plain message: an async vector env sends it across processes)."""


class RebuildOnError(gym.Wrapper):
    """``make()``'s env, built again (and reset from a stream of its own) after it raised."""

    env: gym.Env

    def __init__(self, make: Callable[[], gym.Env], seed: int | None = None) -> None:
        """``seed``: this env's rebuilds' reset stream (None: unseeded)."""
        super().__init__(make())
        self.make = make
        self.seed = seed
        self.rebuilds = 0
        self.error: str | None = None  # what the next reset reports
        self.failures = 0  # step errors since the last step that did not raise
        self.last_obs: Any = None

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        if self.error is None:
            obs, info = self.env.reset(**kwargs)
        else:
            obs, info = self._rebuilt()
            info = {**info, ENV_ERROR: self.error}
            self.error = None
        self.last_obs = obs
        return obs, info

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        try:
            obs, reward, terminated, truncated, info = self.env.step(action)
        except Exception as exc:  # any env failure: this step is lost, the env rebuilt
            self.error = f"step raised {first_line(exc)}"
            self.failures += 1
            if self.failures > FAILED_REBUILDS_BEFORE_GIVING_UP:
                raise EnvKeepsFailing(self.error) from exc
            return self.last_obs, 0.0, False, True, {}
        self.failures = 0
        self.last_obs = obs
        return obs, reward, terminated, truncated, info

    def _rebuilt(self) -> tuple[Any, dict[str, Any]]:
        """A fresh env, reset; its build or reset may fail a few times in a row."""
        failures = 0
        while True:
            close_broken(self.env)
            self.rebuilds += 1
            try:
                self.env = self.make()
                seed = None if self.seed is None else derive_seed(self.seed, self.rebuilds)
                return self.env.reset(seed=seed)
            except Exception as exc:
                failures += 1
                if failures >= FAILED_REBUILDS_BEFORE_GIVING_UP:
                    raise EnvKeepsFailing(f"reset raised {first_line(exc)}") from exc


def guarded(make: Callable[[], gym.Env], seed: int | None) -> Callable[[], gym.Env]:
    """``make`` whose env outlives its errors (see :class:`RebuildOnError`)."""
    return lambda: RebuildOnError(make, seed)
