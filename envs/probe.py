"""Build one env before anything starts, so a missing package or a bad kwarg is one line.

The driver calls :func:`probe_env` before it starts Ray: an env family whose packages are
not installed (gymnasium's ``DependencyNotInstalled``, an ``ImportError``), missing Atari
ROMs, constructor kwargs the env does not take, or a wrapper that does not fit the env
become an :class:`EnvSpecError` naming what is missing and the pip command that installs
it, instead of a traceback from inside an actor.
"""

from __future__ import annotations

import re
from typing import Any

import gymnasium as gym

from envs.agent_api import is_multi_agent
from envs.errors import EnvSpecError, one_line
from envs.extras import ENTRY_POINT_FAMILIES, extra_by_family, find_extra, missing_line
from envs.multi_agent import AgentSpaces
from envs.observations import unsupported_observation_space
from envs.registry import make_base_env, resolve_env_id
from envs.wrappers import WRAPPERS

ROM_WORDS = re.compile(r"\brom", re.IGNORECASE)


def _family(env_id: str) -> str | None:
    """The optional family that a registered id's entry point belongs to, if any."""
    try:
        source = resolve_env_id(env_id)
    except EnvSpecError:
        return None
    entry_point = gym.spec(source).entry_point if isinstance(source, str) else None
    if not isinstance(entry_point, str):
        return None
    return next((f for p, f in ENTRY_POINT_FAMILIES.items() if entry_point.startswith(p)), None)


def _explain(subject: str, exc: Exception, family: str | None) -> str | None:
    """One line for an error that a user fixes by installing or configuring; else None."""
    text = one_line(exc)
    if isinstance(exc, gym.error.DependencyNotInstalled):
        extra = find_extra(text=text, family=family)
        return missing_line(subject, extra) if extra else f"{subject}: {text}"
    if isinstance(exc, ImportError):
        # By the missing module's name when known: its text may name a user module.
        by_name = {"module": exc.name} if exc.name else {"text": text}
        extra = find_extra(**by_name, family=family)
        return missing_line(subject, extra) if extra else f"{subject}: cannot import ({text})"
    if isinstance(exc, OSError) and ROM_WORDS.search(text):
        atari = extra_by_family("atari").pip.replace("install", "install --force-reinstall", 1)
        return f"{subject}: the Atari ROM cannot be loaded ({text}); reinstall ale-py: {atari}"
    if isinstance(exc, TypeError):
        return f"{subject}: the env does not take these env_cfg.kwargs: {text}"
    if isinstance(exc, (ValueError, gym.error.Error)):
        return f"{subject}: {text}"
    return None


def probe_env(env_cfg: Any, *, max_episode_steps: int = -1) -> tuple[gym.Space, gym.Space]:
    """(observation space, action space) of one env built with its wrappers, then closed.

    Raises EnvSpecError with one line for anything the user fixes by installing a package
    or changing env_cfg (a multi-agent env: see :func:`probe_spaces`); any other error (a
    bug in an env) keeps its traceback.
    """
    spaces = probe_spaces(env_cfg, max_episode_steps=max_episode_steps)
    if isinstance(spaces, AgentSpaces):
        raise EnvSpecError(
            f"env_cfg.id={env_cfg.id!r} is a multi-agent env (agents: {', '.join(spaces.agents)})"
            "; a single-agent run cannot step it"
        )
    return spaces


def probe_spaces(
    env_cfg: Any, *, max_episode_steps: int = -1
) -> tuple[gym.Space, gym.Space] | AgentSpaces:
    """The spaces of one env built as configured, then closed: a single-agent env's
    (observation space, action space), a multi-agent env's agents and their spaces."""
    family = _family(env_cfg.id)
    subject = f"env_cfg.id={env_cfg.id!r}"
    try:
        env = make_base_env(env_cfg, max_episode_steps=max_episode_steps)
    except EnvSpecError:
        raise
    except Exception as exc:
        line = _explain(subject, exc, family)
        if line is None:
            raise
        raise EnvSpecError(line) from exc
    if is_multi_agent(env):
        try:
            return _agent_spaces(env, env_cfg, subject)
        finally:
            env.close()
    try:
        for name in env_cfg.wrappers or []:
            try:
                env = WRAPPERS[name](env, env_cfg)
            except EnvSpecError:
                raise
            except Exception as exc:
                line = _explain(f"env_cfg.wrappers: {name} on {env_cfg.id}", exc, None)
                if line is None:
                    raise
                raise EnvSpecError(line) from exc
        unsupported = unsupported_observation_space(env.observation_space)
        if unsupported is not None:
            raise EnvSpecError(f"{subject}: {unsupported}")
        return env.observation_space, env.action_space
    finally:
        env.close()


def _agent_spaces(env: Any, env_cfg: Any, subject: str) -> AgentSpaces:
    """A multi-agent env's agents and spaces, each observation space one the runtime takes."""
    if env_cfg.wrappers:
        raise EnvSpecError(
            f"env_cfg.wrappers: {', '.join(env_cfg.wrappers)} wrap single-agent envs, and "
            f"{env_cfg.id!r} is a multi-agent one; allowed: none"
        )
    spaces = AgentSpaces.of(env)
    for agent, space in spaces.observation.items():
        unsupported = unsupported_observation_space(space)
        if unsupported is not None:
            raise EnvSpecError(f"{subject}: agent {agent}: {unsupported}")
    return spaces
