"""The ``multi_agent`` section: several agents in one env, each acting with a policy.

A multi-agent env (PettingZoo: a turn-based game or a parallel world) needs this section,
and a single-agent env refuses it. It names the run's policies, each with its algorithm and
its own ``algo_cfg`` (over its algorithm's defaults; over ``algo_cfg`` too when it runs
``general_cfg.algo_name``), or a fixed behaviour; and which policy each agent acts with::

    multi_agent:
      policies:
        shared: {algo_name: PPO}             # learns; every agent below acts with it
        opponent: {fixed: random}            # acts at random (legal moves only), never learns
      policy_mapping: {"player_1": shared, "*": shared}   # agent id or pattern -> policy

Patterns are shell-style (``player_*``, ``*``); an agent takes the first entry that matches,
in the section's order. A policy with ``fixed`` does not learn: ``random``, ``checkpoint``
(the acting weights of ``load_path``'s checkpoint: a task directory or a ``.pt`` file, its
policy ``load_policy``) or a class of the user's by import path (``pkg.module:Class``,
see :mod:`algos.scripted`). The checks that need the env's agents and spaces run once they
are known, before anything starts (:func:`multi_agent_plan`).
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np

from envs.multi_agent import AgentSpaces
from joyrl_ray.multi_agent_plan import (
    FIXED_CHECKPOINT,
    FIXED_RANDOM,
    MultiAgentPlan,
    PolicyPlan,
)

#: Names a policy may not take: an agent's outcome files name policies beside these.
RESERVED_POLICY_NAMES = ("default",)
EVAL_RANDOM = "random"


@dataclass
class PolicyConfig:
    """One policy of a multi-agent run."""

    algo_name: str | None = None  # its algorithm (null: general_cfg.algo_name)
    algo_cfg: dict[str, Any] = field(default_factory=dict)  # over its algorithm's defaults
    fixed: str | None = None  # null: it learns; random, checkpoint, or pkg.module:Class
    load_path: str | None = None  # fixed checkpoint: a task directory or a .pt file
    load_policy: str | None = None  # fixed checkpoint: that run's policy (null: its only one)


@dataclass
class MultiAgentConfig:
    """Several agents in one env (PettingZoo): the policies, and which agent each acts for."""

    policies: dict[str, PolicyConfig] = field(default_factory=dict)  # name -> policy
    policy_mapping: dict[str, str] = field(default_factory=dict)  # agent or pattern -> policy
    eval_opponents: list[str] = field(default_factory=list)  # random, or policies' names
    threshold_policy: str | None = None  # reward_threshold's policy (null: the first learning)
    threshold_opponent: str | None = None  # ... against this opponent (null: the first)
    threshold_metric: str = "return_mean"  # ... and figure: return_mean or win_rate


class MultiAgentConfigError(ValueError):
    """A ``multi_agent`` section that does not fit the env; the one line to show."""


def map_agents(
    section: MultiAgentConfig, agents: tuple[str, ...], dealt: tuple[str, ...] = ()
) -> dict[str, str]:
    """Each agent's policy: the first ``policy_mapping`` entry that names or matches it
    (``dealt``: policies a league seats game by game, mapped to no agent)."""
    mapping: dict[str, str] = {}
    for pattern, policy in section.policy_mapping.items():
        if policy not in section.policies:
            raise MultiAgentConfigError(
                f"multi_agent.policy_mapping: {pattern} -> {policy}: no policy {policy!r} "
                f"(policies: {', '.join(section.policies) or 'none'})"
            )
        matched = [a for a in agents if a == pattern or fnmatch.fnmatchcase(a, pattern)]
        if not matched:
            raise MultiAgentConfigError(
                f"multi_agent.policy_mapping: {pattern!r} matches no agent of the env "
                f"(agents: {', '.join(agents)})"
            )
        for agent in matched:
            mapping.setdefault(agent, policy)
    missing = [a for a in agents if a not in mapping]
    if missing:
        raise MultiAgentConfigError(
            f"multi_agent.policy_mapping: agent{'s' if len(missing) > 1 else ''} "
            f"{', '.join(missing)} {'have' if len(missing) > 1 else 'has'} no policy; map "
            f"{'them' if len(missing) > 1 else 'it'} (by id, or a pattern such as '*') to one "
            f"of: {', '.join(section.policies)}"
        )
    idle = [p for p in section.policies if p not in mapping.values() and p not in dealt]
    if idle:
        raise MultiAgentConfigError(
            f"multi_agent.policies: {', '.join(idle)} act{'s' if len(idle) == 1 else ''} for no "
            f"agent; map an agent to {'it' if len(idle) == 1 else 'them'} in "
            "multi_agent.policy_mapping, or remove it"
        )
    return mapping


def shared_spaces(
    policy: str, agents: list[str], spaces: AgentSpaces
) -> tuple[gym.Space, gym.Space]:
    """The spaces of ``policy``'s agents: one pair, which they all must have."""
    first = agents[0]
    obs, act = spaces.observation[first], spaces.action[first]
    for agent in agents[1:]:
        for what, mine, theirs in (
            ("observation", spaces.observation[agent], obs),
            ("action", spaces.action[agent], act),
        ):
            if mine != theirs:
                raise MultiAgentConfigError(
                    f"multi_agent.policy_mapping: policy {policy} acts for {first} and {agent}, "
                    f"whose {what} spaces differ ({theirs} and {mine}); give them a policy each"
                )
    return obs, act


def fixed_kind(policy: str, cfg: PolicyConfig) -> str | None:
    """Check ``fixed``: random, checkpoint (with a load_path) or an import path."""
    fixed = cfg.fixed
    if fixed is None:
        return None
    if fixed == FIXED_CHECKPOINT and not cfg.load_path:
        raise MultiAgentConfigError(
            f"multi_agent.policies.{policy}.fixed=checkpoint needs load_path (a task "
            "directory or a .pt file of the run whose policy it plays)"
        )
    if fixed not in (FIXED_RANDOM, FIXED_CHECKPOINT) and ":" not in fixed:
        raise MultiAgentConfigError(
            f"multi_agent.policies.{policy}.fixed={fixed!r} is not allowed; allowed: null "
            "(it learns), random, checkpoint, or a class's import path 'pkg.module:Class'"
        )
    return fixed


THRESHOLD_METRICS = ("return_mean", "win_rate")


def check_eval_opponents(section: MultiAgentConfig) -> tuple[str, ...]:
    """The opponents, and the threshold's policy, opponent and figure, are the run's."""
    allowed = (EVAL_RANDOM, *section.policies)
    for opponent in section.eval_opponents:
        if opponent not in allowed:
            raise MultiAgentConfigError(
                f"multi_agent.eval_opponents: {opponent!r} is not allowed; allowed: "
                f"{', '.join(allowed)}"
            )
    learning = [p for p, c in section.policies.items() if c.fixed is None]
    if section.threshold_policy is not None and section.threshold_policy not in learning:
        raise MultiAgentConfigError(
            f"multi_agent.threshold_policy={section.threshold_policy!r} is not allowed; "
            f"allowed: a learning policy ({', '.join(learning)})"
        )
    threshold_opponent = section.threshold_opponent
    if threshold_opponent is not None and threshold_opponent not in section.eval_opponents:
        raise MultiAgentConfigError(
            f"multi_agent.threshold_opponent={threshold_opponent!r} is not allowed; allowed: "
            f"one of multi_agent.eval_opponents ({', '.join(section.eval_opponents) or 'none'})"
        )
    if section.threshold_metric not in THRESHOLD_METRICS:
        raise MultiAgentConfigError(
            f"multi_agent.threshold_metric={section.threshold_metric!r} is not allowed; "
            f"allowed: {', '.join(THRESHOLD_METRICS)}"
        )
    if section.threshold_metric == "win_rate" and not section.eval_opponents:
        raise MultiAgentConfigError(
            "multi_agent.threshold_metric=win_rate needs an opponent to win against; name one "
            "in multi_agent.eval_opponents (e.g. random)"
        )
    return tuple(section.eval_opponents)


def multi_agent_plan(
    section: MultiAgentConfig,
    spaces: AgentSpaces,
    algo_configs: dict[str, tuple[str | None, Any]],
    fixed_weights: dict[str, dict[str, np.ndarray]],
    dealt: tuple[str, ...] = (),
) -> MultiAgentPlan:
    """The checked plan: each agent's policy and each policy's spaces, algorithm and config
    (``algo_configs``: name -> (algo_name, its merged config), None for random and scripts),
    and a fixed checkpoint's acting weights (``fixed_weights``)."""
    mapping = map_agents(section, spaces.agents, dealt)
    plans: dict[str, PolicyPlan] = {}
    for policy, cfg in section.policies.items():
        # A policy the league seats game by game takes any seat: the game's are all alike.
        agents = [a for a in spaces.agents if mapping[a] == policy] or list(spaces.agents[:1])
        obs, act = shared_spaces(policy, agents, spaces)
        fixed = fixed_kind(policy, cfg)
        algo_name, algo = algo_configs.get(policy, (None, None))
        plans[policy] = PolicyPlan(
            policy_id=policy,
            obs_space=obs,
            action_space=act,
            algo_name=algo_name,
            algo=algo,
            trained=fixed is None,
            fixed=fixed,
            weights=fixed_weights.get(policy),
        )
    if not any(plan.trained for plan in plans.values()):
        raise MultiAgentConfigError(
            "multi_agent.policies: every policy is fixed, so nothing learns; leave fixed "
            "unset on the policy that should learn (test mode plays fixed ones too)"
        )
    return MultiAgentPlan(
        agents=spaces.agents,
        mapping=mapping,
        policies=plans,
        turn_based=spaces.turn_based,
        eval_opponents=check_eval_opponents(section),
    )
