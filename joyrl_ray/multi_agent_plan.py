"""A multi-agent run's policies and which agent each acts for, as the config check made them.

Built once by the driver from the ``multi_agent`` section and the env's agents (see
:mod:`joyrl_ray.config.multi_agent`); the workers, the learners and the evaluator read it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np

from joyrl_ray.league.league import LeagueSettings

#: ``fixed`` values that are not an import path: how a policy that does not learn acts.
FIXED_RANDOM = "random"
FIXED_CHECKPOINT = "checkpoint"


@dataclass(frozen=True)
class PolicyPlan:
    """One policy of a multi-agent run, checked: what it acts with and whether it learns."""

    policy_id: str
    obs_space: gym.Space  # its agents' (every agent mapped to it has the same)
    action_space: gym.Space
    algo_name: str | None = None  # the algorithm it acts (and learns) with; None: random, scripted
    algo: Any = None  # that algorithm's config
    trained: bool = True
    fixed: str | None = None  # None (trained), random, checkpoint, or a class's import path
    weights: dict[str, np.ndarray] | None = None  # a fixed checkpoint's acting weights


@dataclass(frozen=True)
class MultiAgentPlan:
    """A multi-agent run: the env's agents, the policy of each, and the policies."""

    agents: tuple[str, ...]
    mapping: dict[str, str]  # agent -> policy id
    policies: dict[str, PolicyPlan]
    turn_based: bool
    eval_opponents: tuple[str, ...] = field(default_factory=tuple)
    league: LeagueSettings | None = None  # self-play: the league deals the seats each game
    # Test mode's league game: who plays main's seat (main, or a snapshot in its place) and
    # the snapshot it plays every game against.
    league_test: tuple[str, str] | None = None
    league_test_openings: int = 0  # ... each game's first moves made at random

    @property
    def trained(self) -> list[str]:
        """The ids of the policies that learn, in the order of ``policies``."""
        return [p for p, plan in self.policies.items() if plan.trained]

    def agents_of(self, policy: str) -> list[str]:
        """The agents ``policy`` acts for, in the env's order."""
        return [a for a in self.agents if self.mapping[a] == policy]
