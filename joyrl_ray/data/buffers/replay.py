"""Uniform ring replay on preallocated numpy columns."""

from __future__ import annotations

import numpy as np

from joyrl_ray.batch import GENERATIONS, SLOTS, WEIGHTS, Batch
from joyrl_ray.data.buffers.columns import FieldColumns, empty_column


class ReplayBuffer:
    """A ring of ``capacity`` transitions stored column by column.

    Columns are allocated from the first batch added (its keys, dtypes and per-row shapes);
    a column of packed (Dict, Tuple) observations is stored one array per field.
    Every slot carries a write count (``generation``), returned with each sample so that a
    priority written back after the slot was overwritten can be recognised and ignored.
    """

    def __init__(self, capacity: int, seed: int | None = None) -> None:
        if capacity <= 0:
            raise ValueError(f"buffer_size must be positive, got {capacity}")
        self.capacity = int(capacity)
        self.rng = np.random.default_rng(seed)
        self.columns: dict[str, np.ndarray | FieldColumns] = {}
        self.generations = np.zeros(self.capacity, dtype=np.int64)
        self.cursor = 0
        self.size = 0
        self.total_added = 0

    def __len__(self) -> int:
        return self.size

    def _allocate(self, batch: Batch) -> None:
        for key, value in batch.items():
            self.columns[key] = empty_column(self.capacity, np.asarray(value))

    def add(self, batch: Batch) -> np.ndarray:
        """Append a batch of rows; returns the slots written (oldest rows are overwritten)."""
        n = len(next(iter(batch.values())))
        if n == 0:
            return np.zeros(0, dtype=np.int64)
        if not self.columns:
            self._allocate(batch)
        missing = self.columns.keys() - batch.keys()
        if missing:
            raise KeyError(f"batch lacks columns {sorted(missing)}")
        if n > self.capacity:  # only the newest rows fit
            batch = {k: np.asarray(v)[-self.capacity :] for k, v in batch.items()}
            n = self.capacity
        slots = (self.cursor + np.arange(n)) % self.capacity
        for key, column in self.columns.items():
            column[slots] = batch[key]
        self.generations[slots] += 1
        self.cursor = int((self.cursor + n) % self.capacity)
        self.size = min(self.size + n, self.capacity)
        self.total_added += n
        return slots

    def sample_slots(self, batch_size: int) -> tuple[np.ndarray, np.ndarray]:
        """Slots to read and their importance-sampling weights (all ones here)."""
        slots = self.rng.integers(0, self.size, size=batch_size)
        return slots, np.ones(batch_size, dtype=np.float32)

    def sample(self, batch_size: int) -> Batch:
        """A batch of rows with ``slots``, ``generations`` and ``weights`` columns added."""
        if self.size == 0:
            raise ValueError("cannot sample from an empty buffer")
        slots, weights = self.sample_slots(batch_size)
        batch = {key: column[slots] for key, column in self.columns.items()}
        batch[SLOTS] = slots
        batch[GENERATIONS] = self.generations[slots].copy()
        batch[WEIGHTS] = weights
        return batch

    def update_priorities(
        self, slots: np.ndarray, generations: np.ndarray, priorities: np.ndarray
    ) -> int:
        """Uniform replay has no priorities; returns the number of priorities applied (0)."""
        return 0

    def stats(self) -> dict[str, float]:
        return {"size": self.size, "capacity": self.capacity, "total_added": self.total_added}

    def state_dict(self) -> dict[str, np.ndarray]:
        """The stored rows and ring state as flat arrays (``np.savez`` can write them)."""
        state = {f"column.{k}": v[: self.size] for k, v in self.columns.items()}
        state.update(
            generations=self.generations[: self.size],
            ring=np.array([self.cursor, self.size, self.total_added, self.capacity]),
        )
        return state

    def load_state_dict(self, state: dict[str, np.ndarray]) -> None:
        """Restore rows saved by :meth:`state_dict` (into a buffer of the same capacity)."""
        cursor, size, total, capacity = (int(x) for x in state["ring"])
        if capacity != self.capacity:
            raise ValueError(f"saved replay has capacity {capacity}, this one {self.capacity}")
        rows = {k.removeprefix("column."): v for k, v in state.items() if k.startswith("column.")}
        if rows:
            self._allocate(rows)
            for key, value in rows.items():
                self.columns[key][:size] = value
        self.generations[:size] = state["generations"]
        self.cursor, self.size, self.total_added = cursor, size, total
