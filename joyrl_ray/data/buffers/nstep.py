"""N-step folding of vector-env steps into ``rewards + discounts * V(next_obs)`` transitions.

Folding works on whole chunks (``[time, env]`` columns) with a handful of numpy
operations, not per step and env: it keeps the last ``n_step - 1`` steps of every env
(the carry) so that a transition may span two chunks.
"""

from __future__ import annotations

import numpy as np

from joyrl_ray.batch import (
    ACTIONS,
    DISCOUNTS,
    NEXT_OBS,
    OBS,
    REWARDS,
    STEP_COLUMNS,
    TERMINATED,
    TRUNCATED,
    Batch,
)


class NStepFolder:
    """Folds ``[time, env]`` steps of ``n_envs`` envs into n-step transitions.

    A transition starting at step ``t`` and spanning ``k`` steps has ``rewards`` =
    ``sum_{i<k} gamma^i r_{t+i}``, ``next_obs`` = the next_obs of step ``t+k-1`` and
    ``discounts`` = ``gamma^k``, or 0 if that step terminated. ``k = n_step`` unless the
    episode ends first; a truncated episode still bootstraps from its final observation.
    Extra columns (e.g. ``log_prob``) come from the starting step. Transitions come out
    env by env, in order of their starting step.
    """

    def __init__(self, n_envs: int, n_step: int, gamma: float) -> None:
        if n_envs <= 0 or n_step <= 0:
            raise ValueError(f"need n_envs > 0 and n_step > 0, got {n_envs}, {n_step}")
        self.n_envs = int(n_envs)
        self.n_step = int(n_step)
        self.gamma = float(gamma)
        self._carry: Batch | None = None  # the last n_step - 1 steps, [time, env]
        self._carry_emitted: np.ndarray | None = None  # [time, env]: already folded

    @property
    def pending(self) -> int:
        """Steps held back, waiting for the steps that complete their transition."""
        if self._carry_emitted is None:
            return 0
        return int((~self._carry_emitted).sum())

    def reset(self) -> int:
        """Forget the held-back steps (e.g. after an env error); returns how many."""
        dropped = self.pending
        self._carry = self._carry_emitted = None
        return dropped

    def add(self, step: Batch) -> Batch:
        """Fold one vector step (columns with a leading env axis)."""
        return self.fold({key: np.asarray(value)[None] for key, value in step.items()})

    def fold(self, chunk: Batch) -> Batch:
        """Fold ``[time, env]`` steps; returns the transitions they complete (maybe 0 rows)."""
        missing = set(STEP_COLUMNS) - chunk.keys()
        if missing:
            raise KeyError(f"steps lack columns {sorted(missing)}")
        if np.shape(chunk[REWARDS])[1] != self.n_envs:
            raise ValueError(f"expected {self.n_envs} envs, got {np.shape(chunk[REWARDS])[1]}")
        new = np.shape(chunk[REWARDS])[0]
        if self._carry is not None:
            steps = {k: np.concatenate([self._carry[k], chunk[k]]) for k in chunk}
            emitted = np.concatenate([self._carry_emitted, np.zeros((new, self.n_envs), bool)])
        else:
            steps = {k: np.asarray(v) for k, v in chunk.items()}
            emitted = np.zeros((new, self.n_envs), bool)
        out, emit = self._fold(steps, emitted)
        keep = self.n_step - 1
        if keep:
            self._carry = {k: v[-keep:].copy() for k, v in steps.items()}  # callers reuse arrays
            self._carry_emitted = (emitted | emit)[-keep:]
        return out

    def _fold(self, steps: Batch, emitted: np.ndarray) -> tuple[Batch, np.ndarray]:
        length, n, gamma = len(emitted), self.n_step, self.gamma
        terminated = np.asarray(steps[TERMINATED], bool)
        done = terminated | np.asarray(steps[TRUNCATED], bool)
        t = np.arange(length)[:, None]
        # First episode end at or after each step (length when none in sight).
        ends = np.where(done, t, length)
        next_end = np.minimum.accumulate(ends[::-1], axis=0)[::-1]
        last = np.minimum(t + n - 1, next_end)  # the step each transition ends on
        emit = ~emitted & (last < length)
        rows_t, rows_e = np.nonzero(emit.T)[::-1]  # env-major, then by starting step
        last_t = last[rows_t, rows_e]
        span = last_t - rows_t + 1
        rewards = np.zeros(len(rows_t), dtype=np.float64)
        step_rewards = np.asarray(steps[REWARDS], dtype=np.float64)
        for i in range(n):
            inside = i < span
            rewards[inside] += gamma**i * step_rewards[rows_t[inside] + i, rows_e[inside]]
        discounts = np.where(terminated[last_t, rows_e], 0.0, gamma ** span.astype(np.float64))
        out = {
            key: value[rows_t, rows_e]
            for key, value in steps.items()
            if key not in (REWARDS, NEXT_OBS, TERMINATED, TRUNCATED)
        }
        out[OBS] = steps[OBS][rows_t, rows_e]
        out[ACTIONS] = steps[ACTIONS][rows_t, rows_e]
        out[REWARDS] = rewards.astype(np.float32)
        out[NEXT_OBS] = steps[NEXT_OBS][last_t, rows_e]
        out[DISCOUNTS] = discounts.astype(np.float32)
        return out, emit
