"""Pieces shared by the continuous-control actor-critics (SAC, TD3).

Actions are stored in env units (what the env received, so trajectories read naturally);
networks work in normalised units ``[-1, 1]`` per dimension, mapped to the Box bounds by
:class:`BoxScaler`. Critics take ``concat(obs, normalised action)``.
"""

from __future__ import annotations

import copy
from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from algos.base import Algorithm, Policy, adam, to_tensor
from algos.export import ActingGraph, BoxScale, build_graph
from algos.masks import check_action_mask
from algos.networks import build_network
from algos.observations import ObservationInput
from joyrl_ray.batch import ACTIONS, DISCOUNTS, NEXT_OBS, OBS, REWARDS, WEIGHTS, Batch


def check_continuous_spaces(obs_space: gym.Space, action_space: gym.Space) -> None:
    """Flat Box observations and a bounded Box action space, or a ValueError saying why not."""
    if not isinstance(action_space, gym.spaces.Box) or len(action_space.shape) != 1:
        raise ValueError(
            f"does not support the env's action space {action_space}; it supports: "
            "Box (1-D, bounded)"
        )
    if not (np.all(np.isfinite(action_space.low)) and np.all(np.isfinite(action_space.high))):
        raise ValueError(
            f"needs finite action bounds, got {action_space}; it supports: Box (1-D, bounded)"
        )
    inputs = ObservationInput(obs_space)
    if len(inputs.shape) != 1 or inputs.image_leaves:
        raise ValueError(
            f"needs flat observations (a 1-D Box, Discrete, or a Dict / Tuple without "
            f"images), got {obs_space} (try env_cfg.wrappers: [flatten])"
        )


class BoxScaler:
    """Normalised ``[-1, 1]`` actions to the Box bounds and back."""

    def __init__(self, space: gym.spaces.Box) -> None:
        low, high = space.low.astype(np.float32), space.high.astype(np.float32)
        self.low, self.high = low, high
        self.center, self.half = (high + low) / 2.0, (high - low) / 2.0
        self.dim = int(low.shape[0])

    def to_env(self, normalised: np.ndarray) -> np.ndarray:
        return np.clip(self.center + self.half * normalised, self.low, self.high).astype(np.float32)

    def to_normalised(self, actions: torch.Tensor) -> torch.Tensor:
        center = torch.as_tensor(self.center, device=actions.device)
        half = torch.as_tensor(self.half, device=actions.device)
        return ((actions - center) / half).clamp(-1.0, 1.0)

    def uniform(self, rng: np.random.Generator, rows: int) -> np.ndarray:
        return rng.uniform(self.low, self.high, size=(rows, self.dim)).astype(np.float32)


class TwinQ(nn.Module):
    """Two independent Q(obs, action) networks; clipped double Q uses their minimum."""

    def __init__(self, layers: Sequence[Any], obs_dim: int, action_dim: int) -> None:
        super().__init__()
        self.q1 = build_network(layers, (obs_dim + action_dim,), 1)
        self.q2 = build_network(layers, (obs_dim + action_dim,), 1)

    def forward(
        self, obs: torch.Tensor, actions: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        x = torch.cat([obs.float(), actions], dim=-1)
        return self.q1(x).squeeze(-1), self.q2(x).squeeze(-1)


def off_policy_columns(batch: dict[str, np.ndarray], policy: Policy) -> dict[str, torch.Tensor]:
    """The replay columns every continuous actor-critic reads, as float tensors."""
    columns = {
        key: to_tensor(batch[key], policy.device, torch.float32)
        for key in (ACTIONS, REWARDS, DISCOUNTS, WEIGHTS)
    }
    for key in (OBS, NEXT_OBS):
        columns[key] = policy.obs_tensor(batch[key], torch.float32)
    return columns


@dataclass
class CriticUpdate:
    loss: float
    q_mean: float
    td_abs: torch.Tensor  # per sample, mean of both critics: the new PER priorities
    grad_norm: float


class ContinuousPolicy(Policy):
    """What SAC's and TD3's acting share: a Box action scaler, an actor, and uniform random
    actions for the first ``random_steps`` env steps."""

    action_spaces = (gym.spaces.Box,)

    def __init__(
        self, cfg: Any, obs_space: gym.Space, action_space: gym.Space, device: torch.device
    ) -> None:
        super().__init__(cfg, obs_space, action_space, device)
        self.scaler = BoxScaler(action_space)
        self.actor = self.build_actor(self.inputs.shape[0], self.scaler.dim).to(device)

    @classmethod
    def check_spaces(cls, obs_space: gym.Space, action_space: gym.Space) -> None:
        check_action_mask(obs_space, action_space)
        check_continuous_spaces(obs_space, action_space)

    @abstractmethod
    def build_actor(self, obs_dim: int, action_dim: int) -> nn.Module:
        """The actor network, mapping observations to normalised ``[-1, 1]`` actions."""

    @abstractmethod
    def act_normalised(self, obs: torch.Tensor, explore: bool) -> np.ndarray:
        """Normalised actions for a batch of observations (with exploration noise if asked)."""

    @abstractmethod
    def greedy_head(self) -> tuple[nn.Module, tuple[str, ...]]:
        """A module mapping observations to the greedy normalised action ``[B, D]`` and any
        named outputs after it, and those outputs' names."""

    def acting_graph(self) -> ActingGraph:
        """``action`` ``[B, D]``: the greedy action scaled to the Box's bounds, then the
        outputs of :meth:`greedy_head`."""
        head, named = self.greedy_head()
        scaled = _ScaledFirst(head, BoxScale(self.action_space))
        outputs = ("action", *named)
        return build_graph(self.observation_module(), scaled, outputs, self.obs_space)

    def acting_modules(self) -> dict[str, nn.Module]:
        return {"actor": self.actor}

    @torch.no_grad()
    def act(self, obs: np.ndarray, *, explore: bool, env_steps: int) -> tuple[np.ndarray, Batch]:
        if explore and env_steps < self.cfg.random_steps:
            return self.scaler.uniform(self.rng, len(obs)), {}
        normalised = self.act_normalised(self.obs_tensor(obs, torch.float32), explore)
        return self.scaler.to_env(normalised), {}


class _ScaledFirst(nn.Module):
    """``head``'s outputs with the first (a normalised action) scaled to the env's bounds."""

    def __init__(self, head: nn.Module, scale: BoxScale) -> None:
        super().__init__()
        self.head = head
        self.scale = scale

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        normalised, *rest = self.head(obs)
        return (self.scale(normalised), *rest)


class TwinCriticAlgorithm(Algorithm):
    """What SAC's and TD3's learning share: twin critics with a target, and the optimizers
    of the policy's actor and of the critics."""

    policy: ContinuousPolicy
    state_attrs: ClassVar[tuple[str, ...]] = (
        "critic",
        "critic_target",
        "actor_optimizer",
        "critic_optimizer",
    )

    def setup(self) -> None:
        cfg = self.cfg
        obs_dim, action_dim = self.policy.inputs.shape[0], self.policy.scaler.dim
        self.critic = TwinQ(cfg.critic_layers, obs_dim, action_dim).to(self.device)
        self.critic_target = copy.deepcopy(self.critic).requires_grad_(False)
        self.actor_optimizer = adam(self.policy.actor.parameters(), lr=cfg.actor_lr)
        self.critic_optimizer = adam(self.critic.parameters(), lr=cfg.critic_lr)

    def noise(self, rows: int) -> torch.Tensor:
        """Standard normal noise for this learner's ``rows`` of the batch (see DataParallel)."""
        return self.parallel.global_randn(rows, self.policy.scaler.dim, self.torch_rng, self.device)

    def update_critic(
        self, columns: dict[str, torch.Tensor], actions: torch.Tensor, target: torch.Tensor
    ) -> CriticUpdate:
        """One step of both critics towards ``target``, losses weighted by the IS ``weights``."""
        q1, q2 = self.critic(columns[OBS], actions)
        td1, td2 = q1 - target, q2 - target
        loss = 0.5 * (columns[WEIGHTS] * (td1.pow(2) + td2.pow(2))).mean()
        grad_norm = self.optimize(self.critic_optimizer, loss, self.cfg.max_grad_norm)
        td_abs = 0.5 * (td1.detach().abs() + td2.detach().abs())
        return CriticUpdate(float(loss.detach()), float(q1.detach().mean()), td_abs, grad_norm)
