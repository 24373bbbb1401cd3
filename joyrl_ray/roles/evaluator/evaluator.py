"""Deterministic evaluation episodes on an env of their own (never the training envs).

:class:`Evaluator` plays greedy episodes with a given policy (test-mode videos use it
directly). :class:`OnlineEvaluator` is the role that evaluates checkpoints beside learning:
on a thread of the driver on the Ray backend, an object the driver calls in between turns
in one process. The learner never waits for it.

An evaluation's episodes run side by side; with ``env_cfg.vector_mode: async`` each in a
subprocess of its own, so an evaluation on a slow env costs about one episode's time. At
the end of a run an evaluation still running is interrupted (:meth:`OnlineEvaluator.
interrupt`): a thread still acting with torch while the interpreter exits aborts it.

An env that raises (at reset or step) does not fail the evaluation, as it does not stop a
worker: the episode is dropped, the env rebuilt and a fresh episode run in its place, up to
as many env errors as the evaluation has episodes (see :class:`EvalEpisodes`).
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
from envs.faults import close_broken, with_step_errors
from envs.observations import packed_env
from envs.registry import make_env, make_env_fn
from envs.vector import close_vector_env, make_vector_env
from joyrl_ray.normalization import FrozenObsNorm
from joyrl_ray.roles.evaluator.config import EvaluatorConfig
from joyrl_ray.roles.evaluator.results import EvalEpisodes, EvalResult
from joyrl_ray.seeding import derive_seed

INJECTED_ERRORS_KEY = "eval_env_error_rate"  # of general_cfg.fault_injection


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
        env_error_rate: float = 0.0,
        normalization: dict[str, Any] | None = None,
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
        self.env_error_rate = env_error_rate  # injected (fault_injection.eval_env_error_rate)
        self.builds = 0  # envs built: each build draws its injected errors from its own seed
        self.env = self._with_errors(self.env)  # the first env too
        self.obs_norm = FrozenObsNorm.of(normalization)  # a checkpoint's, never updated

    def use_normalization(self, normalization: dict[str, Any] | None) -> None:
        """Act on observations normalized by these statistics (a checkpoint's)."""
        self.obs_norm = FrozenObsNorm.of(normalization)

    def _act(self, obs: np.ndarray) -> np.ndarray:
        """Greedy actions for a batch of the env's observations."""
        if self.obs_norm is not None:
            obs = self.obs_norm(obs)
        actions, _ = self.policy.act(obs, explore=False, env_steps=0)
        return actions

    def _fault_seed(self) -> int | None:
        """The seed of the next build's injected errors: a stream apart from the workers'."""
        self.builds += 1
        return derive_seed(self.seed, "faults", self.stream, self.builds)

    def _with_errors(self, env: gym.Env) -> gym.Env:
        (make,) = self._makes_with_errors(lambda: env, 1)
        return make()

    def _makes_with_errors(
        self, make: Callable[[], gym.Env], n_envs: int
    ) -> list[Callable[[], gym.Env]]:
        rate, seed = self.env_error_rate, self._fault_seed()
        return with_step_errors(make, rate, seed, n_envs, INJECTED_ERRORS_KEY)

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
        self.policy.reset_memory(1)
        total, length = 0.0, 0
        while True:
            if on_step is not None:
                on_step(self.env)
            action = self._act(obs[None])
            obs, reward, terminated, truncated, _ = self.env.step(self.policy.env_action(action)[0])
            total += float(reward)
            length += 1
            if terminated or truncated:
                if on_step is not None:
                    on_step(self.env)
                return total, length

    def evaluate(self, n_episodes: int, interrupted: threading.Event | None = None) -> EvalEpisodes:
        """``n_episodes`` greedy episodes side by side, one env each, acting for all of them
        in one forward pass per step: the episodes (and seeds) of ``run_episode`` called
        ``n_episodes`` times, in a fraction of its time (an evaluation must keep up with
        the checkpoints, or the one that solved the env may be skipped). An episode whose
        env raises is replaced (:class:`EvalEpisodes`). Raises
        :class:`EvaluationInterrupted` when ``interrupted`` is set meanwhile."""
        episodes = EvalEpisodes(n_episodes)
        if self.vector_mode == "async":
            while not episodes.ended:
                self._run_in_subprocesses(episodes.to_start(0), episodes, interrupted)
            return episodes
        envs = self._sync_envs(n_episodes)
        self.policy.reset_memory(len(envs))
        running: dict[int, _Running] = {}  # env index -> its episode
        while not episodes.ended:
            self._start_episodes(envs, running, episodes)
            if running:
                _check(interrupted)
                self._step_in_turn(envs, running, episodes)
        return episodes

    def _sync_envs(self, n: int) -> list[gym.Env]:
        while len(self.side_envs) < n - 1:
            self.side_envs.append(self._with_errors(self.make()))
        return [self.env, *self.side_envs][:n]

    def _start_episodes(
        self, envs: list[gym.Env], running: dict[int, _Running], episodes: EvalEpisodes
    ) -> None:
        """Reset the idle envs, in order, while episodes are left to start."""
        for i, env in enumerate(envs):
            if episodes.ended:
                return
            if i in running or episodes.to_start(len(running)) <= 0:
                continue
            try:
                running[i] = _Running(env.reset(seed=self._episode_seed())[0])
            except Exception as exc:
                self._env_failed(envs, i, episodes, exc, "reset")

    def _step_in_turn(
        self, envs: list[gym.Env], running: dict[int, _Running], episodes: EvalEpisodes
    ) -> None:
        """One step of every running episode; those that end or fail leave ``running``.

        The policy acts for one row per env, idle ones included (their actions unused), so
        that a recurrent policy's memory of each row stays that env's episode's.
        """
        actions = self._act(_rows(len(envs), running))
        env_actions = self.policy.env_action(actions)
        ended = np.zeros(len(envs), dtype=bool)
        for i, episode in list(running.items()):
            if episodes.ended:  # past its error budget: the evaluation has failed
                return
            try:
                episode.obs, reward, terminated, truncated, _ = envs[i].step(env_actions[i])
            except Exception as exc:
                del running[i]
                ended[i] = True
                self._env_failed(envs, i, episodes, exc, "step")
                continue
            episode.ret += float(reward)
            episode.length += 1
            if terminated or truncated:
                del running[i]
                ended[i] = True
                episodes.finish(episode.ret, episode.length)
        self.policy.episodes_ended(ended)

    def _env_failed(
        self, envs: list[gym.Env], i: int, episodes: EvalEpisodes, exc: Exception, where: str
    ) -> None:
        """Count the error and the episode it drops; rebuild env ``i``."""
        episodes.env_failed(exc, where, dropped=1)
        close_broken(envs[i])
        envs[i] = self._with_errors(self.make())
        if i == 0:
            self.env = envs[0]
        else:
            self.side_envs[i - 1] = envs[i]

    def _run_in_subprocesses(
        self, n_episodes: int, episodes: EvalEpisodes, interrupted: threading.Event | None
    ) -> None:
        """``n_episodes`` of :meth:`evaluate`, each env stepping in a subprocess, all at once.

        Envs whose episode ended are reset by the vector env and stepped on with the rest
        (their steps are ignored): a vector step waits for the slowest env anyway. A
        sub-env that raises breaks the vector env: the episodes still running in it are
        dropped, and it is rebuilt next time.
        """
        envs = self._vector_env(n_episodes)
        try:
            self._play_in_vector_env(envs, episodes, interrupted)
        except BaseException:  # an interrupted vector env is rebuilt next time too
            self._drop_vector_env()
            raise

    def _vector_env(self, n_envs: int) -> VectorEnv:
        if self.vector_env is None or self.vector_env.num_envs != n_envs:
            if self.vector_env is not None:
                close_vector_env(self.vector_env)
            makes = self._makes_with_errors(self.make_in_subprocess, n_envs)
            self.vector_env = make_vector_env(makes, "async")
        return self.vector_env

    def _drop_vector_env(self) -> None:
        if self.vector_env is not None:
            close_vector_env(self.vector_env, broken=True)
            self.vector_env = None

    def _play_in_vector_env(
        self, envs: VectorEnv, episodes: EvalEpisodes, interrupted: threading.Event | None
    ) -> None:
        n = envs.num_envs
        running = np.ones(n, dtype=bool)
        try:
            obs, _ = envs.reset(seed=[self._episode_seed() for _ in range(n)])
        except Exception as exc:
            self._vector_env_failed(episodes, exc, "reset", n)
            return
        self.policy.reset_memory(n)
        returns, lengths = np.zeros(n), np.zeros(n, dtype=np.int64)
        while running.any():
            _check(interrupted)
            actions = self._act(obs)
            try:
                obs, rewards, terminated, truncated, _ = envs.step(self.policy.env_action(actions))
            except Exception as exc:
                self._vector_env_failed(episodes, exc, "step", int(running.sum()))
                return
            self.policy.episodes_ended(terminated | truncated)
            returns[running] += rewards[running]
            lengths[running] += 1
            ended = running & (terminated | truncated)
            for j in np.flatnonzero(ended):
                episodes.finish(float(returns[j]), int(lengths[j]))
            running &= ~ended

    def _vector_env_failed(
        self, episodes: EvalEpisodes, exc: Exception, where: str, dropped: int
    ) -> None:
        episodes.env_failed(exc, where, dropped)
        self._drop_vector_env()

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
class _Running:
    """A running episode of a synchronous evaluation."""

    obs: Any
    ret: float = 0.0
    length: int = 0


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
            env_error_rate=cfg.env_error_rate,
        )
        self.episodes = cfg.episodes
        self.interrupted = threading.Event()

    def evaluate(
        self,
        weights: dict[str, np.ndarray],
        updates: int,
        env_steps: int,
        normalization: dict[str, Any] | None = None,
    ) -> EvalResult:
        """The checkpoint's weights, acting on observations normalized by its statistics."""
        self.policy.set_weights(weights)
        self.evaluator.use_normalization(normalization)
        episodes = self.evaluator.evaluate(self.episodes, self.interrupted)
        return EvalResult.of(updates, env_steps, episodes)

    def interrupt(self) -> None:
        """Make the evaluation running (and any later one) stop at its next step; safe to
        call from another thread."""
        self.interrupted.set()

    def close(self) -> None:
        self.evaluator.close()


def _rows(n: int, running: dict[int, _Running]) -> np.ndarray:
    """The observations of ``n`` envs by index: the running episodes', zeros for idle envs."""
    first = np.asarray(next(iter(running.values())).obs)
    rows = np.zeros((n, *first.shape), dtype=first.dtype)
    for i, episode in running.items():
        rows[i] = episode.obs
    return rows
