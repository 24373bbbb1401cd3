"""TD3: a deterministic actor trained through the smaller of two critics.

Targets use the worker's n-step folding: ``y = rewards + discounts * min Q'(s', a')`` with
``a' = clip(mu'(s') + clip(noise, -c, c), -1, 1)`` (target policy smoothing). The actor and
all target nets move every ``policy_delay`` critic updates. Critic losses are weighted per
sample by ``weights`` and the mean ``|TD error|`` of the two critics goes back as priorities.
"""

from __future__ import annotations

import copy
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from algos.base import Batch, LearnResult, Policy, to_tensor
from algos.continuous import (
    BoxScaler,
    TwinQ,
    check_spaces,
    clip_grads,
    off_policy_columns,
    update_twin_critic,
)
from algos.networks import build_network, soft_update


class TD3Policy(Policy):
    """Continuous control on a bounded 1-D Box action space."""

    state_attrs = (
        "actor",
        "actor_target",
        "critic",
        "critic_target",
        "actor_optimizer",
        "critic_optimizer",
    )

    def __init__(
        self, cfg: Any, obs_space: gym.Space, action_space: gym.Space, device: torch.device
    ) -> None:
        super().__init__(cfg, obs_space, action_space, device)
        check_spaces(obs_space, action_space, "TD3")
        self.scaler = BoxScaler(action_space)
        obs_dim, action_dim = int(obs_space.shape[0]), self.scaler.dim
        self.actor = nn.Sequential(
            build_network(cfg.actor_layers, (obs_dim,), action_dim), nn.Tanh()
        ).to(device)
        self.actor_target = copy.deepcopy(self.actor).requires_grad_(False)
        self.critic = TwinQ(cfg.critic_layers, obs_dim, action_dim).to(device)
        self.critic_target = copy.deepcopy(self.critic).requires_grad_(False)
        self.actor_optimizer = torch.optim.Adam(self.actor.parameters(), lr=cfg.actor_lr)
        self.critic_optimizer = torch.optim.Adam(self.critic.parameters(), lr=cfg.critic_lr)
        self.last_actor_loss = 0.0

    # ----- acting -----
    def acting_modules(self) -> dict[str, nn.Module]:
        return {"actor": self.actor}

    @torch.no_grad()
    def act(self, obs: np.ndarray, *, explore: bool, env_steps: int) -> tuple[np.ndarray, Batch]:
        rows = len(obs)
        if explore and env_steps < self.cfg.random_steps:
            return self.scaler.uniform(self.rng, rows), {}
        normalised = self.actor(to_tensor(obs, self.device, torch.float32)).cpu().numpy()
        if explore:
            noise = self.cfg.expl_noise * self.rng.standard_normal(normalised.shape)
            normalised = np.clip(normalised + noise, -1.0, 1.0)
        return self.scaler.to_env(normalised), {}

    # ----- learning -----
    def learn(self, batch: Batch) -> LearnResult:
        cfg = self.cfg
        b = off_policy_columns(batch, self.device)
        actions = self.scaler.to_normalised(b["actions"])

        with torch.no_grad():
            next_actions = self.actor_target(b["next_obs"])
            noise = (torch.randn_like(next_actions) * cfg.policy_noise).clamp(
                -cfg.noise_clip, cfg.noise_clip
            )
            next_actions = (next_actions + noise).clamp(-1.0, 1.0)
            target = b["rewards"] + b["discounts"] * torch.min(
                *self.critic_target(b["next_obs"], next_actions)
            )
        critic = update_twin_critic(
            self.critic, self.critic_optimizer, b, actions, target, cfg.max_grad_norm
        )
        self.updates += 1

        if self.updates % max(int(cfg.policy_delay), 1) == 0:
            self.critic.requires_grad_(False)
            actor_loss = -self.critic.q1(torch.cat([b["obs"], self.actor(b["obs"])], dim=-1)).mean()
            self.critic.requires_grad_(True)
            self.actor_optimizer.zero_grad(set_to_none=True)
            actor_loss.backward()
            clip_grads(self.actor, cfg.max_grad_norm)
            self.actor_optimizer.step()
            self.last_actor_loss = float(actor_loss.detach())
            soft_update(self.critic_target, self.critic, float(cfg.tau))
            soft_update(self.actor_target, self.actor, float(cfg.tau))

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
