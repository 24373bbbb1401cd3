"""Replay storage for the DataServer: uniform and prioritized rings, n-step folding."""

from joyrl_ray.data.buffers.prioritized import PrioritizedReplayBuffer
from joyrl_ray.data.buffers.replay import ReplayBuffer

__all__ = ["PrioritizedReplayBuffer", "ReplayBuffer"]
