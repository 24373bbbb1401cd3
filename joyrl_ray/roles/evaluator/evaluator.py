"""Deterministic evaluation episodes on an env of their own (never the training envs).

:class:`Evaluator` plays greedy episodes with a given policy (test-mode videos use it
directly). :class:`OnlineEvaluator` is the role that evaluates checkpoints beside learning:
on a thread of the driver on the Ray backend, an object the driver calls in between turns
in one process. The learner never waits for it.

An evaluation's episodes run side by side; with ``env_cfg.vector_mode: async`` each in a
subprocess of its own, so an evaluation on a slow env costs about one episode's time. At
the end of a run an evaluation still running is interrupted (:meth:`OnlineEvaluator.
interrupt`): a thread still acting with torch while the interpreter exits aborts it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from gymnasium.vector import VectorEnv

from algos import get_algorithm
from algos.base import Policy
from envs.observations import packed_env
from envs.registry import make_env, make_env_fn
from envs.vector import close_vector_env, make_vector_env
from joyrl_ray.roles.evaluator.config import EvaluatorConfig
from joyrl_ray.seeding import derive_seed


class EvaluationInterrupted(RuntimeError):
    """An evaluation stopped before its episodes ended (the run is ending)."""


class Evaluator:
    """Runs greedy episodes; each episode starts from a fresh seed."""

    def __init__(
        self,
        env_cfg: Any,
        policy: Policy,
        *,
        seed: int,
        max_step: int = -1,
        render_mode: str | None = None,
        stream: str = "eval",
        vector_mode: str = "sync",
    ) -> None:
        self.make = lambda: packed_env(
            make_env(env_cfg, max_episode_steps=max_step, render_mode=render_mode)
        )
        self.make_in_subprocess = make_env_fn(env_cfg, max_episode_steps=max_step)
        self.env = self.make()
        self.side_envs: list[gym.Env] = []  # evaluate()'s other envs, made when first needed
        self.vector_mode = vector_mode
        self.vector_env: VectorEnv | None = None  # async: evaluate()'s envs, one per episode
        self.policy = policy
        self.seed = seed
        self.stream = stream
        self.episodes_run = 0

    def _episode_seed(self) -> int:
        episode_seed = derive_seed(self.seed, self.stream, self.episodes_run)
        if episode_seed is None:  # unseeded run: still a different start every episode
            episode_seed = int(np.random.default_rng().integers(2**31))
        self.episodes_run += 1
        return episode_seed

    def run_episode(self, on_step: Callable[[Any], None] | None = None) -> tuple[float, int]:
        """One greedy episode: (return, length); ``on_step(env)`` sees every frame.

        ``on_step`` is called before every step and once after the last one (e.g. to
        capture ``env.render()``); with ``render_mode: human`` the env draws by itself.
        """
        obs, _ = self.env.reset(seed=self._episode_seed())
        total, length = 0.0, 0
        while True:
            if on_step is not None:
                on_step(self.env)
            action, _ = self.policy.act(obs[None], explore=False, env_steps=0)
            obs, reward, terminated, truncated, _ = self.env.step(self.policy.env_action(action)[0])
            total += float(reward)
            length += 1
            if terminated or truncated:
                if on_step is not None:
                    on_step(self.env)
                return total, length

    def evaluate(
        self, n_episodes: int, interrupted: threading.Event | None = None
    ) -> dict[str, Any]:
        """``n_episodes`` greedy episodes side by side, one env each, acting for all of them
        in one forward pass per step: the episodes (and seeds) of ``run_episode`` called
        ``n_episodes`` times, in a fraction of its time (an evaluation must keep up with
        the checkpoints, or the one that solved the env may be skipped). Raises
        :class:`EvaluationInterrupted` when ``interrupted`` is set meanwhile."""
        if self.vector_mode == "async":
            return self._evaluate_in_subprocesses(n_episodes, interrupted)
        while len(self.side_envs) < n_episodes - 1:
            self.side_envs.append(self.make())
        envs = [self.env, *self.side_envs][:n_episodes]
        obs = [env.reset(seed=self._episode_seed())[0] for env in envs]
        returns, lengths = [0.0] * len(envs), [0] * len(envs)
        running = list(range(len(envs)))
        while running:
            _check(interrupted)
            actions, _ = self.policy.act(
                np.stack([obs[i] for i in running]), explore=False, env_steps=0
            )
            still_running = []
            for i, action in zip(running, self.policy.env_action(actions), strict=True):
                obs[i], reward, terminated, truncated, _ = envs[i].step(action)
                returns[i] += float(reward)
                lengths[i] += 1
                if not (terminated or truncated):
                    still_running.append(i)
            running = still_running
        return summarize_returns(returns, lengths)

    def _evaluate_in_subprocesses(
        self, n_episodes: int, interrupted: threading.Event | None
    ) -> dict[str, Any]:
        """:meth:`evaluate` with each episode's env stepping in a subprocess, all at once.

        Envs whose episode ended are reset by the vector env and stepped on with the rest
        (their steps are ignored): a vector step waits for the slowest env anyway.
        """
        if self.vector_env is None or self.vector_env.num_envs != n_episodes:
            if self.vector_env is not None:
                close_vector_env(self.vector_env)
            self.vector_env = make_vector_env([self.make_in_subprocess] * n_episodes, "async")
        envs = self.vector_env
        try:
            obs, _ = envs.reset(seed=[self._episode_seed() for _ in range(n_episodes)])
            returns, lengths = np.zeros(n_episodes), np.zeros(n_episodes, dtype=np.int64)
            running = np.ones(n_episodes, dtype=bool)
            while running.any():
                _check(interrupted)
                actions, _ = self.policy.act(obs, explore=False, env_steps=0)
                obs, rewards, terminated, truncated, _ = envs.step(self.policy.env_action(actions))
                returns[running] += rewards[running]
                lengths[running] += 1
                running &= ~(terminated | truncated)
        except BaseException:  # a broken or interrupted vector env is rebuilt next time
            self.vector_env = None
            close_vector_env(envs, broken=True)
            raise
        return summarize_returns(returns.tolist(), lengths.tolist())

    def close(self) -> None:
        for env in [self.env, *self.side_envs]:
            env.close()
        if self.vector_env is not None:
            close_vector_env(self.vector_env)
            self.vector_env = None


def _check(interrupted: threading.Event | None) -> None:
    if interrupted is not None and interrupted.is_set():
        raise EvaluationInterrupted("the evaluation was interrupted: the run is ending")


@dataclass
class EvalResult:
    """One online evaluation of the checkpoint written at ``updates``."""

    updates: int
    env_steps: int
    returns: dict[str, Any]  # summarize_returns of its episodes


class OnlineEvaluator:
    """Evaluates checkpoints' acting weights while the learner goes on learning."""

    def __init__(self, cfg: EvaluatorConfig, spaces: tuple[gym.Space, gym.Space]) -> None:
        torch.set_num_threads(1)
        spec = get_algorithm(cfg.algo_name)
        self.policy = spec.policy_cls(cfg.algo, *spaces, torch.device("cpu"))
        self.evaluator = Evaluator(
            cfg.env,
            self.policy,
            seed=cfg.seed,
            max_step=cfg.max_step,
            vector_mode=cfg.env.vector_mode,
        )
        self.episodes = cfg.episodes
        self.interrupted = threading.Event()

    def evaluate(self, weights: dict[str, np.ndarray], updates: int, env_steps: int) -> EvalResult:
        self.policy.set_weights(weights)
        returns = self.evaluator.evaluate(self.episodes, self.interrupted)
        return EvalResult(updates, env_steps, returns)

    def interrupt(self) -> None:
        """Make the evaluation running (and any later one) stop at its next step; safe to
        call from another thread."""
        self.interrupted.set()

    def close(self) -> None:
        self.evaluator.close()


def summarize_returns(returns: list[float], lengths: list[int]) -> dict[str, Any]:
    r = np.asarray(returns, dtype=np.float64)
    if r.size == 0:
        return {"episodes": 0}
    return {
        "episodes": int(r.size),
        "return_mean": float(r.mean()),
        "return_std": float(r.std()),
        "return_min": float(r.min()),
        "return_max": float(r.max()),
        "length_mean": float(np.mean(lengths)),
        "length_min": int(np.min(lengths)),
        "length_max": int(np.max(lengths)),
    }
