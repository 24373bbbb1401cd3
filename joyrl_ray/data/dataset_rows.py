"""Recorded episodes as the transitions a replay shard stores.

A dataset (collected trajectories or a Minari dataset) is a list of episodes, each a dict
of step columns (``obs``, ``actions``, ``rewards``, ``next_obs``, ``terminated``,
``truncated``; one row per step). They are folded here exactly as a worker folds its
steps (:class:`~joyrl_ray.data.buffers.nstep.NStepFolder`), so an algorithm learns from
a dataset with the same columns and targets as from its own workers. An episode that was
cut off mid-way (neither terminated nor truncated at its last step) ends as a truncated
one: its last transitions bootstrap from their final observation.
"""

from __future__ import annotations

import numpy as np

from joyrl_ray.batch import STEP_COLUMNS, TERMINATED, TRUNCATED, Batch, batch_rows, concat
from joyrl_ray.data.buffers.nstep import NStepFolder
from joyrl_ray.wire.messages import Trajectory


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
