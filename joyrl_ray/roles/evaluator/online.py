"""The online evaluator a run gets: a single-agent env's, or a multi-agent game's."""

from __future__ import annotations

import gymnasium as gym

from joyrl_ray.roles.evaluator.config import EvaluatorConfig
from joyrl_ray.roles.evaluator.evaluator import OnlineEvaluator
from joyrl_ray.roles.evaluator.games import GameEvaluator

Spaces = tuple[gym.Space, gym.Space]


def online_evaluator(
    cfg: EvaluatorConfig, spaces: Spaces | None
) -> OnlineEvaluator | GameEvaluator:
    """The evaluator of checkpoints beside learning (``spaces``: a single-agent env's)."""
    if cfg.multi_agent is not None:
        return GameEvaluator(cfg)
    assert spaces is not None
    return OnlineEvaluator(cfg, spaces)
