"""A worker's chunk: its steps written into ``[time, env]`` columns as they come."""

from __future__ import annotations

import numpy as np

from joyrl_ray.batch import (
    ACTIONS,
    NEXT_OBS,
    OBS,
    REWARDS,
    TERMINATED,
    TRUNCATED,
    VALID,
    Batch,
)


class Chunk:
    """One chunk's steps, written into ``[time, env]`` columns as they come.

    Each chunk gets fresh columns: the taken ones travel on (to replay, or as a rollout)
    and are never written again. Each step is written while its arrays are still in cache,
    which is far cheaper than stacking hundreds of step arrays at the end of a chunk.
    """

    def __init__(self, length: int, *, valid: bool = False) -> None:
        """``valid``: the chunk is a rollout whose env errors stay in it as steps not learned
        from (a ``VALID`` column, see :meth:`step_failed`)."""
        self.length = length
        self.with_valid = valid
        self.cut: np.ndarray | None = None  # the last taken chunk's: see step_failed
        self._clear()

    def _clear(self) -> None:
        self.columns: dict[str, np.ndarray] = {}
        self.ended: np.ndarray | None = None  # [time, env]: an episode ended at this step
        self.finals: list[np.ndarray] = []  # their true last observations, in row-major order
        self.failed: np.ndarray | None = None  # [time, env]: an env's failed step
        self.cuts: np.ndarray | None = None  # [time, env]: an episode cut short ends here
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

    def step_failed(self, env: int) -> None:
        """The last step added was env ``env``'s failed step: it is not learned from, and
        that env's step before it (in this chunk) ends its episode as truncated, as a time
        limit would (bootstrapped from the value of the observation the failed step had)."""
        t = self.t - 1
        if self.failed is None or self.cuts is None:
            self.failed = np.zeros((self.length, len(self.columns[REWARDS][0])), dtype=bool)
            self.cuts = np.zeros_like(self.failed)
        self.failed[t, env] = self.cuts[t, env] = True
        columns = self.columns
        if t > 0 and not (columns[TERMINATED][t - 1, env] or columns[TRUNCATED][t - 1, env]):
            columns[TRUNCATED][t - 1, env] = self.cuts[t - 1, env] = True

    @property
    def full(self) -> bool:
        return self.t >= self.length

    def take(self, last_next_obs: np.ndarray | None) -> Batch:
        """The steps added so far as columns; ``next_obs`` is the next step's ``obs`` (the
        last step's is ``last_next_obs``) except where an episode ended. ``cut`` is then
        where an episode was cut by an env error (the failed steps and the steps before
        them), or None."""
        t = self.t
        self.cut = None
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
        if self.with_valid:
            failed = np.zeros(columns[REWARDS].shape[:2], bool)
            if self.failed is not None and self.cuts is not None:
                failed, self.cut = self.failed[:t], self.cuts[:t]
            columns[VALID] = ~failed
        self._clear()
        return columns
