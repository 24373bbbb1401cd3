"""Test-mode rendering: ``render_mode: rgb_array`` writes ``videos/video.gif``; human shows it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from joyrl_ray.evaluator import Evaluator
from joyrl_ray.task_dir import TaskDir

MAX_FRAMES = 1000  # keeps a gif of a long episode to a few MB
MAX_SIDE = 320


def _shrink(frame: np.ndarray) -> np.ndarray:
    step = max(1, int(np.ceil(max(frame.shape[:2]) / MAX_SIDE)))
    return frame[::step, ::step]


def record_video(cfg: Any, policy: Any, task: TaskDir, n_episodes: int) -> Path | None:
    """Play ``n_episodes`` greedy episodes with the configured render mode."""
    mode = cfg.env.render_mode
    evaluator = Evaluator(
        cfg.env,
        policy,
        seed=cfg.general.seed,
        max_step=cfg.general.max_step,
        render_mode=mode,
        stream="video",
    )
    frames: list[np.ndarray] = []
    try:
        for _ in range(n_episodes):
            _, _, episode_frames = evaluator.run_episode(record_frames=mode == "rgb_array")
            frames.extend(_shrink(f) for f in episode_frames)
    finally:
        evaluator.close()
    if mode != "rgb_array" or not frames:
        return None
    import imageio.v2 as imageio

    stride = max(1, len(frames) // MAX_FRAMES)
    path = task.videos / "video.gif"
    imageio.mimsave(path, frames[::stride], duration=1000 / 30 * stride, loop=0)
    return path
