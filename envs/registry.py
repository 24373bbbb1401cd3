"""Building envs from ``env_cfg``: gymnasium ids, import paths, and wrappers by name."""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable
from typing import Any

import gymnasium as gym

from envs.wrappers import WRAPPERS

ENV_FAMILIES = ("gym",)


class EnvSpecError(ValueError):
    """The configured env cannot be built; the message says why and what is allowed."""


def _load_entry_point(path: str) -> Callable[..., gym.Env]:
    module_name, _, attr = path.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise EnvSpecError(
            f"env_cfg.id={path!r}: cannot import module {module_name!r} ({exc})"
        ) from exc
    try:
        return getattr(module, attr)
    except AttributeError as exc:
        raise EnvSpecError(f"env_cfg.id={path!r}: module {module_name!r} has no {attr!r}") from exc


def check_env_id(env_id: str) -> None:
    """Raise EnvSpecError for an id that neither gymnasium nor an import path provides."""
    if ":" in env_id:
        _load_entry_point(env_id)
        return
    if env_id in gym.registry:
        return
    close = difflib.get_close_matches(env_id, list(gym.registry), n=3)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise EnvSpecError(
        f"env_cfg.id={env_id!r} is not a registered gymnasium env{hint} "
        "(use a gymnasium id, gymnasium.register your own, or 'my_pkg.my_module:MyEnv')"
    )


def check_wrappers(names: list[str]) -> None:
    for name in names:
        if name not in WRAPPERS:
            raise EnvSpecError(
                f"env_cfg.wrappers: {name!r} is not known; allowed: {', '.join(WRAPPERS)}"
            )


def make_env(
    env_cfg: Any, *, max_episode_steps: int = -1, render_mode: str | None = None
) -> gym.Env:
    """One env as configured, with its wrappers applied in order."""
    kwargs = dict(env_cfg.kwargs or {})
    if render_mode is not None:
        kwargs["render_mode"] = render_mode
    steps = {"max_episode_steps": max_episode_steps} if max_episode_steps > 0 else {}
    if ":" in env_cfg.id:
        env = _load_entry_point(env_cfg.id)(**kwargs)
        if steps:
            env = gym.wrappers.TimeLimit(env, **steps)
    else:
        env = gym.make(env_cfg.id, **steps, **kwargs)
    for name in env_cfg.wrappers or []:
        env = WRAPPERS[name](env, env_cfg)
    return env


def make_env_fn(env_cfg: Any, **kwargs: Any) -> Callable[[], gym.Env]:
    """A thunk for gymnasium's vector envs."""
    return lambda: make_env(env_cfg, **kwargs)
