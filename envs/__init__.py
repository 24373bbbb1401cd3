"""Env factories and wrappers: gymnasium by id, custom envs by import path."""

from envs.config import EnvConfig
from envs.registry import ENV_FAMILIES, EnvSpecError, check_env_id, make_env

__all__ = ["ENV_FAMILIES", "EnvConfig", "EnvSpecError", "check_env_id", "make_env"]
