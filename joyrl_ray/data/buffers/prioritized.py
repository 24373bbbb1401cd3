"""Proportional prioritized replay (Schaul et al. 2016) on top of the uniform ring."""

from __future__ import annotations

import numpy as np

from joyrl_ray.batch import Batch
from joyrl_ray.data.buffers.replay import ReplayBuffer
from joyrl_ray.data.buffers.sum_tree import SumTree


class PrioritizedReplayBuffer(ReplayBuffer):
    """A ring whose rows are sampled with probability ``P(i) = p_i / sum_j p_j``.

    The tree stores ``p_i = (|priority| + eps) ** alpha`` (so ``max_priority`` is in that
    space too). Rows added without priorities get the largest priority seen so far, so new
    data is replayed at least once soon; Ape-X style workers may pass their own.
    """

    def __init__(
        self,
        capacity: int,
        alpha: float = 0.6,
        beta_start: float = 0.4,
        beta_annealing_samples: int = 100_000,
        eps: float = 1e-6,
        seed: int | None = None,
    ) -> None:
        super().__init__(capacity, seed=seed)
        if alpha < 0 or eps < 0 or not 0 <= beta_start <= 1:
            raise ValueError("need alpha >= 0, eps >= 0 and 0 <= beta_start <= 1")
        self.alpha = float(alpha)
        self.beta_start = float(beta_start)
        self.beta_annealing_samples = max(int(beta_annealing_samples), 1)
        self.eps = float(eps)
        self.tree = SumTree(self.capacity)
        self.max_priority = 1.0
        self.sampled_rows = 0

    @property
    def beta(self) -> float:
        """IS exponent, linear from ``beta_start`` to 1 over ``beta_annealing_samples`` rows."""
        frac = min(self.sampled_rows / self.beta_annealing_samples, 1.0)
        return self.beta_start + (1.0 - self.beta_start) * frac

    def _transform(self, priorities: np.ndarray) -> np.ndarray:
        return (np.abs(np.asarray(priorities, dtype=np.float64)) + self.eps) ** self.alpha

    def add(self, batch: Batch, priorities: np.ndarray | None = None) -> np.ndarray:
        """Append rows at the max priority, or at ``priorities`` (raw, e.g. TD errors)."""
        n = len(next(iter(batch.values())))
        if priorities is not None and len(priorities) != n:
            raise ValueError(f"got {len(priorities)} priorities for {n} rows")
        slots = super().add(batch)
        if len(slots) == 0:
            return slots
        if priorities is None:
            values = np.full(len(slots), self.max_priority)
        else:  # the base keeps only the newest rows when the batch exceeds capacity
            values = self._transform(np.asarray(priorities)[-len(slots) :])
            self.max_priority = max(self.max_priority, float(values.max()))
        self.tree.update(slots, values)
        return slots

    def sample_slots(self, batch_size: int) -> tuple[np.ndarray, np.ndarray]:
        """Stratified proportional sampling: one draw per equal slice of the total priority.

        Weights are ``(N P(i)) ** -beta`` divided by the largest possible weight in the
        buffer, the one of the least likely row, so they lie in ``(0, 1]``.
        """
        if batch_size <= 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        total = self.tree.total()
        segment = total / batch_size
        prefixes = (np.arange(batch_size) + self.rng.random(batch_size)) * segment
        slots = self.tree.find_prefix_sum(np.minimum(prefixes, np.nextafter(total, 0.0)))
        beta = self.beta
        # (N P_i)^-beta / (N P_min)^-beta == (p_i / p_min)^-beta; N and the total cancel.
        weights = (self.tree.get(slots) / self.tree.min()) ** (-beta)
        self.sampled_rows += batch_size
        return slots, weights.astype(np.float32)

    def update_priorities(
        self, slots: np.ndarray, generations: np.ndarray, priorities: np.ndarray
    ) -> int:
        """Write new priorities for sampled rows still holding the data that was sampled.

        A slot whose generation changed was overwritten after sampling: its priority now
        belongs to the new row and is left alone. Returns the number of priorities applied.
        """
        slots = np.asarray(slots, dtype=np.int64)
        fresh = self.generations[slots] == np.asarray(generations)
        if not fresh.any():
            return 0
        values = self._transform(np.asarray(priorities)[fresh])
        self.tree.update(slots[fresh], values)
        self.max_priority = max(self.max_priority, float(values.max()))
        return int(fresh.sum())

    def stats(self) -> dict[str, float]:
        return {**super().stats(), "beta": self.beta, "max_priority": self.max_priority}

    def state_dict(self) -> dict[str, np.ndarray]:
        state = super().state_dict()
        state["priorities"] = self.tree.get(np.arange(self.size))
        state["per"] = np.array([self.max_priority, self.sampled_rows], dtype=np.float64)
        return state

    def load_state_dict(self, state: dict[str, np.ndarray]) -> None:
        super().load_state_dict(state)
        if self.size:
            self.tree.update(np.arange(self.size), state["priorities"])
        self.max_priority, sampled = (float(x) for x in state["per"])
        self.sampled_rows = int(sampled)
