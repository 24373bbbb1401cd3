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
from torch import nn

from algos.base import Algorithm, LearnResult, Policy, adam, to_tensor
from algos.export import ActingGraph, BoxClip, build_graph, join_memory, split_memory
from algos.networks import build_network
from algos.ppo.distributions import (
    Actor,
    Dist,
    GaussianDist,
    MultiCategoricalDist,
    init_orthogonal,
)
from algos.ppo.gae import compute_gae
from algos.ppo.scaling import RewardScaler
from algos.recurrent import MEMORY, episode_starts, from_sequences, to_sequences
from joyrl_ray.batch import ACTIONS, NEXT_OBS, OBS, REWARDS, TERMINATED, TRUNCATED, VALID, Batch


class RolloutSequences(NamedTuple):
    """How a rollout is cut for learning: sequences of ``length`` steps; a recurrent actor's
    memory each step was acted from ``[T, N, k, H]`` and its episode starts ``[T, N]``."""

    length: int
    memory: torch.Tensor | None
    starts: torch.Tensor | None


class TargetInputs(NamedTuple):
    """One rollout as :meth:`PPO.learn` hands it to the targets: ``[T, N]`` rewards (scaled
    when ``reward_scaling``), terminated and truncated flags and the critic's values of
    ``obs`` and of ``next_obs``; the flat observations and actions, and the
    log-probabilities the workers stored when they sampled the actions (flat); how the
    rollout is cut into sequences."""

    rewards: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    values: torch.Tensor
    next_values: torch.Tensor
    obs: torch.Tensor
    actions: torch.Tensor
    behaviour_log_prob: torch.Tensor
    sequences: RolloutSequences  # a recurrent actor's stored memory and episode starts
    mask: torch.Tensor | None = None  # the legal actions of ``obs``, flat ``[T * N, n]``


Targets = tuple[torch.Tensor, torch.Tensor, torch.Tensor]


class SequenceInputs(NamedTuple):
    """A minibatch's observations ``[L, B, ...]``; a recurrent actor's memory at each
    sequence's first step ``[B, k, H]`` and episode starts ``[L, B]``; the observations'
    legal actions ``[L, B, n]`` (None without an action mask)."""

    obs: torch.Tensor
    memory: torch.Tensor | None
    starts: torch.Tensor | None
    mask: torch.Tensor | None = None


class GreedyActor(nn.Module):
    """The actor's mode, in the env's action space, and its distribution's parameters (an
    exported PPO policy); a recurrent actor's memory in and out as separate states."""

    def __init__(self, actor: Actor, action_space: gym.Space) -> None:
        super().__init__()
        self.actor = actor
        self.clip = BoxClip(action_space) if isinstance(action_space, gym.spaces.Box) else None

    def forward(self, obs: torch.Tensor, *states: torch.Tensor) -> tuple[torch.Tensor, ...]:
        actor = self.actor
        memory: tuple[torch.Tensor, ...] = ()
        if actor.recurrent:
            dist, new_memory = actor.step(obs, join_memory(states))
            memory = split_memory(new_memory)
        else:
            dist = actor(obs)
        shape = (-1, *actor.action_shape)
        if isinstance(dist, GaussianDist):
            assert self.clip is not None
            return (self.clip(dist.mean.reshape(shape)), dist.mean, dist.log_std, *memory)
        if isinstance(dist, MultiCategoricalDist):
            logits = [part.logits for part in dist.parts]
            modes = torch.stack([x.argmax(dim=-1) for x in logits], dim=-1)
            return (modes.reshape(shape), torch.cat(logits, dim=-1), *memory)
        return (dist.logits.argmax(dim=-1), dist.logits, *memory)


class PPOPolicy(Policy):
    """Acting with a stochastic actor (Categorical, MultiCategorical or Gaussian)."""

    action_spaces = (gym.spaces.Discrete, gym.spaces.Box, gym.spaces.MultiDiscrete)

    def __init__(
        self, cfg: Any, obs_space: gym.Space, action_space: gym.Space, device: torch.device
    ) -> None:
        super().__init__(cfg, obs_space, action_space, device)
        self.actor = Actor(cfg, self.inputs, action_space).to(device)
        #: A recurrent actor's memory of the rows it acts for (None: starting afresh).
        self.memory: torch.Tensor | None = None

    def acting_modules(self) -> dict[str, nn.Module]:
        return {"actor": self.actor}

    @torch.no_grad()
    def act(self, obs: np.ndarray, *, explore: bool, env_steps: int) -> tuple[np.ndarray, Batch]:
        extras: Batch = {}
        mask = self.mask_tensor(obs)  # sampling, the mode and the log-prob: legal actions only
        if self.actor.recurrent:
            if self.memory is None or len(self.memory) != len(obs):
                self.memory = self.actor.memory_net.initial_memory(len(obs), self.device)
            extras[MEMORY] = self.memory.cpu().numpy()  # the state this step is acted from
            dist, self.memory = self.actor.step(self.obs_tensor(obs), self.memory, mask)
        else:
            dist = self.actor(self.obs_tensor(obs), mask)
        flat = dist.sample(self.rng) if explore else dist.mode()
        log_prob = dist.log_prob(torch.as_tensor(flat, device=self.device))
        actions = flat.reshape(len(flat), *self.actor.action_shape)
        extras["log_prob"] = log_prob.cpu().numpy().astype(np.float32)
        return actions, extras

    def reset_memory(self, n_envs: int) -> None:
        self.memory = None

    def episodes_ended(self, done: np.ndarray) -> None:
        if self.memory is not None and np.any(done):
            self.memory[torch.as_tensor(np.asarray(done, dtype=bool), device=self.device)] = 0.0

    def env_action(self, actions: np.ndarray) -> np.ndarray:
        """Gaussian samples are stored raw (for their log-prob) and clipped for the env."""
        if isinstance(self.action_space, gym.spaces.Box):
            return np.clip(actions, self.action_space.low, self.action_space.high)
        return actions

    def acting_graph(self) -> ActingGraph:
        """``action`` (the distribution's mode, clipped to a Box's bounds) and the
        distribution's parameters: ``logits`` ``[B, n]`` (log-probabilities; a
        MultiDiscrete space's components side by side) or a Box's ``mean`` and ``log_std``
        ``[B, D]`` (before clipping). A recurrent actor's memory: ``state_in_h`` (and an
        LSTM's ``state_in_c``) ``[B, hidden]`` in, zeros at an episode's start;
        ``state_out_*`` out."""
        gaussian = isinstance(self.action_space, gym.spaces.Box)
        params = ("mean", "log_std") if gaussian else ("logits",)
        memory = self.actor.memory_net if self.actor.recurrent else None
        head = GreedyActor(self.actor, self.action_space)
        outputs = ("action", *params)
        return build_graph(self.observation_module(), head, outputs, self.obs_space, memory)

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
        actor = self.policy.actor
        # A recurrent actor's critic reads its features (the memory it acted from), as the
        # shared torso of IMPALA and RLlib's use_lstm: the value loss trains the memory too.
        critic_inputs = (actor.memory_net.hidden,) if actor.recurrent else self.policy.inputs
        self.critic = build_network(cfg.critic_layers, critic_inputs, 1).to(self.device)
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
        sequences: RolloutSequences | None = None,
    ) -> Targets:
        """Flat advantages, value targets and the log-probabilities the surrogate's ratio is
        taken against (:meth:`_rollout_targets`), for the flat ``obs`` and ``actions`` of
        ``batch`` and the critic's ``values`` and ``next_values`` ``[T, N]``; ``sequences``
        as :meth:`learn` cut the rollout (cut here when not given)."""
        rewards, terminated, truncated = self._rewards(batch)
        stored = to_tensor(np.asarray(batch["log_prob"]).reshape(-1), self.device, torch.float32)
        if sequences is None:
            sequences = self._sequences(batch, rewards.shape[0])
        mask = self.policy.mask_tensor(batch[OBS])
        flat_mask = None if mask is None else mask.flatten(0, 1)
        inputs = TargetInputs(
            rewards,
            terminated,
            truncated,
            values,
            next_values,
            obs,
            actions,
            stored,
            sequences,
            flat_mask,
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

    def _sequences(self, batch: Batch, steps: int) -> RolloutSequences:
        """How the rollout is cut for learning: a recurrent actor's sequences of
        ``sequence_len`` steps (the whole rollout when 0) with the memory each step was acted
        from and the episode starts; a feed-forward one's single steps."""
        if not self.policy.actor.recurrent:
            return RolloutSequences(1, None, None)
        done = np.asarray(batch[TERMINATED], dtype=bool) | np.asarray(batch[TRUNCATED], dtype=bool)
        memory = to_tensor(np.asarray(batch[MEMORY]), self.device, torch.float32)
        starts = torch.as_tensor(episode_starts(done), device=self.device)
        return RolloutSequences(int(self.cfg.sequence_len) or steps, memory, starts)

    @torch.no_grad()
    def _rollout_values(
        self, batch: Batch, obs: torch.Tensor, sequences: RolloutSequences
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The critic's values of ``obs`` and of ``next_obs``, ``[T, N]``, before the update
        (a recurrent actor's sequences each replayed from its stored memory)."""
        steps, envs = obs.shape[:2]
        next_obs = self.policy.obs_tensor(batch[NEXT_OBS])
        if sequences.memory is None:
            values = self._values(obs.flatten(0, 1)).reshape(steps, envs)
            return values, self._values(next_obs.flatten(0, 1)).reshape(steps, envs)
        _, features, next_features = self._replay(obs, sequences, next_obs)
        assert next_features is not None
        return self.critic(features).squeeze(-1), self.critic(next_features).squeeze(-1)

    def _replay(
        self, obs: torch.Tensor, sequences: RolloutSequences, next_obs: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """A recurrent actor over a rollout ``[T, N, ...]`` as :meth:`learn` cuts it: each
        sequence replayed from the memory stored at its first step, as the minibatches
        replay it, so the targets and the first minibatch step see the same network outputs
        (a replay of the whole rollout from its first memory would not, once the rollout
        was acted with older weights). The head's outputs, the features and (given
        ``next_obs``) the next observations' features, ``[T, N, ...]``."""
        assert sequences.memory is not None and sequences.starts is not None
        steps, length = obs.shape[0], sequences.length
        out, features, next_features = self.policy.actor.memory_net.unroll(
            to_sequences(obs, length),
            to_sequences(sequences.memory, length)[0],
            to_sequences(sequences.starts, length),
            None if next_obs is None else to_sequences(next_obs, length),
        )
        if next_features is not None:
            next_features = from_sequences(next_features, steps)
        return from_sequences(out, steps), from_sequences(features, steps), next_features

    def learn(self, batch: Batch) -> LearnResult:
        """Every epoch over one rollout: one update, however many minibatch steps it takes.

        Minibatches hold whole sequences (:func:`~algos.recurrent.to_sequences`): a
        recurrent actor's, each replayed from its stored memory; a feed-forward actor's are
        single steps, so its minibatches are rows.
        """
        cfg, device = self.cfg, self.device
        steps, envs = np.shape(batch[REWARDS])[:2]
        rows = steps * envs
        obs = self.policy.obs_tensor(batch[OBS])  # [T, N, ...]
        sequences = self._sequences(batch, steps)
        values, next_values = self._rollout_values(batch, obs, sequences)
        flat_obs = obs.flatten(0, 1)
        actions = self._flat_actions(np.asarray(batch[ACTIONS]), rows)
        advantages, returns, old_log_prob = self._targets(
            batch, flat_obs, actions, values, next_values, sequences
        )
        self.transitions_learned += rows * self.parallel.world_size  # all learners' rows
        lr = self._update_lr()

        length = sequences.length

        def cut(column: torch.Tensor) -> torch.Tensor:
            return to_sequences(column.reshape(steps, envs, *column.shape[1:]), length)

        seq_obs = to_sequences(obs, length)
        mask = self.policy.mask_tensor(batch[OBS])
        seq_mask = None if mask is None else to_sequences(mask, length)
        flat = [actions, old_log_prob, advantages, returns, values.flatten()]
        if VALID in batch:  # an env's failed steps stay in the grid, not learned from
            flat.append(to_tensor(np.asarray(batch[VALID]).reshape(-1), device, torch.float32))
        columns = [cut(x) for x in flat]
        memory = starts = None
        if sequences.memory is not None and sequences.starts is not None:
            memory = to_sequences(sequences.memory, length)[0]  # each sequence's first step's
            starts = to_sequences(sequences.starts, length)
        n_sequences = seq_obs.shape[1]
        size = max(self._minibatch_size(rows) // length, 1)
        sums: dict[str, float] = {}
        n_updates = 0
        stop = False
        for _ in range(int(cfg.n_epochs)):
            order = torch.as_tensor(self.rng.permutation(n_sequences), device=device)
            for start in range(0, n_sequences - size + 1, size):
                idx = order[start : start + size]
                inputs = SequenceInputs(
                    seq_obs[:, idx],
                    None if memory is None else memory[idx],
                    None if starts is None else starts[:, idx],
                    None if seq_mask is None else seq_mask[:, idx],
                )
                stats = self._minibatch_step(
                    inputs, *(column[:, idx].flatten(0, 1) for column in columns)
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
        values = values.flatten()
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

    def _policy_losses(
        self, log_prob: torch.Tensor, ratio: torch.Tensor, advantages: torch.Tensor
    ) -> torch.Tensor:
        """Each step's clipped surrogate loss: the ratio kept within ``1 +- clip_eps``."""
        clip = self.cfg.clip_eps
        return -torch.min(ratio * advantages, ratio.clamp(1.0 - clip, 1.0 + clip) * advantages)

    def _forward(self, inputs: SequenceInputs) -> tuple[Dist, torch.Tensor]:
        """The action distributions and values of a minibatch's steps, flat ``[L * B]``."""
        actor = self.policy.actor
        if inputs.memory is None or inputs.starts is None:
            obs = inputs.obs.flatten(0, 1)
            mask = None if inputs.mask is None else inputs.mask.flatten(0, 1)
            return actor(obs, mask), self.critic(obs).squeeze(-1)
        dist, features = actor.unroll(inputs.obs, inputs.memory, inputs.starts, inputs.mask)
        return dist, self.critic(features).squeeze(-1)

    def _minibatch_step(
        self,
        inputs: SequenceInputs,
        actions: torch.Tensor,
        old_log_prob: torch.Tensor,
        advantages: torch.Tensor,
        returns: torch.Tensor,
        old_values: torch.Tensor,
        valid: torch.Tensor | None = None,
    ) -> dict[str, float]:
        """One gradient step; ``valid`` (1.0 or 0.0 per step) leaves an env's failed steps
        out of every mean."""
        cfg = self.cfg

        def mean(x: torch.Tensor) -> torch.Tensor:
            return x.mean() if valid is None else (x * valid).sum() / valid.sum().clamp(min=1.0)

        kept = advantages if valid is None else advantages[valid > 0]
        if (
            cfg.normalize_advantages
            and len(advantages) > 1
            and (len(kept) > 1 or self.parallel.active)
        ):
            mean_adv, std = self.parallel.mean_std(kept)
            advantages = (advantages - mean_adv) / (std + 1e-8)
        dist, new_values = self._forward(inputs)
        log_prob = dist.log_prob(actions)
        log_ratio = log_prob - old_log_prob
        ratio = log_ratio.exp()
        policy_loss = mean(self._policy_losses(log_prob, ratio, advantages))
        entropy = mean(dist.entropy())

        squares = (new_values - returns).pow(2)
        if cfg.value_clip is not None:
            clipped = old_values + (new_values - old_values).clamp(-cfg.value_clip, cfg.value_clip)
            squares = torch.max(squares, (clipped - returns).pow(2))
        value_loss = 0.5 * mean(squares)
        loss = policy_loss + cfg.vf_coef * value_loss - cfg.ent_coef * entropy

        grad_norm = self.optimize(self.optimizer, loss, cfg.max_grad_norm)
        with torch.no_grad():
            approx_kl = float(mean((ratio - 1.0) - log_ratio))  # k3 estimator, >= 0
            clip_frac = float(mean(((ratio - 1.0).abs() > cfg.clip_eps).float()))
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
