"""Running mean and variance of a stream of arrays, mergeable across processes.

Each worker updates its own :class:`RunningMeanStd` with what its envs return and sends
only what it saw since its last send (a delta, itself a ``RunningMeanStd``); the
coordinator merges the deltas of every worker. Merging is Chan et al.'s parallel
algorithm (1979), so the merged statistics equal one pass over all the data, whatever
the order or the split. float64 throughout: a long run's count and sums stay exact enough.
Numpy only: the coordinator, the workers and an exporter all import it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass
class RunningMeanStd:
    """Count, mean and (population) variance per element of a fixed shape."""

    mean: np.ndarray
    var: np.ndarray
    count: float = 0.0

    @classmethod
    def zeros(cls, shape: tuple[int, ...]) -> RunningMeanStd:
        return cls(np.zeros(shape, np.float64), np.ones(shape, np.float64), 0.0)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.mean.shape)

    def copy(self) -> RunningMeanStd:
        return RunningMeanStd(self.mean.copy(), self.var.copy(), self.count)

    def update(self, batch: np.ndarray) -> None:
        """Add the rows of ``batch`` (first axis: rows, the rest: this shape)."""
        rows = np.asarray(batch, np.float64).reshape(-1, *self.shape)
        if len(rows):
            self._add(rows.mean(axis=0), rows.var(axis=0), float(len(rows)))

    def merge(self, other: RunningMeanStd) -> None:
        """Add what ``other`` counted (Chan et al.'s parallel update)."""
        if other.count > 0:
            self._add(other.mean, other.var, other.count)

    def _add(self, mean: np.ndarray, var: np.ndarray, count: float) -> None:
        if self.count == 0:
            self.mean, self.var, self.count = mean.copy(), var.copy(), count
            return
        total = self.count + count
        delta = mean - self.mean
        m2 = self.var * self.count + var * count + delta**2 * self.count * count / total
        self.mean = self.mean + delta * count / total
        self.var = m2 / total
        self.count = total

    def std(self, epsilon: float) -> np.ndarray:
        return np.sqrt(self.var + epsilon)

    def to_state(self) -> dict[str, Any]:
        """Plain numbers and lists (a checkpoint loads them with ``weights_only``); float64
        values survive the round trip exactly."""
        return {
            "shape": list(self.shape),
            "mean": self.mean.ravel().tolist(),
            "var": self.var.ravel().tolist(),
            "count": float(self.count),
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> RunningMeanStd:
        shape = tuple(int(n) for n in state["shape"])
        mean = np.asarray(state["mean"], np.float64).reshape(shape)
        var = np.asarray(state["var"], np.float64).reshape(shape)
        return cls(mean, var, float(state["count"]))
