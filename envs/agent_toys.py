"""Small multi-agent worlds (PettingZoo's parallel API) for tests and benchmarks.

:class:`RelayWorld`: agents that leave at different times. Each agent sees the time and
its own index and scores 1 for each step its action matches the time's parity; agent ``i``
leaves after ``lifetime + i * stagger`` steps, so the later ones go on alone, and the
episode ends once all have left. A policy that reads the time scores its agent's lifetime.

:class:`BusyWorld`: ``n_agents`` agents and a step that costs ``step_cost_s`` of CPU (a busy
loop, as a simulator's physics would); its single-agent twin :class:`BusyEnv` costs the
same per step. The multi-agent throughput benchmark compares the two.
"""

from __future__ import annotations

import time
from typing import Any

import gymnasium as gym
import numpy as np
from pettingzoo import ParallelEnv


class RelayWorld(ParallelEnv):
    """Agents that each leave after their own number of steps (see the module doc)."""

    metadata = {"name": "relay_world_v0", "render_modes": []}

    def __init__(self, n_agents: int = 3, lifetime: int = 4, stagger: int = 3) -> None:
        self.possible_agents = [f"agent_{i}" for i in range(n_agents)]
        self.lifetimes = {a: lifetime + i * stagger for i, a in enumerate(self.possible_agents)}
        self.agents: list[str] = []
        self.t = 0
        self._obs_space = gym.spaces.Box(0.0, 100.0, (2,), np.float32)
        self._act_space = gym.spaces.Discrete(2)

    def observation_space(self, agent: str) -> gym.Space:
        return self._obs_space

    def action_space(self, agent: str) -> gym.Space:
        return self._act_space

    def _obs(self, agent: str) -> np.ndarray:
        return np.array([self.t, self.possible_agents.index(agent)], np.float32)

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        self.agents = list(self.possible_agents)
        self.t = 0
        return {a: self._obs(a) for a in self.agents}, {a: {} for a in self.agents}

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        parity = self.t % 2
        self.t += 1
        rewards = {a: float(int(actions[a]) == parity) for a in self.agents}
        terminated = {a: self.t >= self.lifetimes[a] for a in self.agents}
        truncated = dict.fromkeys(self.agents, False)
        obs = {a: self._obs(a) for a in self.agents}
        infos: dict[str, dict] = {a: {} for a in self.agents}
        self.agents = [a for a in self.agents if not terminated[a]]
        return obs, rewards, terminated, truncated, infos


def _busy(seconds: float) -> None:
    if seconds <= 0:
        return
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


class BusyWorld(ParallelEnv):
    """``n_agents`` agents; each step costs ``step_cost_s`` of CPU; episodes of ``length``."""

    metadata = {"name": "busy_world_v0", "render_modes": []}

    def __init__(self, n_agents: int = 2, step_cost_s: float = 0.0005, length: int = 200) -> None:
        self.possible_agents = [f"agent_{i}" for i in range(n_agents)]
        self.step_cost_s, self.length = step_cost_s, length
        self.agents: list[str] = []
        self.t = 0
        self._obs_space = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
        self._act_space = gym.spaces.Discrete(2)
        self.rng = np.random.default_rng()

    def observation_space(self, agent: str) -> gym.Space:
        return self._obs_space

    def action_space(self, agent: str) -> gym.Space:
        return self._act_space

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.agents = list(self.possible_agents)
        self.t = 0
        obs = {a: self.rng.uniform(-1, 1, 4).astype(np.float32) for a in self.agents}
        return obs, {a: {} for a in self.agents}

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        _busy(self.step_cost_s)
        self.t += 1
        obs = {a: self.rng.uniform(-1, 1, 4).astype(np.float32) for a in self.agents}
        rewards = {a: float(actions[a]) for a in self.agents}
        done = self.t >= self.length
        terminated = dict.fromkeys(self.agents, done)
        truncated = dict.fromkeys(self.agents, False)
        infos: dict[str, dict] = {a: {} for a in self.agents}
        if done:
            self.agents = []
        return obs, rewards, terminated, truncated, infos


class BusyEnv(gym.Env):
    """:class:`BusyWorld`'s single-agent twin: the same step cost and episode length."""

    def __init__(self, step_cost_s: float = 0.0005, length: int = 200) -> None:
        self.step_cost_s, self.length = step_cost_s, length
        self.observation_space = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self.t = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[Any, dict]:
        super().reset(seed=seed)
        self.t = 0
        return self.np_random.uniform(-1, 1, 4).astype(np.float32), {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        _busy(self.step_cost_s)
        self.t += 1
        obs = self.np_random.uniform(-1, 1, 4).astype(np.float32)
        return obs, float(action), self.t >= self.length, False, {}
