"""Recorded episodes as the transitions a replay shard stores.

A dataset (collected trajectories or a Minari dataset) is a list of episodes, each a dict
of step columns (``obs``, ``actions``, ``rewards``, ``next_obs``, ``terminated``,
``truncated``; one row per step). They are folded here exactly as a worker folds its
steps (:class:`~joyrl_ray.data.buffers.nstep.NStepFolder`), so an algorithm learns from
a dataset with the same columns and targets as from its own workers. An episode that was
cut off mid-way (neither terminated nor truncated at its last step) ends as a truncated
one: its last transitions bootstrap from their final observation.

A replay shard reads its part itself (:class:`DatasetSource`): what travels to it is
where the data is, not the data, so nothing large passes through Ray's object store and a
shard that Ray restarts reads its part again.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from envs.observations import PackedLayout, is_nested
from joyrl_ray.batch import STEP_COLUMNS, TERMINATED, TRUNCATED, Batch, batch_rows, concat
from joyrl_ray.data.buffers.nstep import NStepFolder
from joyrl_ray.wire.messages import Trajectory


class NotADataset(ValueError):
    """A file that holds no episodes; the message is one line."""


def episode_steps(episode: Trajectory) -> Batch:
    """One episode's step columns as ``[time, 1]`` (one env), its end marked."""
    steps = {key: np.asarray(episode[key])[:, None] for key in STEP_COLUMNS}
    if not (steps[TERMINATED][-1, 0] or steps[TRUNCATED][-1, 0]):
        steps[TRUNCATED] = steps[TRUNCATED].copy()
        steps[TRUNCATED][-1, 0] = True
    return steps


def folded_transitions(episodes: list[Trajectory], n_step: int, gamma: float) -> Batch:
    """Every step of ``episodes`` as an n-step transition (``rewards``, ``discounts``,
    ``next_obs`` as workers fold them), episode by episode, in order."""
    folder = NStepFolder(1, n_step, gamma)
    parts = []
    for episode in episodes:
        if len(episode[TERMINATED]):
            part = folder.fold(episode_steps(episode))
            if batch_rows(part):
                parts.append(part)
    if not parts:
        raise ValueError("the dataset holds no steps")
    return concat(parts)


def shard_part(rows: Batch, shard: int, n_shards: int) -> Batch:
    """Shard ``shard``'s contiguous part of ``rows`` (the parts of all shards are even)."""
    bounds = np.linspace(0, batch_rows(rows), n_shards + 1).astype(int)
    return {key: value[bounds[shard] : bounds[shard + 1]] for key, value in rows.items()}


# ----- reading -----
def read_trajectory_files(files: list[Path]) -> list[Trajectory]:
    """The episodes of ``trajs_*.pkl`` files (:mod:`joyrl_ray.run.trajectories`), in order."""
    episodes: list[Trajectory] = []
    for file in files:
        try:
            with file.open("rb") as f:
                loaded = pickle.load(f)
        except (pickle.UnpicklingError, EOFError, AttributeError, ImportError, OSError) as exc:
            raise NotADataset(f"{file} is not a trajectory file ({exc})") from None
        if not isinstance(loaded, list) or not all(_is_episode(e) for e in loaded):
            raise NotADataset(
                f"{file} is not a trajectory file (a list of episodes, each a dict of "
                f"{', '.join(STEP_COLUMNS)})"
            )
        episodes.extend(loaded)
    return episodes


def _is_episode(value: Any) -> bool:
    return isinstance(value, dict) and all(key in value for key in STEP_COLUMNS)


def read_minari(data_path: str) -> list[Trajectory]:
    """The episodes of the Minari dataset stored at ``data_path`` (its ``data`` folder)."""
    from minari import MinariDataset

    dataset = MinariDataset(data_path)
    space = dataset.observation_space
    layout = PackedLayout(space) if is_nested(space) else None
    return [minari_episode(episode, layout) for episode in dataset.iterate_episodes()]


def minari_episode(episode: Any, layout: PackedLayout | None) -> Trajectory:
    """A Minari episode (``T + 1`` observations) as the project's trajectory columns."""
    observations = episode.observations
    if layout is not None:
        observations = layout.pack(observations, rows=len(episode.actions) + 1)
    observations = np.asarray(observations)
    return {
        "obs": observations[:-1],
        "actions": np.asarray(episode.actions),
        "rewards": np.asarray(episode.rewards, dtype=np.float32),
        "next_obs": observations[1:],
        "terminated": np.asarray(episode.terminations, dtype=bool),
        "truncated": np.asarray(episode.truncations, dtype=bool),
    }


@dataclass(frozen=True)
class DatasetSource:
    """Where a dataset is (trajectory files, or a Minari dataset's ``data`` folder), and
    how its episodes fold into transitions."""

    files: tuple[str, ...] = ()
    minari_path: str | None = None
    n_step: int = 1
    gamma: float = 0.99

    def episodes(self) -> list[Trajectory]:
        if self.minari_path is not None:
            return read_minari(self.minari_path)
        return read_trajectory_files([Path(file) for file in self.files])

    def transitions(self) -> Batch:
        return folded_transitions(self.episodes(), self.n_step, self.gamma)

    def part(self, shard: int, n_shards: int) -> Batch:
        """Replay shard ``shard``'s transitions."""
        return shard_part(self.transitions(), shard, n_shards)
