"""``env_cfg``: which env to build and how to wrap it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

RENDER_MODES = (None, "human", "rgb_array")


@dataclass
class EnvConfig:
    """An env by gymnasium id (``CartPole-v1``) or import path (``my_pkg.my_module:MyEnv``)."""

    id: str = "CartPole-v1"
    render_mode: str | None = None  # null, human, rgb_array
    wrappers: list[str] = field(default_factory=list)  # names from envs.wrappers.WRAPPERS, in order
    frame_stack: int = 4  # frames kept by the frame_stack wrapper
    resize: list[int] = field(default_factory=lambda: [84, 84])  # [height, width] for resize
    kwargs: dict[str, Any] = field(default_factory=dict)  # passed to the env's constructor
