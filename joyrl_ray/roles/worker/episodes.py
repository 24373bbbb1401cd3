"""Episode bookkeeping for a worker's vector of envs: returns, lengths, trajectories.

Both work on whole chunks of ``[time, env]`` steps with a handful of numpy operations,
never per step: the worker's per-step loop only acts, steps the envs and keeps the arrays.
"""

from __future__ import annotations

import numpy as np

from joyrl_ray.batch import Batch
from joyrl_ray.wire.messages import Trajectory

TRAJECTORY_COLUMNS = ("obs", "actions", "rewards", "terminated", "truncated", "next_obs")


class EpisodeTracker:
    """Running returns and lengths of ``n_envs`` envs (raw env rewards, never clipped)."""

    def __init__(self, n_envs: int) -> None:
        self.returns = np.zeros(n_envs)
        self.lengths = np.zeros(n_envs, dtype=np.int64)

    def track(
        self, rewards: np.ndarray, done: np.ndarray, cut: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Add a chunk of ``[time, env]`` steps; returns the returns, lengths and ending rows
        (time index within the chunk) of the episodes that ended in it, in order of ending;
        those whose end ``cut`` marks (cut short by an env error) are left out.

        An episode's return is the cumulative reward at its last step minus that at the
        step before its first (or minus the return it carried into the chunk).
        """
        n_rows = len(rewards)
        if n_rows == 0:
            return np.zeros(0), np.zeros(0, np.int64), np.zeros(0, np.int64)
        totals = np.cumsum(rewards, axis=0, dtype=np.float64)
        rows, envs = np.nonzero(done)  # ordered by row, then env
        by_env = np.lexsort((rows, envs))  # each env's ends in order
        rows_e, envs_e = rows[by_env], envs[by_env]
        first = np.ones(len(rows_e), dtype=bool)  # the env's first end in this chunk
        first[1:] = envs_e[1:] != envs_e[:-1]
        previous = np.where(first, 0, np.roll(rows_e, 1))  # the env's previous end
        returns = totals[rows_e, envs_e] - np.where(
            first, -self.returns[envs_e], totals[previous, envs_e]
        )
        lengths = rows_e + np.where(first, 1 + self.lengths[envs_e], -previous)
        last = np.ones(len(rows_e), dtype=bool)  # the env's last end: what it carries on
        last[:-1] = envs_e[1:] != envs_e[:-1]
        self.returns += totals[-1]
        self.lengths += n_rows
        ended, at = envs_e[last], rows_e[last]
        self.returns[ended] = totals[-1, ended] - totals[at, ended]
        self.lengths[ended] = n_rows - 1 - at
        in_time_order = np.argsort(by_env)
        returns, lengths = returns[in_time_order], lengths[in_time_order].astype(np.int64)
        if cut is not None:
            kept = ~cut[rows, envs]
            return returns[kept], lengths[kept], rows[kept]
        return returns, lengths, rows

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

    def cut(self, chunk: Batch, error_cut: np.ndarray | None = None) -> list[Trajectory]:
        """Every episode that ends in ``chunk``, as columns over its steps (but those whose
        end ``error_cut`` marks: cut short by an env error)."""
        done = np.asarray(chunk["terminated"], bool) | np.asarray(chunk["truncated"], bool)
        finished: list[Trajectory] = []
        for env, parts in enumerate(self.open):
            start = 0
            for end in np.flatnonzero(done[:, env]):
                parts.append({k: chunk[k][start : end + 1, env] for k in TRAJECTORY_COLUMNS})
                if error_cut is None or not error_cut[end, env]:
                    finished.append({k: np.concatenate([p[k] for p in parts]) for k in parts[0]})
                parts.clear()
                start = int(end) + 1
            if start < len(done):
                parts.append({k: chunk[k][start:, env].copy() for k in TRAJECTORY_COLUMNS})
        return finished

    def reset(self) -> None:
        for parts in self.open:
            parts.clear()
