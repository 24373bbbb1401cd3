"""Generalised advantage estimation on time-major rollouts, pure numpy so it can be checked by hand.

Each step carries its own bootstrap value ``V(next_obs_t)`` (the worker stores the true next
observation, the final one at an episode end), so a truncated episode is bootstrapped from
the value of its last state, a terminated one is not, and the recursion never crosses an
episode boundary in either case.
"""

from __future__ import annotations

import numpy as np


def compute_gae(
    rewards: np.ndarray,
    values: np.ndarray,
    next_values: np.ndarray,
    terminated: np.ndarray,
    truncated: np.ndarray,
    gamma: float,
    gae_lambda: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Advantages and value targets (returns), both ``[T, N]`` like the inputs.

    ``delta_t = r_t + gamma * V(next_obs_t) * (1 - terminated_t) - V(obs_t)`` and
    ``A_t = delta_t + gamma * lambda * (1 - done_t) * A_{t+1}``, ``done = terminated | truncated``.
    """
    rewards = np.asarray(rewards, dtype=np.float64)
    values = np.asarray(values, dtype=np.float64)
    not_terminal = 1.0 - np.asarray(terminated, dtype=np.float64)
    not_done = 1.0 - (np.asarray(terminated, bool) | np.asarray(truncated, bool))
    deltas = rewards + gamma * np.asarray(next_values, dtype=np.float64) * not_terminal - values
    advantages = np.zeros_like(deltas)
    running = np.zeros(deltas.shape[1:], dtype=np.float64)
    for t in range(len(deltas) - 1, -1, -1):
        running = deltas[t] + gamma * gae_lambda * not_done[t] * running
        advantages[t] = running
    returns = advantages + values
    return advantages.astype(np.float32), returns.astype(np.float32)


def discounted_returns(
    rewards: np.ndarray, dones: np.ndarray, gamma: float, start: np.ndarray | None = None
) -> np.ndarray:
    """Running ``R_t = r_t + gamma * R_{t-1}`` along time, reset after each episode end."""
    running = np.zeros(rewards.shape[1:]) if start is None else start.astype(np.float64)
    out = np.zeros(rewards.shape, dtype=np.float64)
    for t in range(len(rewards)):
        running = rewards[t] + gamma * running
        out[t] = running
        running = running * (1.0 - dones[t])
    return out
