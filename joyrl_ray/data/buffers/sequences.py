"""Cutting vector-env steps into fixed-length, overlapping sequences (sequence replay).

Each env's steps are cut into rows of ``length`` steps that start every ``stride`` steps of
an episode (consecutive rows share ``length - stride`` steps), as R2D2 stores its
experience. A row never crosses an episode end: the episode's last row is its tail, padded
with zeros to ``length`` steps, and ``mask`` says which of its steps are real. An episode's
first row may begin with ``lead`` padding steps: where a learner reads the first steps of
each row only to warm the stored memory (a burn-in), the episode's own first steps then
fall after them and are learnt too (the memory there is an episode's start, exact).

Every row carries the recurrent memory its first step was acted from (the ``memory``
column's entry of that step, ``[k, H]``; zeros for a padding step) and ``new_steps``, the
env steps it stores for the first time: over all rows these sum to the env steps cut, so
replay can count env steps, not rows.
"""

from __future__ import annotations

import numpy as np

from joyrl_ray.batch import (
    MASK,
    MEMORY,
    NEW_STEPS,
    REWARDS,
    STEP_COLUMNS,
    TERMINATED,
    TRUNCATED,
    Batch,
)


class _EnvSteps:
    """One env's steps of its running episode, from the next row's first step on.

    Positions count the episode's steps after ``lead`` padding steps."""

    def __init__(self, lead: int) -> None:
        self.steps: list[Batch] = []  # pieces of [t, ...] columns (and MASK), in order
        self.held = 0  # steps in ``steps``
        self.start = 0  # position of ``steps``' first step: the next row starts there
        self.stored = lead  # positions already in an emitted row (the padding: none to store)
        self.lead = lead  # padding steps still to put before the episode's first step

    def add(self, piece: Batch) -> None:
        piece = {**piece, MASK: np.ones(len(piece[REWARDS]), bool)}
        if self.lead:  # zeros, the memory too: an episode starts from zeros
            self.steps.append(
                {k: np.zeros((self.lead, *v.shape[1:]), v.dtype) for k, v in piece.items()}
            )
            self.held, self.lead = self.lead, 0
        self.steps.append(piece)
        self.held += len(piece[REWARDS])

    def joined(self) -> Batch:
        if len(self.steps) > 1:
            self.steps = [{k: np.concatenate([p[k] for p in self.steps]) for k in self.steps[0]}]
        return self.steps[0]

    def drop_front(self, count: int) -> None:
        kept = {k: v[count:] for k, v in self.joined().items()}
        self.steps = [kept] if count < self.held else []
        self.held -= count
        self.start += count

    @property
    def unstored(self) -> int:
        return self.start + self.held - self.stored


class SequenceCutter:
    """Cuts ``[time, env]`` steps of ``n_envs`` envs into rows of ``length`` steps, a row
    starting every ``stride`` steps of an episode (``stride <= length``), the episode's first
    row after ``lead`` padding steps (``lead <= stride``: later rows need none)."""

    def __init__(self, n_envs: int, length: int, stride: int, lead: int = 0) -> None:
        if n_envs <= 0 or length <= 0 or not 0 < stride <= length or not 0 <= lead <= stride:
            raise ValueError(
                "need n_envs > 0, length > 0, 0 < stride <= length and 0 <= lead <= stride, "
                f"got {n_envs}, {length}, {stride}, {lead}"
            )
        self.n_envs, self.length, self.stride = int(n_envs), int(length), int(stride)
        self.lead = int(lead)
        self._envs = [_EnvSteps(self.lead) for _ in range(self.n_envs)]

    @property
    def pending(self) -> int:
        """Env steps held that no row has stored yet."""
        return sum(env.unstored for env in self._envs if env.held)

    def reset(self) -> int:
        """Forget every held step (an env error, the stop); returns how many no row stored."""
        dropped = self.pending
        self._envs = [_EnvSteps(self.lead) for _ in range(self.n_envs)]
        return dropped

    def cut(self, chunk: Batch) -> Batch:
        """The rows that ``[time, env]`` steps complete (maybe 0 rows), env by env."""
        missing = set(STEP_COLUMNS) - chunk.keys()
        if missing:
            raise KeyError(f"steps lack columns {sorted(missing)}")
        if np.shape(chunk[REWARDS])[1] != self.n_envs:
            raise ValueError(f"expected {self.n_envs} envs, got {np.shape(chunk[REWARDS])[1]}")
        done = np.asarray(chunk[TERMINATED], bool) | np.asarray(chunk[TRUNCATED], bool)
        rows: list[Batch] = []
        for e in range(self.n_envs):
            steps = {key: np.asarray(value)[:, e] for key, value in chunk.items()}
            begin = 0
            for end in (np.flatnonzero(done[:, e]) + 1).tolist():  # each episode that ends here
                rows.extend(self._add(e, steps, begin, end))
                rows.extend(self._tail(e))
                begin = end
            rows.extend(self._add(e, steps, begin, len(done)))
        if not rows:
            return {}
        return {key: np.stack([row[key] for row in rows]) for key in rows[0]}

    def _row(self, env: _EnvSteps, count: int) -> Batch:
        """A row of ``env``'s first ``count`` held steps, padded to ``length``."""
        steps = env.joined()
        row: Batch = {}
        for key, value in steps.items():
            if key == MEMORY:
                row[key] = value[0]
                continue
            padded = np.zeros((self.length, *value.shape[1:]), value.dtype)
            padded[:count] = value[:count]
            row[key] = padded
        row[NEW_STEPS] = np.asarray(env.start + count - env.stored, np.int64)
        env.stored = env.start + count
        return row

    def _add(self, e: int, steps: Batch, begin: int, end: int) -> list[Batch]:
        """Env ``e``'s steps ``begin:end`` of one episode, and the full rows they complete."""
        env = self._envs[e]
        if end > begin:
            env.add({key: value[begin:end] for key, value in steps.items()})
        rows = []
        while env.held >= self.length:
            rows.append(self._row(env, self.length))
            env.drop_front(self.stride)
        return rows

    def _tail(self, e: int) -> list[Batch]:
        """Env ``e``'s episode ended: its steps no row stored yet go out in one padded row
        (from the next row's start, so it covers them all); the next episode starts afresh."""
        env = self._envs[e]
        rows = [self._row(env, env.held)] if env.unstored > 0 else []
        self._envs[e] = _EnvSteps(self.lead)
        return rows
