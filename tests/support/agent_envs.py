"""Multi-agent envs that users bring and the runtime must refuse or take."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from pettingzoo import ParallelEnv


class MaskedBoxWorld(ParallelEnv):
    """Two agents whose observations carry an action mask, but whose actions are continuous:
    a mask cannot apply to them."""

    metadata = {"name": "masked_box_world_v0", "render_modes": []}
    possible_agents = ["a", "b"]

    def __init__(self) -> None:
        self.agents: list[str] = []

    def observation_space(self, agent: str) -> gym.Space:
        return gym.spaces.Dict(
            {
                "observation": gym.spaces.Box(0, 1, (2,), np.float32),
                "action_mask": gym.spaces.Box(0, 1, (3,), np.int8),
            }
        )

    def action_space(self, agent: str) -> gym.Space:
        return gym.spaces.Box(-1, 1, (3,), np.float32)

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        self.agents = list(self.possible_agents)
        return {a: self.observation_space(a).sample() for a in self.agents}, {}

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        obs = {a: self.observation_space(a).sample() for a in self.agents}
        done = dict.fromkeys(self.agents, True)
        rewards = dict.fromkeys(self.agents, 0.0)
        self.agents = []
        return obs, rewards, done, dict.fromkeys(done, False), {}


class TwoSpacesWorld(ParallelEnv):
    """Two agents whose observations differ in size: one policy cannot act for both."""

    metadata = {"name": "two_spaces_world_v0", "render_modes": []}
    possible_agents = ["small", "large"]

    def __init__(self) -> None:
        self.agents: list[str] = []

    def observation_space(self, agent: str) -> gym.Space:
        return gym.spaces.Box(0, 1, (2 if agent == "small" else 5,), np.float32)

    def action_space(self, agent: str) -> gym.Space:
        return gym.spaces.Discrete(2)

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        self.agents = list(self.possible_agents)
        return {a: self.observation_space(a).sample() for a in self.agents}, {}

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        obs = {a: self.observation_space(a).sample() for a in self.agents}
        done = dict.fromkeys(self.agents, True)
        self.agents = []
        return obs, dict.fromkeys(done, 0.0), done, dict.fromkeys(done, False), {}


class FlakyTicTacToe:
    """PettingZoo's tic-tac-toe whose ``step`` raises on about ``rate`` of its calls, as a
    game client that fails now and then (seeded by the env's reset seed, else by how many
    such envs this process built: a rebuilt env does not fail where its predecessor did)."""

    built = 0

    def __new__(cls, rate: float = 0.02) -> Any:
        from pettingzoo.classic import tictactoe_v3

        env = tictactoe_v3.env()
        step, reset = env.step, env.reset
        cls.built += 1
        rng = np.random.default_rng(cls.built)

        def flaky_reset(seed: int | None = None, options: dict | None = None) -> None:
            nonlocal rng
            if seed is not None:
                rng = np.random.default_rng(seed)
            reset(seed=seed, options=options)

        def flaky_step(action: Any) -> None:
            if rng.random() < rate:
                raise RuntimeError("the game client lost its connection")
            step(action)

        env.reset, env.step = flaky_reset, flaky_step
        return env
