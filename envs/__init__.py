"""Env factories and wrappers: gymnasium by id, custom envs by import path."""

from envs.config import EnvConfig
from envs.errors import EnvSpecError
from envs.probe import probe_env
from envs.registry import ENV_FAMILIES, check_env_id, check_wrappers, make_env, make_env_fn
from envs.rewards import learning_rewards

__all__ = [
    "ENV_FAMILIES",
    "EnvConfig",
    "EnvSpecError",
    "check_env_id",
    "check_wrappers",
    "learning_rewards",
    "make_env",
    "make_env_fn",
    "probe_env",
]
