"""Multi-agent envs (PettingZoo), turn-based or parallel, behind one interface.

PettingZoo's API is the env contract: an ``AECEnv`` (turn-based: one agent acts at a time,
``agent_selection``) or a ``ParallelEnv`` (every live agent acts each step), with spaces per
agent (``env.observation_space(agent)``) and legal actions, where a game has them, in the
observation (a ``Dict`` with an ``action_mask`` key). Either is given by ``env_cfg.id`` like
any env: ``pettingzoo.classic.tictactoe_v3:env``, ``mpe2.simple_spread_v3:parallel_env``.

:class:`MultiAgentEnv` hides which of the two an env is. It says which agents must act now
(:attr:`MultiAgentEnv.deciding`, with their observations) and, once they acted
(:meth:`MultiAgentEnv.step`), which of the agents' earlier decisions are complete: a
:class:`Outcome` per decision, with the reward the agent got since it acted (a turn-based
agent's reward comes in while the others move), whether its episode ended and the
observation it acts from next (its last one, when its episode ended). An agent may leave
before the others (terminated or truncated alone); the episode is over once every agent
has left, and :meth:`MultiAgentEnv.reset` starts the next. ``max_steps`` (``general_cfg.
max_step``) truncates every agent still in the game after that many env steps.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gymnasium as gym

from envs.agent_api import is_multi_agent, is_turn_based
from envs.errors import EnvSpecError
from envs.registry import make_base_env


@dataclass(frozen=True)
class AgentSpaces:
    """A multi-agent env's agents and each one's spaces."""

    agents: tuple[str, ...]  # the env's possible agents, in its own order
    observation: dict[str, gym.Space]
    action: dict[str, gym.Space]
    turn_based: bool

    @classmethod
    def of(cls, env: Any) -> AgentSpaces:
        agents = tuple(env.possible_agents)
        return cls(
            agents,
            {a: env.observation_space(a) for a in agents},
            {a: env.action_space(a) for a in agents},
            is_turn_based(env),
        )


@dataclass
class Outcome:
    """How one agent's decision turned out: the reward it got since it acted, whether its
    episode ended there, and the observation after it (the agent's next one to act from, or
    its last when its episode ended)."""

    agent: str
    reward: float
    terminated: bool
    truncated: bool
    next_obs: Any


class MultiAgentEnv:
    """One PettingZoo env, turn-based or parallel, as decisions and their outcomes."""

    def __init__(self, env: Any, *, max_steps: int = -1) -> None:
        self.env = env
        self.turn_based = is_turn_based(env)
        self.agents: tuple[str, ...] = tuple(env.possible_agents)
        self.max_steps = max_steps
        self.steps = 0  # env steps (actions applied) in this episode
        self.deciding: dict[str, Any] = {}  # agent -> the observation it acts from now
        self.open: set[str] = set()  # agents whose last decision has no outcome yet
        self.over = True  # no episode running: reset() first

    # ----- spaces -----
    def observation_space(self, agent: str) -> gym.Space:
        return self.env.observation_space(agent)

    def action_space(self, agent: str) -> gym.Space:
        return self.env.action_space(agent)

    # ----- stepping -----
    def reset(self, seed: int | None = None) -> None:
        """Start an episode; :attr:`deciding` then holds the agents that act first."""
        self.steps = 0
        self.open.clear()
        self.over = False
        if self.turn_based:
            self.env.reset(seed=seed)
            self.deciding = {}
            self._advance([])
        else:
            obs, _ = self.env.reset(seed=seed)
            self.deciding = {a: obs[a] for a in self.env.agents}
            self.over = not self.deciding

    def step(self, actions: dict[str, Any]) -> list[Outcome]:
        """Apply the actions of the agents in :attr:`deciding`; the outcomes of the decisions
        that are complete now (an agent's own, at once in a parallel env; in a turn-based
        one when the agent is to move again or its episode ended)."""
        self.open.update(actions)
        self.steps += 1
        outcomes: list[Outcome] = []
        if self.turn_based:
            (agent,) = self.deciding
            self.env.step(actions[agent])
            self.deciding = {}
            self._advance(outcomes)
        else:
            obs, rewards, terminated, truncated, _ = self.env.step(actions)
            for agent in actions:
                self.open.discard(agent)
                outcomes.append(
                    Outcome(
                        agent,
                        float(rewards[agent]),
                        bool(terminated[agent]),
                        bool(truncated[agent]),
                        obs[agent],
                    )
                )
            live = self.env.agents
            self.deciding = {a: obs[a] for a in live}
            self.over = not live
        if not self.over and 0 < self.max_steps <= self.steps:
            self._truncate(outcomes)
        return outcomes

    def _advance(self, outcomes: list[Outcome]) -> None:
        """Turn-based: move on to the next agent that must decide, finishing the decisions
        of the agents passed on the way (their outcomes) and taking out the agents that left."""
        env = self.env
        while env.agents:
            agent = env.agent_selection
            obs, reward, terminated, truncated, _ = env.last()
            if agent in self.open:
                self.open.discard(agent)
                outcomes.append(
                    Outcome(agent, float(reward), bool(terminated), bool(truncated), obs)
                )
            if terminated or truncated:
                env.step(None)  # the agent leaves the game
                continue
            self.deciding = {agent: obs}
            return
        self.deciding = {}
        self.over = True

    def _truncate(self, outcomes: list[Outcome]) -> None:
        """``max_steps`` reached: every agent still in the game is truncated here."""
        done = {o.agent: o for o in outcomes}
        for outcome in outcomes:  # decided this step: their outcome ends the episode
            if not outcome.terminated:
                outcome.truncated = True
        if self.turn_based:
            pending = getattr(self.env, "_cumulative_rewards", {})
            for agent in sorted(self.open - set(done)):
                reward = float(pending.get(agent, 0.0))
                outcomes.append(Outcome(agent, reward, False, True, self.env.observe(agent)))
        self.open.clear()
        self.deciding = {}
        self.over = True

    # ----- the rest -----
    def render(self) -> Any:
        return self.env.render()

    def close(self) -> None:
        self.env.close()


def make_multi_agent_env(
    env_cfg: Any, *, max_steps: int = -1, render_mode: str | None = None
) -> MultiAgentEnv:
    """The multi-agent env ``env_cfg`` names (its id and kwargs), as a :class:`MultiAgentEnv`."""
    env = make_base_env(env_cfg, render_mode=render_mode)
    if not is_multi_agent(env):
        env.close()
        raise EnvSpecError(f"env_cfg.id={env_cfg.id!r} is not a multi-agent (PettingZoo) env")
    return MultiAgentEnv(env, max_steps=max_steps)
