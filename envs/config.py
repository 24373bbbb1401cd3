"""``env_cfg``: which env to build and how to wrap it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

RENDER_MODES = (None, "human", "rgb_array")
VECTOR_MODES = ("sync", "async")


@dataclass
class EnvConfig:
    """An env by gymnasium id (``ALE/Pong-v5``, ``my_pkg:MyEnv-v0``) or class (``my_pkg:MyEnv``).

    The ``atari_*`` fields follow the Nature DQN / SB3 convention, except that a lost life
    does not end the episode by default: gymnasium's wrapper restarts the whole game when
    it does, so the agent would never see its later lives and returns would be per life.
    """

    id: str = "CartPole-v1"  # gymnasium id, module:EnvId (module registers it), module:ClassName
    render_mode: str | None = None  # null, human, rgb_array
    wrappers: list[str] = field(default_factory=list)  # names from envs.wrappers.WRAPPERS, in order
    frame_stack: int = 4  # frames kept by the frame_stack wrapper
    resize: list[int] = field(default_factory=lambda: [84, 84])  # [height, width] for resize
    kwargs: dict[str, Any] = field(default_factory=dict)  # passed to the env's constructor
    atari_noop_max: int = 30  # atari_preprocessing: at most this many no-ops after a reset
    atari_frame_skip: int = 4  # atari_preprocessing: frames per action, last two max-pooled
    atari_screen_size: int = 84  # atari_preprocessing: square frame side in pixels
    atari_grayscale: bool = True  # atari_preprocessing: grayscale frames (false: RGB)
    atari_terminal_on_life_loss: bool = False  # atari_preprocessing: a lost life ends the episode
    clip_rewards: bool = False  # learn from rewards clipped to [-1, 1]; returns stay the real score
    normalize_obs: bool = False  # observations standardized by running stats merged over workers
    normalize_reward: bool = False  # rewards divided by the running std of the discounted return
    clip_obs: float = 10.0  # normalized observations are clipped to [-clip_obs, clip_obs]
    clip_reward: float = 10.0  # normalized rewards are clipped to [-clip_reward, clip_reward]
    norm_epsilon: float = 1e-8  # added to the variance before its square root
    vector_mode: str = "sync"  # a worker's envs: sync (in turn, in-process) or async (subprocesses)
    step_timeout_s: float = -1.0  # async: a vector step taking longer is an env error; -1: none
    reset_timeout_s: float = -1.0  # async: a vector reset taking longer is an env error
    step_latency_s: float = 0.0  # step_latency wrapper: seconds slept per step (benchmarks)
    step_latency_worker_s: list[float] = field(default_factory=list)  # per worker index:
    # seconds slept per step instead of step_latency_s (a straggler, for benchmarks)
