"""The contract between an algorithm and the runtime.

An algorithm is a ``Policy`` subclass plus a config dataclass. The runtime builds one policy
per worker (acting side) and one per learner (learning side) from the same class, moves
numpy weights from the learner to the workers, and hands the learner batches of columns.
Nothing here imports ray: the runtime never knows which algorithm runs, and an algorithm
never knows how its data travelled.

Columns a worker produces for every step (first axis = batch, or [time, env] on-policy):
``obs``, ``actions``, ``rewards``, ``next_obs``, ``terminated``, ``truncated`` plus the
extras returned by :meth:`Policy.act`. Off-policy batches are n-step folded by the worker:
``rewards`` is the discounted n-step sum and ``discounts`` is ``gamma**k`` (0 after a
terminal state), so every target is ``rewards + discounts * V(next_obs)``. Prioritized
batches also carry ``weights`` (importance sampling) and the learner returns new
priorities from :meth:`Policy.learn`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
import torch

Batch = dict[str, np.ndarray]


@dataclass
class LearnResult:
    """What one update returns: scalars to log, and new priorities for prioritized replay."""

    metrics: dict[str, float] = field(default_factory=dict)
    priorities: np.ndarray | None = None


class Policy(ABC):
    """Acting and learning for one algorithm; plain torch and numpy."""

    #: True for algorithms that learn from fresh rollouts (PPO), False for replay (DQN).
    on_policy: ClassVar[bool] = False
    #: Attributes saved in checkpoints: modules, optimizers (anything with state_dict) or tensors.
    state_attrs: ClassVar[tuple[str, ...]] = ()

    def __init__(
        self, cfg: Any, obs_space: gym.Space, action_space: gym.Space, device: torch.device
    ) -> None:
        self.cfg = cfg
        self.obs_space = obs_space
        self.action_space = action_space
        self.device = device
        self.updates = 0
        self.rng = np.random.default_rng()

    def seed(self, seed: int | None) -> None:
        """Seed the policy's own sampling (exploration noise, epsilon draws)."""
        self.rng = np.random.default_rng(seed)

    # ----- transition spec, read by the worker -----
    @property
    def gamma(self) -> float:
        return float(self.cfg.gamma)

    @property
    def n_step(self) -> int:
        return int(getattr(self.cfg, "n_step", 1))

    # ----- acting (worker side) -----
    @abstractmethod
    def act(self, obs: np.ndarray, *, explore: bool, env_steps: int) -> tuple[np.ndarray, Batch]:
        """Actions for a batch of observations, and per-step extras to store with them."""

    def env_action(self, actions: np.ndarray) -> np.ndarray:
        """Map stored actions to what the env accepts (e.g. clip a Gaussian sample)."""
        return actions

    def exploration_stats(self, env_steps: int) -> dict[str, float]:
        """Scalars describing exploration at ``env_steps`` (e.g. epsilon), for logs."""
        return {}

    # ----- weights (learner -> workers) -----
    @abstractmethod
    def acting_modules(self) -> dict[str, torch.nn.Module]:
        """The modules a worker needs to act; their weights travel to the workers."""

    def get_weights(self) -> dict[str, np.ndarray]:
        weights = {}
        for name, module in self.acting_modules().items():
            for key, tensor in module.state_dict().items():
                weights[f"{name}.{key}"] = tensor.detach().cpu().numpy().copy()
        return weights

    def set_weights(self, weights: dict[str, np.ndarray]) -> None:
        for name, module in self.acting_modules().items():
            prefix = f"{name}."
            state = {
                key[len(prefix) :]: torch.tensor(value)
                for key, value in weights.items()
                if key.startswith(prefix)
            }
            module.load_state_dict(state)

    # ----- learning (learner side) -----
    @abstractmethod
    def learn(self, batch: Batch) -> LearnResult:
        """One update (off-policy) or one pass over a rollout (on-policy)."""

    def learner_batch_size(self) -> int:
        """Transitions per sampled batch for off-policy algorithms."""
        return int(self.cfg.batch_size)

    def state_dict(self) -> dict[str, Any]:
        """Everything a resumed learner needs: each of :attr:`state_attrs`, and the update count."""
        state: dict[str, Any] = {"updates": self.updates}
        for name in self.state_attrs:
            value = getattr(self, name)
            is_tensor = isinstance(value, torch.Tensor)
            state[name] = value.detach().cpu().clone() if is_tensor else value.state_dict()
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        for name in self.state_attrs:
            value = getattr(self, name)
            if isinstance(value, torch.Tensor):
                with torch.no_grad():
                    value.copy_(torch.as_tensor(state[name]))
            else:
                value.load_state_dict(state[name])
        self.updates = int(state["updates"])


def to_tensor(
    array: np.ndarray, device: torch.device, dtype: torch.dtype | None = None
) -> torch.Tensor:
    """Numpy to torch without a copy where possible (read-only arrays, e.g. Ray's, are copied)."""
    if isinstance(array, np.ndarray) and not array.flags.writeable:
        array = array.copy()
    tensor = torch.as_tensor(array, device=device)
    return tensor.to(dtype) if dtype is not None else tensor
