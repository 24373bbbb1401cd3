"""A one-choice-per-step task whose legal actions change every step: an action-mask check.

Each of ``n_actions`` actions has a hidden value, fixed for the env (drawn from
``value_seed``, not from the reset seed, so every worker's and evaluator's copy agrees).
Every step a random subset of the actions is legal (at least one) and the observation is
``{"observation": Box(1): the episode's progress, "action_mask": Box(0, 1, (n,), int8)}``,
PettingZoo's layout. The legal action of the best hidden value pays +1, any other legal
action 0, an illegal one ``illegal_reward``; an episode is ``max_steps`` steps. The best
return is ``max_steps``; a policy that ignores the mask pays for every illegal choice.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np


class MaskedChoiceEnv(gym.Env):
    """Pick the best of the legal actions, each step a new legal set."""

    def __init__(
        self,
        n_actions: int = 6,
        max_steps: int = 8,
        legal_prob: float = 0.5,
        illegal_reward: float = -1.0,
        value_seed: int = 0,
        render_mode: str | None = None,
    ) -> None:
        if n_actions < 2 or max_steps < 1 or not 0.0 < legal_prob <= 1.0:
            raise ValueError(
                f"MaskedChoiceEnv needs n_actions >= 2, max_steps >= 1 and legal_prob in "
                f"(0, 1], got {n_actions}, {max_steps}, {legal_prob}"
            )
        self.n_actions, self.max_steps = int(n_actions), int(max_steps)
        self.legal_prob, self.illegal_reward = float(legal_prob), float(illegal_reward)
        self.render_mode = render_mode
        self.values = np.random.default_rng(value_seed).permutation(self.n_actions)
        self.action_space = gym.spaces.Discrete(self.n_actions)
        self.observation_space = gym.spaces.Dict(
            {
                "observation": gym.spaces.Box(0.0, 1.0, (1,), np.float32),
                "action_mask": gym.spaces.Box(0, 1, (self.n_actions,), np.int8),
            }
        )
        self.t = 0
        self.mask = np.ones(self.n_actions, dtype=np.int8)

    def _draw_mask(self) -> np.ndarray:
        mask = (self.np_random.random(self.n_actions) < self.legal_prob).astype(np.int8)
        if not mask.any():
            mask[self.np_random.integers(self.n_actions)] = 1
        return mask

    def _obs(self) -> dict[str, np.ndarray]:
        progress = np.array([self.t / self.max_steps], dtype=np.float32)
        return {"observation": progress, "action_mask": self.mask.copy()}

    def best_legal(self) -> int:
        """The legal action of the highest hidden value (what pays +1 now)."""
        legal = np.flatnonzero(self.mask)
        return int(legal[np.argmax(self.values[legal])])

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        super().reset(seed=seed)
        self.t = 0
        self.mask = self._draw_mask()
        return self._obs(), {}

    def step(self, action: Any) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        action = int(action)
        legal = bool(self.mask[action])
        if not legal:
            reward = self.illegal_reward
        else:
            reward = 1.0 if action == self.best_legal() else 0.0
        self.t += 1
        self.mask = self._draw_mask()
        terminated = self.t >= self.max_steps
        return self._obs(), reward, terminated, False, {"illegal": not legal}
