"""Test-mode rendering after the test episodes, in the driver process.

``env_cfg.render_mode: rgb_array`` plays ``general_cfg.render_n_episodes`` greedy episodes
on an env of its own and writes them to ``videos/video.gif``. The gif is bounded: frames
are shrunk to at most ``MAX_SIDE`` pixels a side, and at most ``MAX_FRAMES`` frames are
kept (a long episode is captured every 2nd, 4th, ... step, with the frame duration
stretched to match, so the gif still plays in real time). Only kept frames are rendered.

``human`` opens the env's own window (pygame) and plays the episodes there. Without a
display (Linux with neither ``DISPLAY`` nor ``WAYLAND_DISPLAY`` set, and no
``SDL_VIDEODRIVER`` chosen), nobody could see that window, so the run falls back to
``rgb_array`` and says so (see :func:`display_available`). A window that fails to open
for another reason is logged and the run still finishes with its results written.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import numpy as np

from joyrl_ray.multi_agent_plan import MultiAgentPlan
from joyrl_ray.roles.evaluator.config import EvaluatorConfig
from joyrl_ray.roles.evaluator.evaluator import Evaluator
from joyrl_ray.roles.evaluator.games import GameEvaluator
from joyrl_ray.run.atomic_file import atomic_write
from joyrl_ray.run.task_dir import TaskDir

MAX_FRAMES = 300  # with MAX_SIDE, keeps a CartPole gif to a few hundred kB
MAX_SIDE = 320
DEFAULT_FPS = 30


def display_available() -> bool:
    """Whether a window could be shown: a display is set, or SDL was told which driver to use."""
    if os.environ.get("SDL_VIDEODRIVER"):
        return True
    if sys.platform.startswith(("linux", "freebsd", "openbsd", "netbsd")):
        return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
    return True  # macOS and Windows always have a window server for a desktop session


def _shrink(frame: np.ndarray) -> np.ndarray:
    step = max(1, int(np.ceil(max(frame.shape[:2]) / MAX_SIDE)))
    return np.ascontiguousarray(frame[::step, ::step])


class FrameSampler:
    """Keeps at most ``max_frames`` evenly spaced frames of any number of steps.

    Every ``every``-th step is captured; when the buffer fills, every other frame is
    dropped and ``every`` doubles, so memory stays bounded however long the episodes are.
    """

    def __init__(self, max_frames: int = MAX_FRAMES) -> None:
        self.max_frames = max(2, max_frames)
        self.every = 1
        self.frames: list[np.ndarray] = []
        self.steps = 0

    def __call__(self, env: Any) -> None:
        if self.steps % self.every == 0:
            self.frames.append(_shrink(np.asarray(env.render())))
            if len(self.frames) >= self.max_frames:
                self.frames = self.frames[::2]
                self.every *= 2
        self.steps += 1


def _no_frame(env: Any) -> None:
    """``render_mode: human``: the env draws its window by itself."""


def _play_games(
    cfg: Any,
    plan: MultiAgentPlan,
    policies: dict[str, Any],
    n_games: int,
    on_step: Callable[[Any], None],
    returns: list[float],
) -> float:
    """``n_games`` rendered games of a multi-agent run (each game's return in ``returns``:
    its agents' mean); the env's frame rate."""
    games = GameEvaluator(EvaluatorConfig.of(cfg, plan), render_mode=cfg.env.render_mode)
    try:
        for index in range(n_games):
            by_agent = games.play_game(policies, index, on_step)
            returns.append(float(np.mean(list(by_agent.values()))))
        return _fps(games.envs[0].env)
    finally:
        games.close()


def _fps(env: Any) -> float:
    fps = (getattr(env, "metadata", None) or {}).get("render_fps")
    return float(fps) if fps else float(DEFAULT_FPS)


def write_gif(frames: list[np.ndarray], path: Path, frame_ms: float) -> Path:
    import imageio.v2 as imageio

    path.parent.mkdir(parents=True, exist_ok=True)
    duration = max(frame_ms, 20.0)

    def write(f: IO[bytes]) -> None:
        imageio.mimsave(f, frames, format="GIF", duration=duration, loop=0)

    atomic_write(path, write)
    return path


def record_video(
    cfg: Any,
    policy: Any,
    task: TaskDir,
    n_episodes: int,
    normalization: dict[str, Any] | None = None,
    plan: MultiAgentPlan | None = None,
) -> dict[str, Any]:
    """Play ``n_episodes`` greedy episodes with the configured render mode (a multi-agent
    run's, with ``plan``: games, every agent acting with its own policy, ``policy`` the
    learning policies' acting ones by name).

    Returns what the summary should say: ``video`` (the gif's path) for ``rgb_array``,
    ``rendered_episodes``, and ``render_error`` when the window could not be used.
    """
    mode = cfg.env.render_mode
    info: dict[str, Any] = {"render_mode": mode}
    sampler = FrameSampler() if mode == "rgb_array" else None
    on_step = sampler if sampler is not None else _no_frame
    returns: list[float] = []
    try:
        if plan is not None:
            fps = _play_games(cfg, plan, policy, n_episodes, on_step, returns)
        else:
            evaluator = Evaluator(
                cfg.env,
                policy,
                seed=cfg.general.seed,
                max_step=cfg.general.max_step,
                render_mode=mode,
                stream="video",
                normalization=normalization,  # the checkpoint's, frozen
            )
            try:
                for _ in range(n_episodes):
                    ret, _ = evaluator.run_episode(on_step=sampler)
                    returns.append(ret)
                fps = _fps(evaluator.env)
            finally:
                evaluator.close()
    except Exception as exc:  # a window that cannot open must not lose the test results
        info["render_error"] = f"{type(exc).__name__}: {exc}".splitlines()[0]
        return info
    info["rendered_episodes"] = len(returns)
    info["rendered_returns"] = returns
    if sampler is not None and sampler.frames:
        path = write_gif(sampler.frames, task.videos / "video.gif", 1000.0 * sampler.every / fps)
        info["video"] = str(path)
        info["video_frames"] = len(sampler.frames)
    return info
