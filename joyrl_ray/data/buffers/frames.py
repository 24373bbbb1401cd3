"""Stacked image observations kept one frame each, so that Atari replay stays small.

A frame-stacked observation (``env_cfg.wrappers: [..., frame_stack]``, uint8 ``[k, H, W]``)
shares ``k - 1`` frames with the next one, and a transition's ``next_obs`` is a later
step's ``obs``. Storing both stacks per transition keeps every frame ``2k`` times: a
100k-transition Atari replay would take 5.6 GB. Instead the worker sends each frame once
(:class:`FrameEncoder` replaces the ``obs`` / ``next_obs`` columns by frame ids) and the
replay keeps the frames in a ring (:class:`FrameStore`) and the transitions as ``k`` frame
indices each, rebuilding the stacks when it samples: about 1.2 GB for the same replay.

It relies on what ``FrameStackObservation`` guarantees: the stack is on the first axis,
newest frame last, and the next observation is the stack shifted by one new frame
(``next_obs[:-1] == obs[1:]``), except after a reset, whose stack is all new.
"""

from __future__ import annotations

import numpy as np

from joyrl_ray.batch import NEXT_OBS, OBS, TERMINATED, TRUNCATED, Batch

IDS_KEPT = 1 << 16  # per worker: how many recent frame ids can still be translated


class FrameEncoder:
    """Worker side: a chunk's stacked observations as frame ids, and its new frames."""

    def __init__(self, n_envs: int, stack: int) -> None:
        self.n_envs, self.stack = n_envs, stack
        self.next_id = 0
        self.stack_ids = np.zeros((n_envs, stack), dtype=np.int64)
        self.fresh = np.ones(n_envs, dtype=bool)  # the env's next obs starts a new stack

    def reset(self) -> None:
        """The envs were rebuilt: every env's next observation is a new stack."""
        self.fresh[:] = True

    def encode(self, chunk: Batch) -> tuple[Batch, np.ndarray, np.ndarray]:
        """``chunk`` with ``obs`` / ``next_obs`` as ``[T, E, k]`` frame ids, plus the ids and
        pixels of the frames it shows for the first time (ids are consecutive)."""
        obs, next_obs = chunk[OBS], chunk[NEXT_OBS]
        done = np.asarray(chunk[TERMINATED], bool) | np.asarray(chunk[TRUNCATED], bool)
        steps, k = len(done), self.stack
        obs_ids = np.empty((steps, self.n_envs, k), dtype=np.int64)
        next_ids = np.empty_like(obs_ids)
        frames: list[np.ndarray] = []
        first = self.next_id
        for t in range(steps):
            for e in np.flatnonzero(self.fresh):  # a reset observation: k new frames
                self.stack_ids[e] = np.arange(self.next_id, self.next_id + k)
                self.next_id += k
                frames.append(obs[t, e])
            obs_ids[t] = self.stack_ids
            new = np.arange(self.next_id, self.next_id + self.n_envs)
            self.next_id += self.n_envs
            frames.append(next_obs[t, :, -1])
            next_ids[t, :, :-1] = self.stack_ids[:, 1:]
            next_ids[t, :, -1] = new
            self.stack_ids = next_ids[t].copy()
            self.fresh = done[t].copy()
        pixels = np.concatenate(frames) if frames else np.zeros((0, *obs.shape[3:]), obs.dtype)
        ids = np.arange(first, self.next_id, dtype=np.int64)
        return {**chunk, OBS: obs_ids, NEXT_OBS: next_ids}, ids, pixels


class FrameStore:
    """DataServer side: a ring of frames from several workers, addressed by global index."""

    def __init__(self, capacity: int) -> None:
        self.capacity = int(capacity)
        self.frames: np.ndarray | None = None
        self.written = 0  # frames written so far; global index of the next one
        self.ids: dict[int, tuple[int, np.ndarray]] = {}  # worker -> (first id, global indices)

    def add(self, source: int, ids: np.ndarray, pixels: np.ndarray) -> None:
        """Store a worker's new frames (consecutive ids, in order)."""
        if len(ids) == 0:
            return
        if self.frames is None:
            self.frames = np.zeros((self.capacity, *pixels.shape[1:]), dtype=pixels.dtype)
        n = len(ids)
        index = self.written + np.arange(n)
        self.frames[index % self.capacity] = pixels
        self.written += n
        first, known = self.ids.get(source, (int(ids[0]), np.zeros(0, dtype=np.int64)))
        if int(ids[0]) != first + len(known):  # a restarted worker counts its ids from 0 again
            first, known = int(ids[0]), np.zeros(0, dtype=np.int64)
        known = np.concatenate([known, index])
        if len(known) > IDS_KEPT:
            first, known = first + len(known) - IDS_KEPT, known[-IDS_KEPT:]
        self.ids[source] = (first, known)

    def translate(self, source: int, ids: np.ndarray) -> np.ndarray:
        """A worker's frame ids as global indices."""
        first, known = self.ids[source]
        offset = ids - first
        if offset.size and (offset.min() < 0 or offset.max() >= len(known)):
            raise ValueError(f"worker {source} refers to frames it never sent or sent too long ago")
        return known[offset]

    def gather(self, index: np.ndarray) -> np.ndarray:
        """The frames at global ``index`` (any shape), stacked: ``[*index.shape, H, W]``."""
        assert self.frames is not None
        if index.size and index.min() < self.written - self.capacity:
            raise ValueError(
                "sampled transitions refer to frames already overwritten (episodes far shorter "
                "than the frame stack?); raise algo_cfg.buffer_size headroom or drop frame_stack"
            )
        return self.frames[index % self.capacity]

    def stats(self) -> dict[str, float]:
        size = min(self.written, self.capacity)
        nbytes = 0 if self.frames is None else size * self.frames[0].nbytes
        return {"frames": size, "frame_capacity": self.capacity, "frame_bytes": nbytes}

    def state_dict(self) -> dict[str, np.ndarray]:
        size = min(self.written, self.capacity)
        start = self.written - size
        index = np.arange(start, self.written)
        frames = self.frames[index % self.capacity] if self.frames is not None else np.zeros(0)
        return {"frame_pixels": frames, "frame_ring": np.array([start, self.written])}

    def load_state_dict(self, state: dict[str, np.ndarray]) -> None:
        start, written = (int(x) for x in state["frame_ring"])
        pixels = state["frame_pixels"]
        if len(pixels):
            self.frames = np.zeros((self.capacity, *pixels.shape[1:]), dtype=pixels.dtype)
            self.frames[np.arange(start, written) % self.capacity] = pixels
        self.written = written
        self.ids = {}  # workers start new id streams after a resume


def frame_capacity(buffer_size: int) -> int:
    """Frames kept for ``buffer_size`` transitions: about one per transition, plus the reset
    stacks and the frames of transitions still on their way."""
    return buffer_size * 3 // 2 + 10_000
