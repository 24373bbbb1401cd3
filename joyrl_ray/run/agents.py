"""A multi-agent run's plan, checked against its env before anything starts.

The ``multi_agent`` section names the policies and maps the env's agents to them; once the
env's agents and spaces are known (the probe), this checks the rest: every agent has a
policy, a policy's agents share their spaces, each policy's algorithm (or fixed behaviour)
can act in them, none keeps a memory (recurrent policies are not for multi-agent runs yet),
and a fixed checkpoint's weights load. Each problem is one line (``ConfigError`` or
``CheckpointError``, exit code 2).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np

from algos.recurrent import MEMORY
from algos.scripted import load_script
from envs.multi_agent import AgentSpaces
from joyrl_ray.config import ConfigError, RunConfig
from joyrl_ray.config.league import LeagueConfigError, league_settings
from joyrl_ray.config.multi_agent import (
    MultiAgentConfigError,
    fixed_kind,
    map_agents,
    multi_agent_plan,
)
from joyrl_ray.multi_agent_plan import FIXED_CHECKPOINT, MultiAgentPlan, PolicyPlan
from joyrl_ray.roles.acting import Observations, acting_policy
from joyrl_ray.run.checkpoint import (
    CheckpointError,
    find_checkpoint,
    load_checkpoint,
    resolve_task_dir,
)
from joyrl_ray.run.league_files import read_snapshot, snapshot_names

#: What a multi-agent run does not take yet: general_cfg / env_cfg keys and why.
NOT_FOR_MULTI_AGENT = {
    "env_cfg.normalize_obs": "observation normalization",
    "env_cfg.normalize_reward": "reward normalization",
    "general_cfg.save_buffer": "keeping the replay with checkpoints",
}


def refuse_unsupported(cfg: RunConfig) -> None:
    """One line for a setting a multi-agent run does not take."""
    settings = {
        "env_cfg.normalize_obs": cfg.env.normalize_obs,
        "env_cfg.normalize_reward": cfg.env.normalize_reward,
        "general_cfg.save_buffer": cfg.general.save_buffer,
    }
    for key, on in settings.items():
        if on:
            raise ConfigError(
                f"{key}=true: {NOT_FOR_MULTI_AGENT[key]} is not available in multi-agent runs "
                "yet; allowed: false"
            )
    if cfg.env.vector_mode != "sync":
        raise ConfigError(
            f"env_cfg.vector_mode={cfg.env.vector_mode}: a multi-agent run's envs step in the "
            "worker's process; allowed: sync"
        )


def prepare_agents(cfg: RunConfig, spaces: AgentSpaces) -> MultiAgentPlan:
    """The checked plan of ``cfg``'s ``multi_agent`` section for an env with ``spaces``."""
    section = cfg.multi_agent
    if section is None:
        example = "multi_agent.policies={shared: {}} multi_agent.policy_mapping={'*': shared}"
        raise ConfigError(
            f"env_cfg.id={cfg.env.id!r} is a multi-agent env (agents: "
            f"{', '.join(spaces.agents)}); add a multi_agent section naming its policies and "
            f"which agent each acts for, e.g. {example}"
        )
    refuse_unsupported(cfg)
    league = None
    if cfg.league is not None:  # the league's checks first: it deals the seats
        learning = {name: policy.fixed is None for name, policy in section.policies.items()}
        try:
            league = league_settings(cfg.league, learning, spaces.agents, _symmetric(spaces))
        except LeagueConfigError as exc:
            raise ConfigError(str(exc)) from None
        # For the checks below, main plays every seat.
        section = dataclasses.replace(section, policy_mapping={"*": league.main})
    algos = {
        name: (section.policies[name].algo_name, algo) for name, algo in cfg.policy_algos.items()
    }
    dealt = league.exploiters if league is not None else ()
    try:
        mapping = map_agents(section, spaces.agents, dealt)
        for name, policy in section.policies.items():
            fixed_kind(name, policy)
        weights = {
            name: _checkpoint_weights(cfg, name, spaces, mapping)
            for name, policy in section.policies.items()
            if policy.fixed == FIXED_CHECKPOINT
        }
        plan = multi_agent_plan(section, spaces, algos, weights, dealt)
        plan = dataclasses.replace(plan, league=league)
    except MultiAgentConfigError as exc:
        raise ConfigError(str(exc)) from None
    for planned in plan.policies.values():
        _check_acting(planned)
    if cfg.league is not None and cfg.general.mode == "test":
        plan = _league_test(cfg, plan)
    return plan


def _league_test(cfg: RunConfig, plan: MultiAgentPlan) -> MultiAgentPlan:
    """Test mode's league game: main (or ``league.test_player``) against the loaded run's
    snapshot ``league.test_opponent``, a fixed policy of its own with the snapshot's weights."""
    assert cfg.league is not None and plan.league is not None
    opponent, player = cfg.league.test_opponent, cfg.league.test_player
    if opponent is None:
        if player is not None:
            raise ConfigError(
                f"league.test_player={player}: name the snapshot it plays against too "
                "(league.test_opponent)"
            )
        return plan
    source = resolve_task_dir(cfg.general.load_path, cfg.general.tasks_dir)
    frozen = snapshot_names(source)
    main = plan.policies[plan.league.main]
    for key, name, allowed in (
        ("test_opponent", opponent, frozen),
        ("test_player", player, [main.policy_id, *frozen]),
    ):
        if name is not None and name not in allowed:
            raise ConfigError(
                f"league.{key}={name!r} is not a snapshot of {source}; allowed: "
                f"{', '.join(allowed) or 'none (that run froze none)'}"
            )
    member = dataclasses.replace(
        main,
        policy_id=opponent,
        trained=False,
        fixed=FIXED_CHECKPOINT,
        weights=read_snapshot(source / "models", opponent),
    )
    return dataclasses.replace(
        plan,
        policies={**plan.policies, opponent: member},
        league_test=(player or main.policy_id, opponent),
        league_test_openings=cfg.league.test_opening_moves,
    )


def _symmetric(spaces: AgentSpaces) -> bool:
    """Whether every agent has the first one's spaces (a policy can take any seat)."""
    first = spaces.agents[0]
    return all(
        spaces.observation[a] == spaces.observation[first]
        and spaces.action[a] == spaces.action[first]
        for a in spaces.agents
    )


def refuse_section(cfg: RunConfig) -> None:
    """A single-agent env takes no ``multi_agent`` or ``league`` section."""
    if cfg.league is not None:
        raise ConfigError(
            f"league: env_cfg.id={cfg.env.id!r} is a single-agent env; a league plays "
            "snapshots of a policy against it in a game of two seats or more (e.g. "
            "pettingzoo.classic.connect_four_v3:env); remove the league section"
        )
    if cfg.multi_agent is not None:
        raise ConfigError(
            f"multi_agent: env_cfg.id={cfg.env.id!r} is a single-agent env; remove the "
            "multi_agent section (it is for multi-agent envs: PettingZoo's games and worlds)"
        )


def _check_acting(plan: PolicyPlan) -> None:
    """The policy can act in its agents' spaces, and keeps no memory between steps."""
    where = f"multi_agent.policies.{plan.policy_id}"
    if plan.algo_name is None and plan.fixed is not None and ":" in plan.fixed:
        try:
            load_script(plan.fixed)
        except ValueError as exc:
            raise ConfigError(f"{where}.fixed={plan.fixed}: {exc}") from None
    try:
        policy = acting_policy(plan)
        sample = Observations(plan.obs_space).many([plan.obs_space.sample()])
        _, extras = policy.act(sample, explore=False, env_steps=0)
    except ValueError as exc:
        what = f"algo_name={plan.algo_name}" if plan.algo_name else f"fixed={plan.fixed}"
        raise ConfigError(f"{where}.{what} {exc}") from None
    if MEMORY in extras:
        raise ConfigError(
            f"{where}.algo_name={plan.algo_name}: a policy with memory (an lstm or gru layer) "
            "is not available in multi-agent runs yet; allowed: feed-forward layers"
        )


def _checkpoint_weights(
    cfg: RunConfig, name: str, spaces: AgentSpaces, mapping: dict[str, str]
) -> dict[str, np.ndarray]:
    """The acting weights a fixed ``checkpoint`` policy plays with, from its ``load_path``."""
    assert cfg.multi_agent is not None
    policy = cfg.multi_agent.policies[name]
    where = f"multi_agent.policies.{name}.load_path={policy.load_path}"
    state = _load_state(cfg, str(policy.load_path), policy.load_policy, where)
    algo_name = cfg.multi_agent.policies[name].algo_name
    if state.get("algo_name") not in (None, algo_name):
        raise CheckpointError(
            f"{where}: written by algo {state.get('algo_name')!r}, but the policy's algo_name "
            f"is {algo_name!r} (set multi_agent.policies.{name}.algo_name to match)"
        )
    agent = next(a for a in spaces.agents if mapping[a] == name)
    plan = PolicyPlan(
        name, spaces.observation[agent], spaces.action[agent], algo_name, cfg.policy_algos[name]
    )
    acting = acting_policy(plan)
    try:
        acting.load_acting_state(state["policy"])
    except (RuntimeError, KeyError, ValueError, TypeError) as exc:
        detail = " ".join(str(exc).split())[:200]
        raise CheckpointError(
            f"{where}: the checkpoint does not fit the policy ({detail})"
        ) from None
    return acting.get_weights()


def _load_state(cfg: RunConfig, load_path: str, load_policy: str | None, where: str) -> Any:
    """The checkpoint ``load_path`` names: a .pt file, or a task directory's (its policy
    ``load_policy``'s in a multi-agent run's, its only one's otherwise)."""
    path = Path(load_path)
    if path.is_file():
        return load_checkpoint(path)
    try:
        task = resolve_task_dir(load_path, cfg.general.tasks_dir)
    except CheckpointError as exc:
        raise CheckpointError(f"{where}: {exc}") from None
    policies = sorted(p.name for p in (task / "models").iterdir() if p.is_dir())
    if policies:
        chosen = load_policy or (policies[0] if len(policies) == 1 else None)
        if chosen not in policies:
            raise CheckpointError(
                f"{where}: that run has policies {', '.join(policies)}; name one with load_policy"
            )
        return find_checkpoint(task, "best", policy=chosen).state
    return find_checkpoint(task, "best").state
