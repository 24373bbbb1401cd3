"""Reward scaling: rewards divided by a running std of the discounted return.

Large or drifting reward magnitudes (Pendulum's -16..0) make the value loss dominate and
the critic chase its own scale; dividing by the return std keeps targets near unit size.
Returns are accumulated within each rollout (the learner cannot tell which env a column
came from across iterations when rollouts arrive in a different worker order), which
only changes the estimate by a constant factor early in each rollout.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from algos.ppo.gae import discounted_returns


class RunningMeanStd:
    """Streaming mean and variance (parallel-merge formula, Chan et al.)."""

    def __init__(self) -> None:
        self.mean, self.var, self.count = 0.0, 1.0, 1e-4

    def update(self, x: np.ndarray) -> None:
        x = np.asarray(x, dtype=np.float64).ravel()
        if x.size == 0:
            return
        batch_mean, batch_var, n = float(x.mean()), float(x.var()), x.size
        delta, total = batch_mean - self.mean, self.count + n
        self.mean += delta * n / total
        m2 = self.var * self.count + batch_var * n + delta**2 * self.count * n / total
        self.var, self.count = m2 / total, total

    def state_dict(self) -> dict[str, float]:
        return {"mean": self.mean, "var": self.var, "count": self.count}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.mean, self.var, self.count = (float(state[k]) for k in ("mean", "var", "count"))


class RewardScaler:
    """Scales a rollout's rewards by the running std of discounted returns (no centring)."""

    def __init__(self, gamma: float, clip: float | None) -> None:
        self.gamma, self.clip = gamma, clip
        self.stats = RunningMeanStd()

    def __call__(self, rewards: np.ndarray, dones: np.ndarray) -> np.ndarray:
        self.stats.update(discounted_returns(rewards, dones, self.gamma))
        scaled = rewards / np.sqrt(self.stats.var + 1e-8)
        if self.clip:
            scaled = np.clip(scaled, -self.clip, self.clip)
        return scaled.astype(np.float32)
