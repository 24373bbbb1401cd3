"""DQN: epsilon-greedy acting (:class:`DQNPolicy`), TD learning against a target network
(:class:`DQN`).

Targets use the worker's n-step folding: ``y = rewards + discounts * Q_target(next_obs, a*)``
where ``a*`` is the target's argmax (DQN) or the online net's argmax (double Q), over the
legal actions of ``next_obs`` when it holds an action mask (:mod:`algos.masks`). Per-sample
losses are weighted by the batch's importance-sampling ``weights`` (ones without PER), and
``|TD error|`` goes back as new priorities.
"""

from __future__ import annotations

import copy
import math
from typing import Any

import gymnasium as gym
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from algos.base import Algorithm, LearnResult, Policy, adam, to_tensor
from algos.export import ActingGraph, build_graph
from algos.masks import masked_argmax, random_legal_actions
from algos.networks import build_network, output_dim, soft_update
from algos.observations import ObservationInput
from joyrl_ray.batch import ACTIONS, DISCOUNTS, NEXT_OBS, OBS, REWARDS, WEIGHTS, Batch


def epsilon_at(cfg: Any, env_steps: int) -> float:
    """The exploration rate after ``env_steps``: exponential decay from start to end."""
    decay = max(float(cfg.epsilon_decay), 1e-8)
    return cfg.epsilon_end + (cfg.epsilon_start - cfg.epsilon_end) * math.exp(-env_steps / decay)


class DuelingQNetwork(nn.Module):
    """Q = V + A - mean(A) over a shared trunk."""

    def __init__(self, layers: Any, inputs: ObservationInput, n_actions: int) -> None:
        super().__init__()
        self.trunk = build_network(layers, inputs, None)
        width = output_dim(self.trunk)
        self.value = nn.Linear(width, 1)
        self.advantage = nn.Linear(width, n_actions)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        features = self.trunk(obs)
        advantage = self.advantage(features)
        return self.value(features) + advantage - advantage.mean(dim=-1, keepdim=True)


class GreedyQ(nn.Module):
    """The greedy action of a Q network and its Q values (an exported DQN policy)."""

    def __init__(self, q_net: nn.Module) -> None:
        super().__init__()
        self.q_net = q_net

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        q = self.q_net(obs)
        return q.argmax(dim=-1), q


class EpsilonGreedyPolicy(Policy):
    """Acting on a Q network's greedy actions, a random one with probability epsilon while
    exploring (DQN and R2D2): for Discrete action spaces."""

    action_spaces = (gym.spaces.Discrete,)
    n_actions: int
    q_net: nn.Module

    def epsilon(self, env_steps: int) -> float:
        return epsilon_at(self.cfg, env_steps)

    def exploration_stats(self, env_steps: int) -> dict[str, float]:
        return {"epsilon": self.epsilon(env_steps)}

    def acting_modules(self) -> dict[str, nn.Module]:
        return {"q_net": self.q_net}

    def explore(
        self, greedy: np.ndarray, env_steps: int, mask: torch.Tensor | None = None
    ) -> np.ndarray:
        """``greedy`` (int64 actions, changed in place) with each row replaced by a random
        action with probability epsilon (a random legal one, given the rows' ``mask``)."""
        random_rows = self.rng.random(len(greedy)) < self.epsilon(env_steps)
        if mask is None:
            greedy[random_rows] = self.rng.integers(0, self.n_actions, size=int(random_rows.sum()))
        else:
            rows = mask.cpu().numpy()[random_rows]
            greedy[random_rows] = random_legal_actions(rows, self.rng)
        return greedy

    def choose(self, q: torch.Tensor, obs: np.ndarray, explore: bool, env_steps: int) -> np.ndarray:
        """The actions for ``obs`` from its Q values ``q`` ``[B, n]``: the greedy legal ones,
        each replaced by a random legal one with probability epsilon when exploring."""
        mask = self.mask_tensor(obs)
        actions = masked_argmax(q, mask).cpu().numpy().astype(np.int64)
        return self.explore(actions, env_steps, mask) if explore else actions


class DQNPolicy(EpsilonGreedyPolicy):
    """Epsilon-greedy acting on a Q network (plain or dueling)."""

    def __init__(
        self, cfg: Any, obs_space: gym.Space, action_space: gym.Space, device: torch.device
    ) -> None:
        super().__init__(cfg, obs_space, action_space, device)
        self.n_actions = int(action_space.n)
        if cfg.dueling:
            self.q_net: nn.Module = DuelingQNetwork(cfg.value_layers, self.inputs, self.n_actions)
        else:
            self.q_net = build_network(cfg.value_layers, self.inputs, self.n_actions)
        self.q_net.to(device)

    @torch.no_grad()
    def q_values(self, obs: np.ndarray) -> np.ndarray:
        return self.q_net(self.obs_tensor(obs)).cpu().numpy()

    @torch.no_grad()
    def act(self, obs: np.ndarray, *, explore: bool, env_steps: int) -> tuple[np.ndarray, Batch]:
        return self.choose(self.q_net(self.obs_tensor(obs)), obs, explore, env_steps), {}

    def acting_graph(self) -> ActingGraph:
        """``action`` ``[B]`` int64 (the greedy one) and ``q_values`` ``[B, n]``."""
        head = GreedyQ(self.q_net)
        return build_graph(self.observation_module(), head, ("action", "q_values"), self.obs_space)


class DQN(Algorithm):
    """TD learning of the policy's Q network against a target network (DQN, double Q,
    dueling: the config's flags)."""

    policy_cls = DQNPolicy
    policy: DQNPolicy
    state_attrs = ("target_net", "optimizer")

    def setup(self) -> None:
        q_net = self.policy.q_net
        self.target_net = copy.deepcopy(q_net).requires_grad_(False)
        self.optimizer = adam(q_net.parameters(), lr=self.cfg.lr)

    def learn(self, batch: Batch) -> LearnResult:
        """One gradient step on a sampled batch."""
        cfg, device, q_net = self.cfg, self.device, self.policy.q_net
        obs = self.policy.obs_tensor(batch[OBS])
        actions = to_tensor(batch[ACTIONS], device, torch.int64).reshape(-1, 1)
        rewards = to_tensor(batch[REWARDS], device, torch.float32)
        next_obs = self.policy.obs_tensor(batch[NEXT_OBS])
        discounts = to_tensor(batch[DISCOUNTS], device, torch.float32)
        weights = to_tensor(batch[WEIGHTS], device, torch.float32)

        q_all = q_net(obs)
        q = q_all.gather(1, actions).squeeze(1)
        with torch.no_grad():
            next_q_target = self.target_net(next_obs)
            next_mask = self.policy.mask_tensor(batch[NEXT_OBS])
            chooser = q_net(next_obs) if cfg.double_q else next_q_target
            next_actions = masked_argmax(chooser, next_mask).unsqueeze(1)
            next_q = next_q_target.gather(1, next_actions).squeeze(1)
            target = rewards + discounts * next_q
        td_error = q - target
        if cfg.loss == "mse":
            per_sample = td_error.pow(2)
        else:
            per_sample = F.smooth_l1_loss(q, target, reduction="none")
        td_loss = (weights * per_sample).mean()
        penalty, penalty_metrics = self.penalty(batch, q_all, q)
        loss = td_loss + penalty
        if penalty_metrics:  # the TD loss apart from the penalty's
            penalty_metrics["td_loss"] = float(td_loss.detach())

        grad_norm = self.optimize(self.optimizer, loss, cfg.max_grad_norm)
        self.updates += 1
        if self.updates % max(int(cfg.target_update), 1) == 0:
            soft_update(self.target_net, q_net, float(cfg.tau))

        return LearnResult(
            metrics={
                "loss": float(loss.detach()),
                "q_mean": float(q.detach().mean()),
                "td_abs_mean": float(td_error.detach().abs().mean()),
                "grad_norm": float(grad_norm),
                "lr": float(self.optimizer.param_groups[0]["lr"]),
                **penalty_metrics,
            },
            priorities=td_error.detach().abs().cpu().numpy(),
        )

    def penalty(
        self, batch: Batch, q_all: torch.Tensor, q_taken: torch.Tensor
    ) -> tuple[torch.Tensor | float, dict[str, float]]:
        """A term added to the TD loss (none here), from the batch, every action's Q values
        ``[B, n]`` and those of the batch's actions ``[B]``; and its metrics."""
        return 0.0, {}
