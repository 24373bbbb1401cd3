"""The one type that carries data between roles: a ``Batch`` of named numpy columns.

Every column's first axis is the row (transition) axis; an on-policy rollout is
``[time, env, ...]``. Workers produce the step columns, the DataServer adds the replay
columns when it samples, and the algorithm reads them (see ``algos/base.py``). Nothing
here imports torch or ray, so every role (the DataServer included) can import it.
"""

from __future__ import annotations

import numpy as np

Batch = dict[str, np.ndarray]

# Step columns, one row per env step (written by workers).
OBS = "obs"
ACTIONS = "actions"
REWARDS = "rewards"
NEXT_OBS = "next_obs"  # the true next observation (the final one when an episode ended)
TERMINATED = "terminated"
TRUNCATED = "truncated"
STEP_COLUMNS = (OBS, ACTIONS, REWARDS, NEXT_OBS, TERMINATED, TRUNCATED)
# On-policy rollouts: the steps learned from (False: an env's failed step, kept only to keep
# the ``[time, env]`` grid whole; see joyrl_ray.roles.worker.env_guard).
VALID = "valid"

# Off-policy transitions (n-step folded by workers): target = rewards + discounts * V(next_obs).
DISCOUNTS = "discounts"

# Sequence replay rows (cut by workers, ``[L, ...]`` per row): which steps are real (an
# episode's tail is padded), and how many env steps the row stores for the first time.
MASK = "mask"
MEMORY = "memory"  # a recurrent policy's memory each step was acted from; a row's first step's
NEW_STEPS = "new_steps"

# Added by a replay shard (DataServer) to every sampled batch.
SLOTS = "slots"  # replay slots the rows were read from
GENERATIONS = "generations"  # write count of each slot at sampling time
WEIGHTS = "weights"  # importance-sampling weights (ones for uniform replay)


def batch_rows(batch: Batch) -> int:
    """Rows of a batch (0 for an empty one)."""
    return len(next(iter(batch.values()))) if batch else 0


def concat(batches: list[Batch], axis: int = 0) -> Batch:
    """Columns of several batches joined along ``axis`` (0: rows; 1: envs of rollouts)."""
    return {key: np.concatenate([b[key] for b in batches], axis=axis) for key in batches[0]}


def real_steps(rollout: Batch) -> int:
    """The env steps of a ``[time, env]`` rollout that are learned from (every one but an
    env's failed steps)."""
    if VALID in rollout:
        return int(np.count_nonzero(rollout[VALID]))
    return int(np.prod(np.shape(rollout[REWARDS])[:2]))


def take_envs(rollout: Batch, start: int, stop: int) -> Batch:
    """The env columns ``start:stop`` of a ``[time, env, ...]`` rollout."""
    return {key: value[:, start:stop] for key, value in rollout.items()}
