"""A flat-array sum tree (with a min tree alongside) for proportional prioritized replay.

Leaves hold non-negative priorities; every inner node holds the sum (and the min) of its two
children, so the total, the smallest priority and a prefix-sum search all cost O(log N).
All operations are vectorised over a batch of indices; Python only loops over tree depth.
"""

from __future__ import annotations

import numpy as np


class SumTree:
    """Sums and mins over ``capacity`` leaves, stored in flat numpy arrays (heap layout).

    Node ``i`` has children ``2i`` and ``2i + 1``; the root is node 1 and the leaves are
    nodes ``[leaf_offset, leaf_offset + capacity)`` where ``leaf_offset`` is ``capacity``
    rounded up to a power of two, so every leaf sits at the same depth. Padding leaves and
    leaves never written hold 0 in the sum tree and +inf in the min tree, so they are never
    found by :meth:`find_prefix_sum` and never count towards :meth:`min`.
    """

    def __init__(self, capacity: int) -> None:
        if capacity <= 0:
            raise ValueError(f"capacity must be positive, got {capacity}")
        self.capacity = int(capacity)
        self.depth = (self.capacity - 1).bit_length()
        self.leaf_offset = 1 << self.depth
        self._sums = np.zeros(2 * self.leaf_offset, dtype=np.float64)
        self._mins = np.full(2 * self.leaf_offset, np.inf, dtype=np.float64)
        self._max = 0.0

    def update(self, indices: np.ndarray, values: np.ndarray) -> None:
        """Set leaves ``indices`` to ``values`` and refresh their ancestors, level by level."""
        indices = np.asarray(indices, dtype=np.int64).reshape(-1)
        values = np.broadcast_to(np.asarray(values, dtype=np.float64), indices.shape)
        if indices.size == 0:
            return
        if indices.min() < 0 or indices.max() >= self.capacity:
            raise IndexError(f"leaf index out of range [0, {self.capacity})")
        if not np.all(np.isfinite(values)) or values.min() < 0:
            raise ValueError("priorities must be finite and non-negative")
        self._max = max(self._max, float(values.max()))
        # A leaf named twice takes its last value, as one call per value would leave it
        # (numpy does not promise an order for repeated indices in one assignment).
        first_from_end = np.unique(indices[::-1], return_index=True)[1]
        if first_from_end.size < indices.size:
            last = indices.size - 1 - first_from_end
            indices, values = indices[last], values[last]
        nodes = indices + self.leaf_offset
        self._sums[nodes] = values
        self._mins[nodes] = values
        for _ in range(self.depth):
            # A parent named twice is written twice with the same sum: cheaper than np.unique.
            nodes = nodes >> 1
            left = 2 * nodes
            self._sums[nodes] = self._sums[left] + self._sums[left + 1]
            self._mins[nodes] = np.minimum(self._mins[left], self._mins[left + 1])

    def get(self, indices: np.ndarray) -> np.ndarray:
        """Leaf values at ``indices``."""
        return self._sums[np.asarray(indices, dtype=np.int64) + self.leaf_offset]

    def total(self) -> float:
        """Sum of all leaves."""
        return float(self._sums[1])

    def min(self) -> float:
        """Smallest leaf written so far (+inf before any write)."""
        return float(self._mins[1])

    def max(self) -> float:
        """Largest value ever written (a running max: it does not drop when leaves shrink)."""
        return self._max

    def find_prefix_sum(self, prefix_sums: np.ndarray) -> np.ndarray:
        """Leaf ``i`` with ``sum(leaves[:i]) <= p < sum(leaves[:i + 1])`` for each prefix ``p``.

        ``p`` should lie in ``[0, total())``. The descent never enters a zero-sum subtree, so
        a rounding error near ``total()`` cannot select an empty or padding leaf.
        """
        remaining = np.array(prefix_sums, dtype=np.float64).reshape(-1)
        nodes = np.ones(remaining.shape, dtype=np.int64)
        for _ in range(self.depth):
            left = 2 * nodes
            left_sum = self._sums[left]
            go_right = (remaining >= left_sum) & (self._sums[left + 1] > 0)
            remaining = np.where(go_right, remaining - left_sum, remaining)
            nodes = left + go_right
        return nodes - self.leaf_offset
