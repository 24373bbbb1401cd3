"""Recorded episodes for the dataset tests: an env played at random, written as a task
directory's ``results/trajs_0.pkl`` (the files ``collect_traj`` writes), with the
``config.yaml`` of the run that would have made them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import yaml

from joyrl_ray.batch import ACTIONS, NEXT_OBS, OBS, REWARDS, STEP_COLUMNS
from joyrl_ray.run.trajectories import TrajectoryWriter
from joyrl_ray.wire.messages import Trajectory
from tests.support.runs import make_cfg


def record_episodes(
    env_id: str, n_steps: int, act: Callable[[np.ndarray], Any], *, seed: int
) -> list[Trajectory]:
    """``n_steps`` steps of ``env_id``, each action ``act(obs)`` (the last episode may be cut
    off), each episode in the project's trajectory columns; episode ``k`` resets with seed
    ``seed * 10_000 + k``."""
    env = gym.make(env_id)
    episodes: list[Trajectory] = []
    taken = 0
    while taken < n_steps:
        obs, _ = env.reset(seed=seed * 10_000 + len(episodes))
        rows: dict[str, list[Any]] = {k: [] for k in STEP_COLUMNS}
        done = False
        while not done and taken < n_steps:
            action = act(obs)
            next_obs, reward, terminated, truncated, _ = env.step(action)
            step = (obs, action, reward, next_obs, bool(terminated), bool(truncated))
            for key, value in zip(STEP_COLUMNS, step, strict=True):
                rows[key].append(value)
            obs, taken, done = next_obs, taken + 1, terminated or truncated
        episode = {key: np.asarray(value) for key, value in rows.items()}
        for key in (OBS, NEXT_OBS, REWARDS):
            episode[key] = episode[key].astype(np.float32)
        if episode[ACTIONS].dtype.kind == "f":
            episode[ACTIONS] = episode[ACTIONS].astype(np.float32)
        episodes.append(episode)
    env.close()
    return episodes


def random_episodes(env_id: str, steps: int, seed: int = 1) -> list[Trajectory]:
    """``steps`` steps of ``env_id`` played uniformly at random."""
    space = gym.make(env_id).action_space
    space.seed(seed)
    return record_episodes(env_id, steps, lambda _obs: space.sample(), seed=seed)


def write_task_dir(path: Path, episodes: list[Trajectory], *overrides: str) -> Path:
    """``path`` as a task directory holding ``episodes``, its ``config.yaml`` that of a
    run with ``overrides`` (what ``export_minari`` reads for the env)."""
    (path / "results").mkdir(parents=True)
    writer = TrajectoryWriter(path / "results")
    writer.extend(episodes)
    writer.close()
    cfg = make_cfg(path.parent, *overrides)
    (path / "config.yaml").write_text(yaml.safe_dump(cfg.to_dict(), sort_keys=False))
    return path
