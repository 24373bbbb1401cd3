"""One policy's transitions in a multi-agent worker: made one decision at a time, cut into chunks.

In a multi-agent env the agents of a policy do not decide in step: a turn-based game's agent
decides every other move, and an agent that left the game decides nothing until the next
episode. Each of the policy's agents in each of the worker's envs is a *slot*: a stream of
that agent's decisions, each a transition once its outcome is known (:meth:`AgentRows.
complete`). A chunk is ``[length, slots]``, as a single-agent worker's is ``[length, envs]``
(every flow takes it as it is): each column holds pieces of the slots' streams one after
another, each piece a run of one slot's consecutive transitions, oldest first. A piece that
ends where its agent's episode does not (the column is full, or the slot has no more
transitions yet) is marked truncated, so that every target bootstraps from the piece's last
next observation there, as at a time limit, and nothing crosses from one piece to the next
(n-step folding, GAE and V-trace all stop at it). Chunks thus need no continuity from one to
the next, and a slot that decides less often (a game's second player, an agent that left)
holds nothing back: what one slot lacks another fills. Recurrent policies, whose memory
would have to carry from piece to piece, are refused in multi-agent runs.
"""

from __future__ import annotations

import numpy as np

from joyrl_ray.batch import ACTIONS, NEXT_OBS, OBS, REWARDS, TERMINATED, TRUNCATED, Batch

INITIAL_CAPACITY = 256


class AgentRows:
    """``slots`` agents' transitions, as decided and completed; ``take`` cuts a chunk."""

    def __init__(self, slots: int, length: int) -> None:
        self.slots, self.length = slots, length
        self.columns: dict[str, np.ndarray] = {}
        self.n = 0  # rows in use
        self.slot = np.zeros(INITIAL_CAPACITY, np.int64)  # each row's slot
        self.queues: list[list[int]] = [[] for _ in range(slots)]  # rows by slot, oldest first
        self.open = np.full(slots, -1, np.int64)  # each slot's decision without an outcome
        self.complete_rows = 0  # complete and not yet taken
        self.start = 0  # the slot the next chunk fills its first column from

    # ----- decisions and outcomes -----
    def decide(
        self, slots: np.ndarray, obs: np.ndarray, actions: np.ndarray, extras: Batch
    ) -> None:
        """Decisions of ``slots`` (one each): their observations, actions and the policy's
        extras. A slot's previous decision must have its outcome by now."""
        count = len(slots)
        rows = np.arange(self.n, self.n + count)
        self._reserve(self.n + count, obs, actions, extras)
        columns = self.columns
        columns[OBS][rows] = obs
        columns[ACTIONS][rows] = actions
        for key, value in extras.items():
            columns[key][rows] = value
        self.slot[rows] = slots
        self.open[slots] = rows
        for slot, row in zip(slots.tolist(), rows.tolist(), strict=True):
            self.queues[slot].append(row)
        self.n += count

    def complete(
        self, slot: int, reward: float, terminated: bool, truncated: bool, next_obs: object
    ) -> None:
        """The outcome of ``slot``'s open decision."""
        row = int(self.open[slot])
        columns = self.columns
        columns[REWARDS][row] = reward
        columns[TERMINATED][row] = terminated
        columns[TRUNCATED][row] = truncated
        columns[NEXT_OBS][row] = next_obs
        self.open[slot] = -1
        self.complete_rows += 1

    def drop_open(self, slot: int) -> bool:
        """Forget ``slot``'s open decision (its env failed before its outcome); the slot's
        last complete transition then ends a piece. Whether there was one to forget."""
        row = int(self.open[slot])
        queue = self.queues[slot]
        if row >= 0:
            queue.pop()  # the open decision is the slot's newest row
            self.open[slot] = -1
        if queue:
            last = queue[-1]
            if not self.columns[TERMINATED][last]:
                self.columns[TRUNCATED][last] = True
        return row >= 0

    def is_open(self, slot: int) -> bool:
        return bool(self.open[slot] >= 0)

    # ----- chunks -----
    @property
    def full(self) -> bool:
        """Whether a whole chunk's transitions are complete."""
        return self.complete_rows >= self.length * self.slots

    @property
    def held(self) -> int:
        """Complete transitions not yet in a chunk."""
        return self.complete_rows

    @property
    def open_decisions(self) -> int:
        """Decisions still waiting for their outcome."""
        return int((self.open >= 0).sum())

    def take(self) -> Batch:
        """A ``[length, slots]`` chunk of the oldest complete transitions (``full`` first)."""
        assert self.full, "take() before the chunk is full"
        length, slots = self.length, self.slots
        index = np.empty((length, slots), np.int64)
        cut = np.zeros((length, slots), bool)  # a piece's last transition
        taken: list[tuple[int, int]] = []  # (slot, transitions taken from its queue)
        t = c = 0
        for k in range(slots):
            slot = (self.start + k) % slots
            queue = self.queues[slot]
            ready = len(queue) - (1 if self.open[slot] >= 0 else 0)
            pos = 0
            while pos < ready and c < slots:
                n = min(length - t, ready - pos)
                index[t : t + n, c] = queue[pos : pos + n]
                pos += n
                t += n
                cut[t - 1, c] = True
                if t == length:
                    t, c = 0, c + 1
            taken.append((slot, pos))
            if c == slots:
                break
        self.start = (self.start + 1) % slots
        chunk = {key: column[index] for key, column in self.columns.items()}
        chunk[TRUNCATED] = chunk[TRUNCATED] | (cut & ~chunk[TERMINATED])
        for slot, pos in taken:
            del self.queues[slot][:pos]
        self.complete_rows -= length * slots
        self._compact()
        return chunk

    def discard(self) -> int:
        """Forget every complete transition not taken yet (each slot's open decision stays,
        to take its outcome); how many were forgotten."""
        forgotten = self.complete_rows
        for slot, queue in enumerate(self.queues):
            del queue[: len(queue) - (1 if self.open[slot] >= 0 else 0)]
        self.complete_rows = 0
        self._compact()
        return forgotten

    # ----- storage -----
    def _reserve(self, rows: int, obs: np.ndarray, actions: np.ndarray, extras: Batch) -> None:
        """Columns for at least ``rows`` rows (made from the first decision's arrays)."""
        if not self.columns:
            first = {OBS: obs, NEXT_OBS: obs, ACTIONS: actions, **extras}
            self.columns = {
                key: np.zeros((INITIAL_CAPACITY, *np.shape(v)[1:]), np.asarray(v).dtype)
                for key, v in first.items()
            }
            self.columns[REWARDS] = np.zeros(INITIAL_CAPACITY, np.float32)
            self.columns[TERMINATED] = np.zeros(INITIAL_CAPACITY, bool)
            self.columns[TRUNCATED] = np.zeros(INITIAL_CAPACITY, bool)
        capacity = len(self.slot)
        if rows <= capacity:
            return
        while capacity < rows:
            capacity *= 2
        self.columns = {key: _grown(column, capacity) for key, column in self.columns.items()}
        self.slot = _grown(self.slot, capacity)

    def _compact(self) -> None:
        """Keep only the rows not taken yet, in their order."""
        keep = np.array(sorted(row for queue in self.queues for row in queue), np.int64)
        new_of = np.full(self.n, -1, np.int64)
        new_of[keep] = np.arange(len(keep))
        for column in self.columns.values():
            column[: len(keep)] = column[keep]
        self.slot[: len(keep)] = self.slot[keep]
        self.queues = [new_of[queue].tolist() for queue in self.queues]
        if self.n:
            self.open = np.where(self.open >= 0, new_of[np.maximum(self.open, 0)], -1)
        self.n = len(keep)


def _grown(column: np.ndarray, capacity: int) -> np.ndarray:
    grown = np.zeros((capacity, *column.shape[1:]), column.dtype)
    grown[: len(column)] = column
    return grown
