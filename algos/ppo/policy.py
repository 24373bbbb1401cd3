"""PPO: clipped-surrogate policy gradient with a learned value baseline (acting:
:class:`PPOPolicy`; learning: :class:`PPO`).

``learn`` gets one concatenated rollout ``[T, N, ...]`` (N = workers x envs) per call. Values
of ``obs`` and of the true ``next_obs`` come from the critic before the update, so a
truncated step is bootstrapped from its final state; GAE is cut at every episode end. The
old log-probabilities are the ones the workers stored when they sampled the actions.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import gymnasium as gym
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from algos.base import Algorithm, LearnResult, Policy, adam, to_tensor
from algos.networks import build_network
from algos.ppo.distributions import Actor, init_orthogonal
from algos.ppo.gae import compute_gae
from algos.ppo.scaling import RewardScaler
from joyrl_ray.batch import ACTIONS, NEXT_OBS, OBS, REWARDS, TERMINATED, TRUNCATED, Batch


class TargetInputs(NamedTuple):
    """One rollout as :meth:`PPO.learn` hands it to the targets: ``[T, N]`` rewards (scaled
    when ``reward_scaling``), terminated and truncated flags and the critic's values of
    ``obs`` and of ``next_obs``; the flat observations and actions, and the
    log-probabilities the workers stored when they sampled the actions (flat)."""

    rewards: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    values: torch.Tensor
    next_values: torch.Tensor
    obs: torch.Tensor
    actions: torch.Tensor
    behaviour_log_prob: torch.Tensor


Targets = tuple[torch.Tensor, torch.Tensor, torch.Tensor]


class PPOPolicy(Policy):
    """Acting with a stochastic actor (Categorical, MultiCategorical or Gaussian)."""

    action_spaces = (gym.spaces.Discrete, gym.spaces.Box, gym.spaces.MultiDiscrete)

    def __init__(
        self, cfg: Any, obs_space: gym.Space, action_space: gym.Space, device: torch.device
    ) -> None:
        super().__init__(cfg, obs_space, action_space, device)
        self.actor = Actor(cfg, self.inputs, action_space).to(device)

    def acting_modules(self) -> dict[str, nn.Module]:
        return {"actor": self.actor}

    @torch.no_grad()
    def act(self, obs: np.ndarray, *, explore: bool, env_steps: int) -> tuple[np.ndarray, Batch]:
        dist = self.actor(self.obs_tensor(obs))
        flat = dist.sample(self.rng) if explore else dist.mode()
        log_prob = dist.log_prob(torch.as_tensor(flat, device=self.device))
        actions = flat.reshape(len(flat), *self.actor.action_shape)
        return actions, {"log_prob": log_prob.cpu().numpy().astype(np.float32)}

    def env_action(self, actions: np.ndarray) -> np.ndarray:
        """Gaussian samples are stored raw (for their log-prob) and clipped for the env."""
        if isinstance(self.action_space, gym.spaces.Box):
            return np.clip(actions, self.action_space.low, self.action_space.high)
        return actions

    def exploration_stats(self, env_steps: int) -> dict[str, float]:
        if self.actor.kind == "gaussian" and not self.actor.state_dependent_std:
            return {"action_std": float(self.actor.log_std.detach().exp().mean())}
        return {}


class PPO(Algorithm):
    """The clipped surrogate on the policy's actor, a state-value critic, one optimizer for
    both, and (``reward_scaling``) running reward statistics."""

    policy_cls = PPOPolicy
    policy: PPOPolicy
    state_attrs = ("critic", "optimizer")

    def setup(self) -> None:
        cfg = self.cfg
        self.transitions_learned = 0
        self.reward_scaler = (
            RewardScaler(self.gamma, cfg.reward_clip) if cfg.reward_scaling else None
        )
        self.critic = build_network(cfg.critic_layers, self.policy.inputs, 1).to(self.device)
        if cfg.ortho_init:
            init_orthogonal(self.critic, head_gain=1.0)
        critic_lr = cfg.critic_lr if cfg.critic_lr is not None else cfg.lr
        self.optimizer = adam(
            [
                {"params": self.policy.actor.parameters(), "lr": cfg.lr, "base_lr": cfg.lr},
                {"params": self.critic.parameters(), "lr": critic_lr, "base_lr": critic_lr},
            ],
            eps=cfg.adam_eps,
        )

    # ----- learning -----
    def _flat_actions(self, actions: np.ndarray, rows: int) -> torch.Tensor:
        if self.policy.actor.kind == "discrete":
            return to_tensor(actions.reshape(rows), self.device, torch.int64)
        dtype = torch.int64 if self.policy.actor.kind == "multi_discrete" else torch.float32
        return to_tensor(actions.reshape(rows, -1), self.device, dtype)

    @torch.no_grad()
    def _values(self, obs: torch.Tensor, chunk: int = 4096) -> torch.Tensor:
        return torch.cat([self.critic(part).squeeze(-1) for part in obs.split(chunk)])

    def _rewards(self, batch: Batch) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Rewards (scaled when ``reward_scaling``), terminated and truncated, ``[T, N]``."""
        rewards = np.asarray(batch[REWARDS], dtype=np.float32)
        terminated = np.asarray(batch[TERMINATED], dtype=bool)
        truncated = np.asarray(batch[TRUNCATED], dtype=bool)
        if self.reward_scaler is not None:
            rewards = self._scale_rewards(rewards, terminated | truncated)
        return rewards, terminated, truncated

    def _targets(
        self,
        batch: Batch,
        obs: torch.Tensor,
        actions: torch.Tensor,
        values: torch.Tensor,
        next_values: torch.Tensor,
    ) -> Targets:
        """Flat advantages, value targets and the log-probabilities the surrogate's ratio is
        taken against (:meth:`_rollout_targets`), for the flat ``obs`` and ``actions`` of
        ``batch`` and the critic's ``values`` and ``next_values`` ``[T, N]``."""
        rewards, terminated, truncated = self._rewards(batch)
        stored = to_tensor(np.asarray(batch["log_prob"]).reshape(-1), self.device, torch.float32)
        inputs = TargetInputs(
            rewards, terminated, truncated, values, next_values, obs, actions, stored
        )
        return self._rollout_targets(inputs)

    def _rollout_targets(self, rollout: TargetInputs) -> Targets:
        """GAE(lambda) and the workers' own log-probabilities (on-policy data)."""
        advantages, returns = compute_gae(
            rollout.rewards,
            rollout.values.cpu().numpy(),
            rollout.next_values.cpu().numpy(),
            rollout.terminated,
            rollout.truncated,
            self.gamma,
            self.cfg.gae_lambda,
        )
        device = self.device
        return (
            to_tensor(advantages.reshape(-1), device),
            to_tensor(returns.reshape(-1), device),
            rollout.behaviour_log_prob,
        )

    def _scale_rewards(self, rewards: np.ndarray, dones: np.ndarray) -> np.ndarray:
        """Rewards scaled by running statistics of the whole rollout, every learner's slice.

        Data-parallel learners each hold an env slice of the rollout; the running return
        statistics are updated with all slices (gathered in rank order, the order one
        learner would see them in), so every learner scales alike and as one would.
        """
        assert self.reward_scaler is not None
        parallel = self.parallel
        if not parallel.active:
            return self.reward_scaler(rewards, dones)
        envs = rewards.shape[1]
        local = torch.as_tensor(np.stack([rewards, dones.astype(np.float32)]), device=self.device)
        everything = parallel.gather(local, dim=2).cpu().numpy()
        scaled = self.reward_scaler(everything[0], everything[1] > 0.5)
        start = parallel.rank * envs
        return scaled[:, start : start + envs]

    def _update_lr(self) -> float:
        cfg = self.cfg
        factor = 1.0
        if cfg.lr_schedule == "linear" and cfg.lr_decay_steps > 0:
            progress = min(self.transitions_learned / cfg.lr_decay_steps, 1.0)
            factor = 1.0 - progress * (1.0 - cfg.lr_end_factor)
        for group in self.optimizer.param_groups:
            group["lr"] = group["base_lr"] * factor
        return self.optimizer.param_groups[0]["lr"]

    def _minibatch_size(self, rows: int) -> int:
        size = self.cfg.minibatch_size or rows // max(int(self.cfg.n_minibatches), 1)
        return int(min(max(size, 1), rows))

    def learn(self, batch: Batch) -> LearnResult:
        """Every epoch over one rollout: one update, however many minibatch steps it takes."""
        cfg, device = self.cfg, self.device
        steps, envs = np.shape(batch[REWARDS])[:2]
        rows = steps * envs
        obs = self.policy.obs_tensor(batch[OBS]).flatten(0, 1)
        next_obs = self.policy.obs_tensor(batch[NEXT_OBS]).flatten(0, 1)
        values = self._values(obs)
        next_values = self._values(next_obs)
        actions = self._flat_actions(np.asarray(batch[ACTIONS]), rows)
        advantages, returns, old_log_prob = self._targets(
            batch, obs, actions, values.reshape(steps, envs), next_values.reshape(steps, envs)
        )
        self.transitions_learned += rows * self.parallel.world_size  # all learners' rows
        lr = self._update_lr()

        size = self._minibatch_size(rows)
        sums: dict[str, float] = {}
        n_updates = 0
        stop = False
        for _ in range(int(cfg.n_epochs)):
            order = torch.as_tensor(self.rng.permutation(rows), device=device)
            for start in range(0, rows - size + 1, size):
                idx = order[start : start + size]
                stats = self._minibatch_step(
                    obs[idx],
                    actions[idx],
                    old_log_prob[idx],
                    advantages[idx],
                    returns[idx],
                    values[idx],
                )
                for key, value in stats.items():
                    sums[key] = sums.get(key, 0.0) + value
                n_updates += 1
                if cfg.target_kl is not None and self._kl_too_large(stats["approx_kl"]):
                    stop = True
                    break
            if stop:
                break
        self.updates += 1

        metrics = {k: v / max(n_updates, 1) for k, v in sums.items()}
        var_returns = float(returns.var())
        metrics.update(
            lr=float(lr),
            minibatch_updates=float(n_updates),
            value_mean=float(values.mean()),
            explained_variance=(
                1.0 - float((returns - values).var()) / var_returns if var_returns > 0 else 0.0
            ),
        )
        metrics.update(self.exploration_stats(0))
        return LearnResult(metrics=metrics)

    def _kl_too_large(self, approx_kl: float) -> bool:
        """Early stop on the KL averaged over every learner, so all of them stop together."""
        kl = float(self.parallel.mean(torch.tensor(approx_kl, device=self.device)))
        return kl > 1.5 * self.cfg.target_kl

    def _policy_loss(
        self, log_prob: torch.Tensor, ratio: torch.Tensor, advantages: torch.Tensor
    ) -> torch.Tensor:
        """The clipped surrogate: the ratio kept within ``1 +- clip_eps``."""
        clip = self.cfg.clip_eps
        surrogate = torch.min(ratio * advantages, ratio.clamp(1.0 - clip, 1.0 + clip) * advantages)
        return -surrogate.mean()

    def _minibatch_step(
        self,
        obs: torch.Tensor,
        actions: torch.Tensor,
        old_log_prob: torch.Tensor,
        advantages: torch.Tensor,
        returns: torch.Tensor,
        old_values: torch.Tensor,
    ) -> dict[str, float]:
        cfg = self.cfg
        if cfg.normalize_advantages and len(advantages) > 1:
            mean, std = self.parallel.mean_std(advantages)
            advantages = (advantages - mean) / (std + 1e-8)
        dist = self.policy.actor(obs)
        log_prob = dist.log_prob(actions)
        log_ratio = log_prob - old_log_prob
        ratio = log_ratio.exp()
        policy_loss = self._policy_loss(log_prob, ratio, advantages)
        entropy = dist.entropy().mean()

        new_values = self.critic(obs).squeeze(-1)
        if cfg.value_clip is not None:
            clipped = old_values + (new_values - old_values).clamp(-cfg.value_clip, cfg.value_clip)
            value_loss = (
                0.5 * torch.max((new_values - returns).pow(2), (clipped - returns).pow(2)).mean()
            )
        else:
            value_loss = 0.5 * F.mse_loss(new_values, returns)
        loss = policy_loss + cfg.vf_coef * value_loss - cfg.ent_coef * entropy

        grad_norm = self.optimize(self.optimizer, loss, cfg.max_grad_norm)
        with torch.no_grad():
            approx_kl = float(((ratio - 1.0) - log_ratio).mean())  # k3 estimator, >= 0
            clip_frac = float(((ratio - 1.0).abs() > cfg.clip_eps).float().mean())
        return {
            "loss": float(loss.detach()),
            "policy_loss": float(policy_loss.detach()),
            "value_loss": float(value_loss.detach()),
            "entropy": float(entropy.detach()),
            "approx_kl": approx_kl,
            "clip_frac": clip_frac,
            "grad_norm": float(grad_norm),
        }

    # ----- state -----
    def state_dict(self) -> dict[str, Any]:
        scaler = self.reward_scaler.stats.state_dict() if self.reward_scaler is not None else None
        return {
            **super().state_dict(),
            "transitions_learned": self.transitions_learned,
            "reward_scaler": scaler,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        super().load_state_dict(state)
        self.transitions_learned = int(state.get("transitions_learned", 0))
        if self.reward_scaler is not None and state.get("reward_scaler"):
            self.reward_scaler.stats.load_state_dict(state["reward_scaler"])
