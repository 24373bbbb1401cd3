"""Behaviour cloning: an actor fitted to the dataset's actions (acting: :class:`BCPolicy`;
learning: :class:`BC`).

Discrete actions: the actor gives logits, learnt by cross-entropy on the replayed actions
(over the legal ones when the observations hold an action mask); acting takes the argmax,
or samples the softmax while exploring. Box actions: a deterministic actor with a tanh
head, in normalised ``[-1, 1]`` units scaled to the bounds as TD3's
(:class:`~algos.continuous.BoxScaler`), learnt by the squared error to the replayed
actions in the same units; exploring adds Gaussian noise of std ``expl_noise``. Per-sample
losses are weighted by the batch's ``weights``. Nothing is bootstrapped, so ``rewards``,
``next_obs`` and ``discounts`` go unread.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from algos.base import Algorithm, LearnResult, Policy, adam, to_tensor
from algos.continuous import BoxScaler, check_continuous_spaces
from algos.export import ActingGraph, BoxScale, build_graph
from algos.masks import masked_logits
from algos.networks import build_network
from algos.ppo.distributions import CategoricalDist
from joyrl_ray.batch import ACTIONS, OBS, WEIGHTS, Batch


class _GreedyLogits(nn.Module):
    """The argmax of an actor's logits, and the logits."""

    def __init__(self, actor: nn.Module) -> None:
        super().__init__()
        self.actor = actor

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        logits = self.actor(obs)
        return logits.argmax(dim=-1), logits


class _ScaledAction(nn.Module):
    """A tanh actor's action scaled to the Box's bounds, as a tuple of one."""

    def __init__(self, actor: nn.Module, scale: BoxScale) -> None:
        super().__init__()
        self.actor = actor
        self.scale = scale

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor]:
        return (self.scale(self.actor(obs)),)


class BCPolicy(Policy):
    """Acting with the cloned actor: greedy, or the softmax / a little Gaussian noise while
    exploring."""

    action_spaces = (gym.spaces.Discrete, gym.spaces.Box)

    def __init__(
        self, cfg: Any, obs_space: gym.Space, action_space: gym.Space, device: torch.device
    ) -> None:
        super().__init__(cfg, obs_space, action_space, device)
        self.discrete = isinstance(action_space, gym.spaces.Discrete)
        self.actor: nn.Module
        if self.discrete:
            self.actor = build_network(cfg.actor_layers, self.inputs, int(action_space.n))
        else:
            self.scaler = BoxScaler(action_space)
            body = build_network(cfg.actor_layers, self.inputs, self.scaler.dim)
            self.actor = nn.Sequential(body, nn.Tanh())
        self.actor.to(device)

    @classmethod
    def check_spaces(cls, obs_space: gym.Space, action_space: gym.Space) -> None:
        super().check_spaces(obs_space, action_space)
        if isinstance(action_space, gym.spaces.Box):
            check_continuous_spaces(obs_space, action_space)

    def acting_modules(self) -> dict[str, nn.Module]:
        return {"actor": self.actor}

    def logits(self, obs: np.ndarray) -> torch.Tensor:
        """Discrete: the actor's logits of ``obs``, illegal actions masked out."""
        return masked_logits(self.actor(self.obs_tensor(obs)), self.mask_tensor(obs))

    @torch.no_grad()
    def act(self, obs: np.ndarray, *, explore: bool, env_steps: int) -> tuple[np.ndarray, Batch]:
        if self.discrete:
            dist = CategoricalDist(self.logits(obs))
            return (dist.sample(self.rng) if explore else dist.mode()), {}
        normalised = self.actor(self.obs_tensor(obs, torch.float32)).cpu().numpy()
        if explore and self.cfg.expl_noise > 0:
            noise = self.cfg.expl_noise * self.rng.standard_normal(normalised.shape)
            normalised = np.clip(normalised + noise, -1.0, 1.0)
        return self.scaler.to_env(normalised), {}

    def acting_graph(self) -> ActingGraph:
        """Discrete: ``action`` ``[B]`` int64 (the argmax) and ``logits`` ``[B, n]``. Box:
        ``action`` ``[B, D]``, the actor's scaled to the bounds."""
        if self.discrete:
            head: nn.Module = _GreedyLogits(self.actor)
            outputs: tuple[str, ...] = ("action", "logits")
        else:
            head, outputs = _ScaledAction(self.actor, BoxScale(self.action_space)), ("action",)
        return build_graph(self.observation_module(), head, outputs, self.obs_space)


class BC(Algorithm):
    """One gradient step of the actor towards the replayed actions per update."""

    policy_cls = BCPolicy
    policy: BCPolicy
    state_attrs = ("optimizer",)

    def setup(self) -> None:
        self.optimizer = adam(self.policy.actor.parameters(), lr=self.cfg.lr)

    def learn(self, batch: Batch) -> LearnResult:
        """One gradient step on a sampled batch (priorities: none, uniform replay only)."""
        policy, device = self.policy, self.device
        weights = to_tensor(batch[WEIGHTS], device, torch.float32)
        metrics: dict[str, float] = {}
        if policy.discrete:
            actions = to_tensor(batch[ACTIONS], device, torch.int64).reshape(-1)
            logits = policy.logits(batch[OBS])
            per_sample = F.cross_entropy(logits, actions, reduction="none")
            metrics["accuracy"] = float((logits.detach().argmax(-1) == actions).float().mean())
        else:
            predicted = policy.actor(policy.obs_tensor(batch[OBS], torch.float32))
            actions = to_tensor(batch[ACTIONS], device, torch.float32).reshape(predicted.shape)
            per_sample = (predicted - policy.scaler.to_normalised(actions)).pow(2).mean(dim=-1)
        loss = (weights * per_sample).mean()
        grad_norm = self.optimize(self.optimizer, loss, self.cfg.max_grad_norm)
        self.updates += 1
        metrics.update(
            loss=float(loss.detach()),
            grad_norm=float(grad_norm),
            lr=float(self.optimizer.param_groups[0]["lr"]),
        )
        return LearnResult(metrics=metrics)
