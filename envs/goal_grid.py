"""A small goal-conditioned task with structured observations: reach the goal on a grid.

The agent and a goal sit on different cells of a ``size x size`` grid, both drawn at every
reset; the observation gives both, so a policy must read two inputs together, which is
what a Dict (or Tuple) observation is for. Reaching the goal ends the episode with reward
1; every other step costs ``step_cost``; episodes are cut after ``max_steps``. The best
return is therefore ``1 - step_cost * (distance - 1)``, about 0.97 on the 5 x 5 grid.

``observation``: ``"dict"`` gives ``{"pos": Box(2), "goal": Box(2)}`` (cells scaled to
[0, 1]); ``"tuple"`` gives ``(Box(2), Discrete(size * size))``: the position, and the
goal's cell as a number. ``actions``: ``"discrete"`` moves one cell (0 up, 1 down, 2 left,
3 right); ``"continuous"`` takes a ``Box(-1, 1, (2,))`` move, rounded to the nearest of
the eight neighbouring cells (or none).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

MOVES = np.array([[0, 1], [0, -1], [-1, 0], [1, 0]])


class GoalGridEnv(gym.Env):
    """Reach a goal cell; the observation holds the position and the goal."""

    metadata = {"render_modes": ["rgb_array"]}

    def __init__(
        self,
        size: int = 5,
        max_steps: int = 20,
        step_cost: float = 0.01,
        observation: str = "dict",
        actions: str = "discrete",
        render_mode: str | None = None,
    ) -> None:
        if observation not in ("dict", "tuple") or actions not in ("discrete", "continuous"):
            raise ValueError(
                f"GoalGridEnv: observation={observation!r} (allowed: dict, tuple), "
                f"actions={actions!r} (allowed: discrete, continuous)"
            )
        self.size, self.max_steps, self.step_cost = size, max_steps, step_cost
        self.kind = observation
        self.render_mode = render_mode
        cell = gym.spaces.Box(0.0, 1.0, (2,), np.float32)
        if observation == "dict":
            self.observation_space = gym.spaces.Dict({"pos": cell, "goal": cell})
        else:
            self.observation_space = gym.spaces.Tuple((cell, gym.spaces.Discrete(size * size)))
        if actions == "discrete":
            self.action_space = gym.spaces.Discrete(4)
        else:
            self.action_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
        self.pos = np.zeros(2, np.int64)
        self.goal = np.zeros(2, np.int64)
        self.t = 0

    def _observation(self) -> Any:
        pos = (self.pos / (self.size - 1)).astype(np.float32)
        if self.kind == "dict":
            return {"pos": pos, "goal": (self.goal / (self.size - 1)).astype(np.float32)}
        return (pos, int(self.goal[0] * self.size + self.goal[1]))

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        cells = self.np_random.choice(self.size * self.size, size=2, replace=False)
        self.pos = np.array(divmod(int(cells[0]), self.size))
        self.goal = np.array(divmod(int(cells[1]), self.size))
        self.t = 0
        return self._observation(), {}

    def _move(self, action: Any) -> np.ndarray:
        if isinstance(self.action_space, gym.spaces.Discrete):
            return MOVES[int(action)]
        return np.rint(np.clip(np.asarray(action, np.float64), -1.0, 1.0)).astype(np.int64)

    def step(self, action: Any):
        self.pos = np.clip(self.pos + self._move(action), 0, self.size - 1)
        self.t += 1
        reached = bool(np.array_equal(self.pos, self.goal))
        reward = 1.0 if reached else -self.step_cost
        return self._observation(), reward, reached, self.t >= self.max_steps, {}

    def render(self) -> np.ndarray:
        image = np.full((self.size * 8, self.size * 8, 3), 255, np.uint8)
        for (row, col), colour in ((self.goal, (0, 160, 0)), (self.pos, (0, 0, 200))):
            image[row * 8 + 1 : row * 8 + 7, col * 8 + 1 : col * 8 + 7] = colour
        return image
