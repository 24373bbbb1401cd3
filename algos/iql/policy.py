"""IQL: implicit Q-learning, offline RL that never queries Q at an action outside the data
(acting: :class:`IQLPolicy`; learning: :class:`IQL`).

Each update, on the replay's columns (``rewards`` and ``discounts`` n-step folded):

- the value net ``V(s)`` moves towards the ``expectile`` of ``min Q'(s, a)`` over the data's
  actions ``a`` (the target critics), by an asymmetric square (:func:`expectile_loss`);
- the twin critics move towards ``rewards + discounts * V(next_obs)``;
- the actor maximises the data actions' log-likelihood weighted by
  ``min(exp(beta * (min Q'(s, a) - V(s))), max_weight)`` (:func:`advantage_weights`).

The ``actions`` column holds env units, as SAC's workers store them (a dataset recorded
by any of this project's continuous policies reads the same); they are mapped to ``[-1,
1]`` per dimension for the networks. The actor is a Gaussian whose mean is squashed by
tanh and whose log-std is one learnt vector: the log-likelihood of an action on the
bounds is finite, so a dataset of saturated actions needs no clipping.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn

from algos.base import LearnResult, adam
from algos.continuous import ContinuousPolicy, TwinCriticAlgorithm, off_policy_columns
from algos.networks import build_network, soft_update
from joyrl_ray.batch import ACTIONS, DISCOUNTS, NEXT_OBS, OBS, REWARDS, WEIGHTS, Batch

LOG_STD_MIN, LOG_STD_MAX = -5.0, 2.0


def expectile_loss(diff: torch.Tensor, expectile: float) -> torch.Tensor:
    """Per sample ``|expectile - 1(diff < 0)| * diff^2``, with ``diff = target - V``: a
    square weighted ``expectile`` where the target is above V and ``1 - expectile`` below."""
    weight = torch.where(diff > 0, expectile, 1.0 - expectile)
    return weight * diff.pow(2)


def advantage_weights(advantage: torch.Tensor, beta: float, max_weight: float) -> torch.Tensor:
    """The actor's per-sample weights ``min(exp(beta * advantage), max_weight)``."""
    return torch.exp(beta * advantage).clamp(max=max_weight)


class TanhMeanGaussianActor(nn.Module):
    """``N(tanh(net(s)), exp(log_std))`` over normalised actions; ``forward`` gives the mean
    (the greedy action)."""

    def __init__(self, layers: Any, obs_dim: int, action_dim: int) -> None:
        super().__init__()
        self.net = build_network(layers, (obs_dim,), action_dim)
        self.log_std = nn.Parameter(torch.zeros(action_dim))

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.net(obs))

    def std(self) -> torch.Tensor:
        return self.log_std.clamp(LOG_STD_MIN, LOG_STD_MAX).exp()

    def log_prob(self, obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """``log pi(actions | obs)`` per row, summed over the action dimensions."""
        return torch.distributions.Normal(self(obs), self.std()).log_prob(actions).sum(-1)


class GreedyTanhMean(nn.Module):
    """The greedy normalised action and the log-std ``[B, D]`` (an exported IQL policy,
    before the action is scaled to the env's bounds)."""

    def __init__(self, actor: TanhMeanGaussianActor) -> None:
        super().__init__()
        self.actor = actor

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mean = self.actor(obs)
        log_std = self.actor.log_std.clamp(LOG_STD_MIN, LOG_STD_MAX)
        return mean, log_std.expand_as(mean)


class IQLPolicy(ContinuousPolicy):
    """Acting with the actor's mean, or a sample of its Gaussian clipped to the bounds when
    exploring."""

    def build_actor(self, obs_dim: int, action_dim: int) -> nn.Module:
        return TanhMeanGaussianActor(self.cfg.actor_layers, obs_dim, action_dim)

    def act_normalised(self, obs: torch.Tensor, explore: bool) -> np.ndarray:
        assert isinstance(self.actor, TanhMeanGaussianActor)
        normalised = self.actor(obs).cpu().numpy()
        if explore:
            std = self.actor.std().cpu().numpy()
            normalised = normalised + std * self.rng.standard_normal(normalised.shape)
        return np.clip(normalised, -1.0, 1.0).astype(np.float32)

    def greedy_head(self) -> tuple[nn.Module, tuple[str, ...]]:
        """The Gaussian's ``log_std`` ``[B, D]`` after the action."""
        assert isinstance(self.actor, TanhMeanGaussianActor)
        return GreedyTanhMean(self.actor), ("log_std",)


class IQL(TwinCriticAlgorithm):
    """Twin critics and their targets, the value net, and the three optimizers."""

    policy: IQLPolicy
    policy_cls = IQLPolicy
    state_attrs = (*TwinCriticAlgorithm.state_attrs, "value", "value_optimizer")

    def setup(self) -> None:
        super().setup()
        obs_dim = self.policy.inputs.shape[0]
        self.value = build_network(self.cfg.value_layers, (obs_dim,), 1).to(self.device)
        self.value_optimizer = adam(self.value.parameters(), lr=self.cfg.value_lr)

    def learn(self, batch: Batch) -> LearnResult:
        """One gradient step of the value net, the critics and the actor; then the targets."""
        cfg, actor = self.cfg, self.policy.actor
        assert isinstance(actor, TanhMeanGaussianActor)
        b = off_policy_columns(batch, self.policy)
        obs, weights = b[OBS], b[WEIGHTS]
        actions = self.policy.scaler.to_normalised(b[ACTIONS])

        with torch.no_grad():
            q_data = torch.min(*self.critic_target(obs, actions))
        value = self.value(obs).squeeze(-1)
        value_loss = (weights * expectile_loss(q_data - value, cfg.expectile)).mean()
        value_grad = self.optimize(self.value_optimizer, value_loss, cfg.max_grad_norm)

        with torch.no_grad():
            target = b[REWARDS] + b[DISCOUNTS] * self.value(b[NEXT_OBS]).squeeze(-1)
        critic = self.update_critic(b, actions, target)

        advantage = q_data - value.detach()
        actor_weights = advantage_weights(advantage, cfg.beta, cfg.max_weight)
        log_prob = actor.log_prob(obs, actions)
        actor_loss = -(weights * actor_weights * log_prob).mean()
        actor_grad = self.optimize(self.actor_optimizer, actor_loss, cfg.max_grad_norm)

        self.updates += 1
        soft_update(self.critic_target, self.critic, float(cfg.tau))
        return LearnResult(
            metrics={
                "critic_loss": critic.loss,
                "value_loss": float(value_loss.detach()),
                "actor_loss": float(actor_loss.detach()),
                "q_mean": critic.q_mean,
                "value_mean": float(value.detach().mean()),
                "advantage_mean": float(advantage.mean()),
                "actor_weight_mean": float(actor_weights.mean()),
                "td_abs_mean": float(critic.td_abs.mean()),
                "critic_grad_norm": critic.grad_norm,
                "value_grad_norm": value_grad,
                "actor_grad_norm": actor_grad,
            },
            priorities=critic.td_abs.cpu().numpy(),
        )
