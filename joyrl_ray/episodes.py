"""Episode bookkeeping for a worker's vector of envs: returns, lengths, trajectories.

Per vector step it does O(1) numpy work (two vector adds); the rare steps where an
episode ends cost a little more. Trajectories (``collect_traj``) are cut from whole
chunks of steps, never assembled step by step.
"""

from __future__ import annotations

import numpy as np

from joyrl_ray.batch import Batch
from joyrl_ray.messages import Trajectory

TRAJECTORY_COLUMNS = ("obs", "actions", "rewards", "terminated", "truncated", "next_obs")


class EpisodeTracker:
    """Running returns and lengths of ``n_envs`` envs (raw env rewards, never clipped)."""

    def __init__(self, n_envs: int) -> None:
        self.returns = np.zeros(n_envs)
        self.lengths = np.zeros(n_envs, dtype=np.int64)

    def add(self, rewards: np.ndarray) -> None:
        """Add one vector step in which no episode ended."""
        self.returns += rewards
        self.lengths += 1

    def step(self, rewards: np.ndarray, done: np.ndarray) -> tuple[list[float], list[int]]:
        """Add one vector step; returns the returns and lengths of the episodes that ended."""
        self.returns += rewards
        self.lengths += 1
        ended = np.flatnonzero(done)
        returns, lengths = self.returns[ended].tolist(), self.lengths[ended].tolist()
        self.returns[ended] = 0.0
        self.lengths[ended] = 0
        return returns, lengths

    def reset(self) -> int:
        """Forget every running episode (e.g. after an env error); returns how many there were."""
        running = int((self.lengths > 0).sum())
        self.returns[:] = 0.0
        self.lengths[:] = 0
        return running


class TrajectoryCutter:
    """Cuts whole episodes out of ``[time, env]`` chunks, keeping the open parts between them."""

    def __init__(self, n_envs: int) -> None:
        self.open: list[list[Batch]] = [[] for _ in range(n_envs)]

    def cut(self, chunk: Batch) -> list[Trajectory]:
        """Every episode that ends in ``chunk``, as columns over its steps."""
        done = np.asarray(chunk["terminated"], bool) | np.asarray(chunk["truncated"], bool)
        finished: list[Trajectory] = []
        for env, parts in enumerate(self.open):
            start = 0
            for end in np.flatnonzero(done[:, env]):
                parts.append({k: chunk[k][start : end + 1, env] for k in TRAJECTORY_COLUMNS})
                finished.append({k: np.concatenate([p[k] for p in parts]) for k in parts[0]})
                parts.clear()
                start = int(end) + 1
            if start < len(done):
                parts.append({k: chunk[k][start:, env].copy() for k in TRAJECTORY_COLUMNS})
        return finished

    def reset(self) -> None:
        for parts in self.open:
            parts.clear()
