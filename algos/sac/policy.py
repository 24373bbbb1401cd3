"""SAC: maximum-entropy actor-critic with twin critics and automatic temperature tuning
(acting: :class:`SACPolicy`; learning: :class:`SAC`).

Targets use the worker's n-step folding: ``y = rewards + discounts * (min Q'(s', a') -
alpha * log pi(a'|s'))`` with ``a' ~ pi(.|s')``. Critic losses are weighted per sample by
``weights`` (PER importance sampling; ones otherwise) and the mean ``|TD error|`` of the two
critics goes back as priorities. Log-probabilities are of the normalised (``[-1, 1]``)
action, so ``target_entropy = -|A|`` means the same for every action range.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from algos.base import LearnResult, adam
from algos.continuous import ContinuousPolicy, TwinCriticAlgorithm, off_policy_columns
from algos.networks import build_network, soft_update
from joyrl_ray.batch import ACTIONS, DISCOUNTS, NEXT_OBS, OBS, REWARDS, Batch

LOG2 = math.log(2.0)


class SquashedGaussianActor(nn.Module):
    """``tanh(u)``, ``u ~ N(mean(s), std(s))``: a normalised action and its log-probability."""

    def __init__(self, cfg: Any, obs_dim: int, action_dim: int) -> None:
        super().__init__()
        self.net = build_network(cfg.actor_layers, (obs_dim,), 2 * action_dim)
        self.log_std_min, self.log_std_max = float(cfg.log_std_min), float(cfg.log_std_max)

    def gaussian(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The mean and the clamped log-std of ``u``."""
        mean, log_std = self.net(obs).chunk(2, dim=-1)
        return mean, log_std.clamp(self.log_std_min, self.log_std_max)

    def forward(
        self, obs: torch.Tensor, noise: torch.Tensor | None = None, deterministic: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor]:
        mean, log_std = self.gaussian(obs)
        if deterministic:
            u = mean
        else:
            u = mean + log_std.exp() * (torch.randn_like(mean) if noise is None else noise)
        log_prob = (-0.5 * ((u - mean) * torch.exp(-log_std)).pow(2) - log_std).sum(-1)
        log_prob = log_prob - 0.5 * math.log(2.0 * math.pi) * mean.shape[-1]
        # log |d tanh(u) / du| = log(1 - tanh(u)^2), written stably
        log_prob = log_prob - (2.0 * (LOG2 - u - F.softplus(-2.0 * u))).sum(-1)
        return torch.tanh(u), log_prob


class GreedySquashedGaussian(nn.Module):
    """``tanh(mean)`` (the greedy normalised action), the mean and the clamped log-std (an
    exported SAC policy, before the action is scaled to the env's bounds)."""

    def __init__(self, actor: SquashedGaussianActor) -> None:
        super().__init__()
        self.actor = actor

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        mean, log_std = self.actor.gaussian(obs)
        return torch.tanh(mean), mean, log_std


class SACPolicy(ContinuousPolicy):
    """Acting with a squashed Gaussian on a bounded 1-D Box action space."""

    def build_actor(self, obs_dim: int, action_dim: int) -> nn.Module:
        return SquashedGaussianActor(self.cfg, obs_dim, action_dim)

    def act_normalised(self, obs: torch.Tensor, explore: bool) -> np.ndarray:
        noise = None
        if explore:
            noise = torch.as_tensor(
                self.rng.standard_normal((len(obs), self.scaler.dim)), dtype=torch.float32
            ).to(self.device)
        normalised, _ = self.actor(obs, noise, deterministic=not explore)
        return normalised.cpu().numpy()

    def greedy_head(self) -> tuple[nn.Module, tuple[str, ...]]:
        """The Gaussian's ``mean`` and ``log_std`` ``[B, D]``, before the tanh squash."""
        assert isinstance(self.actor, SquashedGaussianActor)
        return GreedySquashedGaussian(self.actor), ("mean", "log_std")


class SAC(TwinCriticAlgorithm):
    """Twin soft critics and the temperature ``alpha`` (tuned when ``auto_alpha``)."""

    policy_cls = SACPolicy
    state_attrs = (*TwinCriticAlgorithm.state_attrs, "log_alpha", "alpha_optimizer")

    def setup(self) -> None:
        super().setup()
        cfg = self.cfg
        self.log_alpha = torch.tensor(
            math.log(cfg.alpha), device=self.device, requires_grad=bool(cfg.auto_alpha)
        )
        self.alpha_optimizer = adam([self.log_alpha], lr=cfg.alpha_lr)
        self.target_entropy = (
            float(cfg.target_entropy)
            if cfg.target_entropy is not None
            else -float(self.policy.scaler.dim)
        )

    @property
    def alpha(self) -> float:
        return float(self.log_alpha.detach().exp())

    def learn(self, batch: Batch) -> LearnResult:
        """One gradient step of the critics, the actor and (``auto_alpha``) the temperature."""
        cfg, actor = self.cfg, self.policy.actor
        b = off_policy_columns(batch, self.policy)
        obs, next_obs = b[OBS], b[NEXT_OBS]
        actions = self.policy.scaler.to_normalised(b[ACTIONS])
        alpha = self.log_alpha.detach().exp()

        rows = len(actions)
        with torch.no_grad():
            next_actions, next_log_prob = actor(next_obs, self.noise(rows))
            tq1, tq2 = self.critic_target(next_obs, next_actions)
            soft_value = torch.min(tq1, tq2) - alpha * next_log_prob
            target = b[REWARDS] + b[DISCOUNTS] * soft_value
        critic = self.update_critic(b, actions, target)

        new_actions, log_prob = actor(obs, self.noise(rows))
        self.critic.requires_grad_(False)
        q_new = torch.min(*self.critic(obs, new_actions))
        self.critic.requires_grad_(True)
        actor_loss = (alpha * log_prob - q_new).mean()
        actor_grad = self.optimize(self.actor_optimizer, actor_loss, cfg.max_grad_norm)

        alpha_loss = torch.zeros(())
        if cfg.auto_alpha:
            alpha_loss = -(self.log_alpha * (log_prob.detach() + self.target_entropy)).mean()
            self.optimize(self.alpha_optimizer, alpha_loss)

        self.updates += 1
        if self.updates % max(int(cfg.target_update), 1) == 0:
            soft_update(self.critic_target, self.critic, float(cfg.tau))
        return LearnResult(
            metrics={
                "critic_loss": critic.loss,
                "actor_loss": float(actor_loss.detach()),
                "alpha_loss": float(alpha_loss.detach()),
                "alpha": self.alpha,
                "entropy": float(-log_prob.detach().mean()),
                "q_mean": critic.q_mean,
                "td_abs_mean": float(critic.td_abs.mean()),
                "critic_grad_norm": critic.grad_norm,
                "actor_grad_norm": actor_grad,
            },
            priorities=critic.td_abs.cpu().numpy(),
        )
