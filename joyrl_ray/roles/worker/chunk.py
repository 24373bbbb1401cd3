"""A worker's chunk: its steps written into ``[time, env]`` columns as they come."""

from __future__ import annotations

import numpy as np

from joyrl_ray.batch import ACTIONS, NEXT_OBS, OBS, REWARDS, TERMINATED, TRUNCATED, Batch


class Chunk:
    """One chunk's steps, written into ``[time, env]`` columns as they come.

    Each chunk gets fresh columns: the taken ones travel on (to replay, or as a rollout)
    and are never written again. Each step is written while its arrays are still in cache,
    which is far cheaper than stacking hundreds of step arrays at the end of a chunk.
    """

    def __init__(self, length: int) -> None:
        self.length = length
        self._clear()

    def _clear(self) -> None:
        self.columns: dict[str, np.ndarray] = {}
        self.ended: np.ndarray | None = None  # [time, env]: an episode ended at this step
        self.finals: list[np.ndarray] = []  # their true last observations, in row-major order
        self.t = 0

    def add(
        self,
        obs: np.ndarray,
        actions: np.ndarray,
        rewards: np.ndarray,
        terminated: np.ndarray,
        truncated: np.ndarray,
        extras: Batch,
        info: dict,
    ) -> None:
        """One vector step; ``info`` of a same-step autoreset names the episodes that ended."""
        t = self.t
        if t == 0:
            first = {OBS: obs, ACTIONS: actions, REWARDS: rewards}
            first.update({TERMINATED: terminated, TRUNCATED: truncated, **extras})
            self.columns = {
                key: np.empty((self.length, *np.shape(value)), np.asarray(value).dtype)
                for key, value in first.items()
            }
        columns = self.columns
        columns[OBS][t] = obs
        columns[ACTIONS][t] = actions
        columns[REWARDS][t] = rewards
        columns[TERMINATED][t] = terminated
        columns[TRUNCATED][t] = truncated
        for key, value in extras.items():
            columns[key][t] = value
        if "final_obs" in info:  # the envs were reset: keep the true last observations
            ended_now = info["_final_obs"]
            if self.ended is None:
                self.ended = np.zeros((self.length, len(ended_now)), dtype=bool)
            self.ended[t] = ended_now
            self.finals.extend(info["final_obs"][ended_now])
        self.t = t + 1

    @property
    def full(self) -> bool:
        return self.t >= self.length

    def take(self, last_next_obs: np.ndarray | None) -> Batch:
        """The steps added so far as columns; ``next_obs`` is the next step's ``obs`` (the
        last step's is ``last_next_obs``) except where an episode ended."""
        t = self.t
        if t == 0:
            self._clear()
            return {}
        columns = {key: column[:t] for key, column in self.columns.items()}
        obs = columns[OBS]
        next_obs = np.concatenate([obs[1:], np.asarray(last_next_obs, obs.dtype)[None]])
        if self.finals:
            assert self.ended is not None
            next_obs[self.ended[:t]] = np.stack(self.finals)
        columns[NEXT_OBS] = next_obs
        self._clear()
        return columns
