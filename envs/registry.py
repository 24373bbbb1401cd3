"""Building envs from ``env_cfg``: ids resolved as ``gymnasium.make`` does, then wrappers.

``env_cfg.id`` takes three forms, resolved identically in the driver, every worker, the
learner and the evaluator (each resolves it in its own process, so a cluster node needs
nothing but the installed packages):

- a gymnasium id, ``CartPole-v1``; ids of a namespace that registers on import
  (``ALE/Pong-v5`` needs ``ale_py``) import their package first, as a gymnasium user
  would expect from the id alone;
- ``module:EnvId``: import ``module`` (which registers its envs) and make ``EnvId``,
  exactly what ``gymnasium.make("module:EnvId")`` does;
- ``module:ClassName``: a class (or any callable) that the module holds, called with
  ``env_cfg.kwargs``. What the module holds after import decides between the two forms.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util
from collections.abc import Callable
from types import ModuleType
from typing import Any

import gymnasium as gym

from envs.agent_api import is_multi_agent
from envs.errors import EnvSpecError
from envs.extras import NAMESPACE_MODULES, find_extra, missing_line
from envs.latency import StepLatency, step_latency_of
from envs.wrappers import FIRST_WRAPPERS, WRAPPERS

ENV_FAMILIES = ("gym",)
EnvSource = str | Callable[..., gym.Env]  # a gymnasium registry id, or a constructor


def _quiet(module: ModuleType) -> ModuleType:
    """Silence ale_py's banner, printed once per env: it would bury one-line errors and logs."""
    if module.__name__ == "ale_py":
        module.ALEInterface.setLoggerMode(module.LoggerMode.Error)
    return module


def _import(module_name: str, env_id: str) -> ModuleType:
    try:
        return _quiet(importlib.import_module(module_name))
    except ImportError as exc:
        # Match the missing module by name only: a user module called "my_mujoco_envs"
        # that is simply absent must not read as "MuJoCo is missing".
        extra = find_extra(module=exc.name) if exc.name else find_extra(text=str(exc))
        if extra is not None:
            raise EnvSpecError(missing_line(f"env_cfg.id={env_id!r}", extra)) from exc
        raise EnvSpecError(
            f"env_cfg.id={env_id!r}: cannot import module {module_name!r} ({exc})"
        ) from exc


def _register_namespace(env_id: str, shown_id: str) -> None:
    """Import the package whose import registers ``env_id``'s namespace (``ALE`` -> ale_py)."""
    namespace = env_id.split("/", 1)[0] if "/" in env_id else None
    module = NAMESPACE_MODULES.get(namespace or "")
    if module is not None:
        _import(module, shown_id)


def _register_installed_plugins() -> None:
    """Import every installed package that registers ids on import (``PongNoFrameskip-v4``)."""
    for module in NAMESPACE_MODULES.values():
        if importlib.util.find_spec(module) is not None:
            try:
                _import(module, module)
            except EnvSpecError:  # a broken plugin must not mask the unknown-id message
                continue


def _close_matches(name: str, candidates: list[str]) -> str:
    close = difflib.get_close_matches(name, candidates, n=3)
    return f"; did you mean {', '.join(close)}?" if close else ""


def resolve_env_id(env_id: str) -> EnvSource:
    """The registered gymnasium id or the constructor that ``env_id`` names."""
    if ":" in env_id:
        module_name, _, name = env_id.partition(":")
        module = _import(module_name, env_id)
        constructor = getattr(module, name, None)
        if callable(constructor):
            return constructor
        _register_namespace(name, env_id)
        if name in gym.registry:
            return name
        public = [a for a in dir(module) if not a.startswith("_")]
        hint = _close_matches(name, public + list(gym.registry))
        raise EnvSpecError(
            f"env_cfg.id={env_id!r}: module {module_name!r} has no env class {name!r} and "
            f"registers no gymnasium env of that id{hint}"
        )
    _register_namespace(env_id, env_id)
    if env_id not in gym.registry:
        _register_installed_plugins()
    if env_id in gym.registry:
        return env_id
    raise EnvSpecError(
        f"env_cfg.id={env_id!r} is not a registered gymnasium env"
        f"{_close_matches(env_id, list(gym.registry))} "
        "(use a gymnasium id, 'my_pkg.my_module:MyEnv-v0' for a module that registers it, "
        "or 'my_pkg.my_module:MyEnv' for a class)"
    )


def registered_reward_threshold(env_id: str) -> float | None:
    """The reward threshold ``env_id``'s gymnasium registration gives (None for an env
    constructed from a class, or registered without one)."""
    source = resolve_env_id(env_id)
    if not isinstance(source, str):
        return None
    threshold = gym.spec(source).reward_threshold
    return None if threshold is None else float(threshold)


def check_env_id(env_id: str) -> None:
    """Raise EnvSpecError for an id that resolves to nothing (imports, builds no env)."""
    resolve_env_id(env_id)


def check_wrappers(names: list[str]) -> None:
    """Raise EnvSpecError for an unknown wrapper name or one out of its place."""
    normalised = {name.replace("_", "").lower(): name for name in WRAPPERS}
    for i, name in enumerate(names):
        if name not in WRAPPERS:
            close = difflib.get_close_matches(name.replace("_", "").lower(), list(normalised))
            hint = f"did you mean {normalised[close[0]]}? " if close else ""
            raise EnvSpecError(
                f"env_cfg.wrappers: {name!r} is not known; {hint}allowed: {', '.join(WRAPPERS)}"
            )
        if name in FIRST_WRAPPERS and i > 0:
            raise EnvSpecError(
                f"env_cfg.wrappers: {name} must come first (it reads the raw emulator), "
                f"got {', '.join(names)}"
            )


def _base_kwargs(env_cfg: Any, source: EnvSource, render_mode: str | None) -> dict[str, Any]:
    kwargs = dict(env_cfg.kwargs or {})
    if render_mode is not None:
        kwargs["render_mode"] = render_mode
    # AtariPreprocessing skips frames itself and refuses a base env that skips too; ALE v5
    # ids skip 4 frames by default, so turn the emulator's skipping off unless the user
    # chose a frameskip (then the wrapper's own check names the conflict).
    if (
        isinstance(source, str)
        and "atari_preprocessing" in (env_cfg.wrappers or [])
        and "frameskip" in gym.spec(source).kwargs
    ):
        kwargs.setdefault("frameskip", 1)
    return kwargs


def make_base_env(
    env_cfg: Any, *, max_episode_steps: int = -1, render_mode: str | None = None
) -> gym.Env:
    """The env that ``env_cfg.id`` names, with ``env_cfg.kwargs``, before any wrapper."""
    source = resolve_env_id(env_cfg.id)
    kwargs = _base_kwargs(env_cfg, source, render_mode)
    if isinstance(source, str):
        steps = {"max_episode_steps": max_episode_steps} if max_episode_steps > 0 else {}
        return gym.make(source, **steps, **kwargs)
    env = source(**kwargs)
    if max_episode_steps > 0 and not is_multi_agent(env):  # a multi-agent env counts its own
        env = gym.wrappers.TimeLimit(env, max_episode_steps=max_episode_steps)
    return env


def wrap_env(env: gym.Env, env_cfg: Any, worker_id: int | None = None) -> gym.Env:
    """``env_cfg.wrappers`` applied in order (``worker_id``: the worker the env steps in,
    None elsewhere; the step_latency wrapper reads it)."""
    for name in env_cfg.wrappers or []:
        if name == "step_latency":
            env = StepLatency(env, step_latency_of(env_cfg, worker_id))
        else:
            env = WRAPPERS[name](env, env_cfg)
    return env


def make_env(
    env_cfg: Any,
    *,
    max_episode_steps: int = -1,
    render_mode: str | None = None,
    worker_id: int | None = None,
) -> gym.Env:
    """One env as configured, with its wrappers applied in order."""
    env = make_base_env(env_cfg, max_episode_steps=max_episode_steps, render_mode=render_mode)
    return wrap_env(env, env_cfg, worker_id)


def make_env_fn(env_cfg: Any, **kwargs: Any) -> Callable[[], gym.Env]:
    """A thunk for gymnasium's vector envs."""
    return lambda: make_env(env_cfg, **kwargs)
