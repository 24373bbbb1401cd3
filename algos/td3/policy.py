"""TD3: a deterministic actor trained through the smaller of two critics (acting:
:class:`TD3Policy`; learning: :class:`TD3`).

Targets use the worker's n-step folding: ``y = rewards + discounts * min Q'(s', a')`` with
``a' = clip(mu'(s') + clip(noise, -c, c), -1, 1)`` (target policy smoothing). The actor and
all target nets move every ``policy_delay`` critic updates. Critic losses are weighted per
sample by ``weights`` and the mean ``|TD error|`` of the two critics goes back as priorities.
"""

from __future__ import annotations

import copy

import numpy as np
import torch
from torch import nn

from algos.base import LearnResult
from algos.continuous import ContinuousPolicy, TwinCriticAlgorithm, off_policy_columns
from algos.networks import build_network, soft_update
from joyrl_ray.batch import ACTIONS, DISCOUNTS, NEXT_OBS, OBS, REWARDS, Batch


class _Single(nn.Module):
    """A module's one output as a tuple of one."""

    def __init__(self, module: nn.Module) -> None:
        super().__init__()
        self.module = module

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor]:
        return (self.module(obs),)


class TD3Policy(ContinuousPolicy):
    """Acting with a deterministic actor plus Gaussian exploration noise."""

    def build_actor(self, obs_dim: int, action_dim: int) -> nn.Module:
        return nn.Sequential(
            build_network(self.cfg.actor_layers, (obs_dim,), action_dim), nn.Tanh()
        )

    def act_normalised(self, obs: torch.Tensor, explore: bool) -> np.ndarray:
        normalised = self.actor(obs).cpu().numpy()
        if explore:
            noise = self.cfg.expl_noise * self.rng.standard_normal(normalised.shape)
            normalised = np.clip(normalised + noise, -1.0, 1.0)
        return normalised

    def greedy_head(self) -> tuple[nn.Module, tuple[str, ...]]:
        """The deterministic actor: the action alone."""
        return _Single(self.actor), ()


class TD3(TwinCriticAlgorithm):
    """Twin critics, a target actor, and delayed actor updates."""

    policy_cls = TD3Policy
    state_attrs = ("actor_target", *TwinCriticAlgorithm.state_attrs)

    def setup(self) -> None:
        super().setup()
        self.actor_target = copy.deepcopy(self.policy.actor).requires_grad_(False)
        self.last_actor_loss = 0.0

    def learn(self, batch: Batch) -> LearnResult:
        """One gradient step of the critics; of the actor every ``policy_delay`` steps."""
        cfg, actor = self.cfg, self.policy.actor
        b = off_policy_columns(batch, self.policy)
        obs, next_obs = b[OBS], b[NEXT_OBS]
        actions = self.policy.scaler.to_normalised(b[ACTIONS])

        with torch.no_grad():
            next_actions = self.actor_target(next_obs)
            noise = (self.noise(len(next_actions)) * cfg.policy_noise).clamp(
                -cfg.noise_clip, cfg.noise_clip
            )
            next_actions = (next_actions + noise).clamp(-1.0, 1.0)
            target = b[REWARDS] + b[DISCOUNTS] * torch.min(
                *self.critic_target(next_obs, next_actions)
            )
        critic = self.update_critic(b, actions, target)
        self.updates += 1

        if self.updates % max(int(cfg.policy_delay), 1) == 0:
            self.critic.requires_grad_(False)
            actor_loss = -self.critic.q1(torch.cat([obs, actor(obs)], dim=-1)).mean()
            self.critic.requires_grad_(True)
            self.optimize(self.actor_optimizer, actor_loss, cfg.max_grad_norm)
            self.last_actor_loss = float(actor_loss.detach())
            soft_update(self.critic_target, self.critic, float(cfg.tau))
            soft_update(self.actor_target, actor, float(cfg.tau))

        return LearnResult(
            metrics={
                "critic_loss": critic.loss,
                "actor_loss": self.last_actor_loss,
                "q_mean": critic.q_mean,
                "td_abs_mean": float(critic.td_abs.mean()),
                "critic_grad_norm": critic.grad_norm,
            },
            priorities=critic.td_abs.cpu().numpy(),
        )
