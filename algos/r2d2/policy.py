"""R2D2: epsilon-greedy acting on a recurrent Q network (:class:`R2D2Policy`), and
double-Q learning on replayed sequences (:class:`R2D2`).

A sampled row is one sequence ``[L, ...]`` of one episode's steps (padded after its end,
``mask``), with the memory its first step was acted from. The update reads the first
``burn_in`` steps without gradient to warm that stored memory (in both the online and
the target net), then unrolls the other ``sequence_len`` steps and learns them against
n-step targets computed here, inside the sequence: rewards summed up to ``n_step`` steps
ahead, cut at the episode's end, bootstrapped from the target net's value of the next
observation there (the stored ``next_obs`` at the sequence's or a truncated episode's
end), valued at the online net's greedy action (a legal one, when the observations hold
an action mask). With ``value_rescale`` (the default, as in
the paper) the nets learn values on the squashed scale ``h``: a target is
``h(n-step return + gamma^k h^-1(Q_target))``. The loss is weighted by the importance
weights of prioritized replay, and each sequence's new priority is
``eta * max |TD| + (1 - eta) * mean |TD|`` over its learnt steps.
"""

from __future__ import annotations

import copy
from typing import Any, NamedTuple

import gymnasium as gym
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from algos.base import Algorithm, LearnResult, adam, to_tensor
from algos.dqn.policy import EpsilonGreedyPolicy
from algos.export import ActingGraph, build_graph, join_memory, split_memory
from algos.masks import masked_argmax
from algos.networks import soft_update
from algos.r2d2.targets import nstep_targets, rescale, sequence_priorities, unrescale
from algos.recurrent import MEMORY, RecurrentNetwork
from joyrl_ray.batch import (
    ACTIONS,
    MASK,
    NEXT_OBS,
    OBS,
    REWARDS,
    TERMINATED,
    WEIGHTS,
    Batch,
)


class RecurrentGreedyQ(nn.Module):
    """One step of a recurrent Q network: the greedy action, the Q values and the memory
    after the step, as separate states (an exported R2D2 policy)."""

    def __init__(self, q_net: RecurrentNetwork) -> None:
        super().__init__()
        self.q_net = q_net

    def forward(self, obs: torch.Tensor, *states: torch.Tensor) -> tuple[torch.Tensor, ...]:
        q, _, memory = self.q_net.step(obs, join_memory(states))
        return (q.argmax(dim=-1), q, *split_memory(memory))


class R2D2Policy(EpsilonGreedyPolicy):
    """Epsilon-greedy acting on a recurrent Q network, one memory per env it acts for."""

    def __init__(
        self, cfg: Any, obs_space: gym.Space, action_space: gym.Space, device: torch.device
    ) -> None:
        super().__init__(cfg, obs_space, action_space, device)
        self.n_actions = int(action_space.n)
        self.q_net = RecurrentNetwork(
            cfg.value_layers, self.inputs, self.n_actions, dueling=cfg.dueling
        ).to(device)
        #: The memory of the rows it acts for (None: starting afresh).
        self.memory: torch.Tensor | None = None

    @torch.no_grad()
    def act(self, obs: np.ndarray, *, explore: bool, env_steps: int) -> tuple[np.ndarray, Batch]:
        if self.memory is None or len(self.memory) != len(obs):
            self.memory = self.q_net.initial_memory(len(obs), self.device)
        extras: Batch = {MEMORY: self.memory.cpu().numpy()}  # the state this step is acted from
        q, _, self.memory = self.q_net.step(self.obs_tensor(obs), self.memory)
        return self.choose(q, obs, explore, env_steps), extras

    def reset_memory(self, n_envs: int) -> None:
        self.memory = None

    def episodes_ended(self, done: np.ndarray) -> None:
        if self.memory is not None and np.any(done):
            self.memory[torch.as_tensor(np.asarray(done, dtype=bool), device=self.device)] = 0.0

    def acting_graph(self) -> ActingGraph:
        """``action`` ``[B]`` int64 (the greedy one), ``q_values`` ``[B, n]`` and the memory:
        ``state_in_h`` (and an LSTM's ``state_in_c``) ``[B, hidden]`` in, zeros at an
        episode's start; ``state_out_*`` out."""
        head = RecurrentGreedyQ(self.q_net)
        outputs = ("action", "q_values")
        return build_graph(self.observation_module(), head, outputs, self.obs_space, self.q_net)


def _time_major(column: np.ndarray) -> np.ndarray:
    """A sampled ``[B, L, ...]`` column as ``[L, B, ...]``."""
    return np.swapaxes(np.asarray(column), 0, 1)


def segment_starts(mask: torch.Tensor, burn: int) -> torch.Tensor:
    """``[L - burn, B]``: where the learning steps' real steps begin or end. At the end of
    an episode's first row's lead padding (the episode's first step) the unroll zeroes the
    memory; at the first padding step after an episode's end it ends the episode's segment
    at its last real step, reading that step's stored next observation from there."""
    changed = torch.zeros_like(mask)
    changed[1:] = mask[1:] != mask[:-1]
    return changed[burn:]


class SequenceLoss(NamedTuple):
    """A batch's loss, and per learnt step ``[L, B]`` (0 on padding): the Q values taken,
    the TD errors and which steps are real."""

    loss: torch.Tensor
    q: torch.Tensor
    td_error: torch.Tensor
    valid: torch.Tensor


class R2D2(Algorithm):
    """Double-Q learning of the policy's recurrent Q network on sequences, against a
    target network synced every ``target_update`` updates."""

    policy_cls = R2D2Policy
    policy: R2D2Policy
    state_attrs = ("target_net", "optimizer")

    def setup(self) -> None:
        q_net = self.policy.q_net
        self.target_net = copy.deepcopy(q_net).requires_grad_(False)
        self.optimizer = adam(q_net.parameters(), lr=self.cfg.lr)

    def sequence_loss(self, batch: Batch) -> SequenceLoss:
        """The weighted TD loss of a sampled batch of sequences (no step taken)."""
        cfg, device, q_net = self.cfg, self.device, self.policy.q_net
        burn = int(cfg.burn_in)
        obs = self.policy.obs_tensor(_time_major(batch[OBS]))
        next_obs = self.policy.obs_tensor(_time_major(batch[NEXT_OBS])[burn:])
        actions = to_tensor(_time_major(batch[ACTIONS])[burn:], device, torch.int64)
        rewards = to_tensor(_time_major(batch[REWARDS])[burn:], device, torch.float32)
        terminated = to_tensor(_time_major(batch[TERMINATED])[burn:], device, torch.bool)
        valid = to_tensor(_time_major(batch[MASK])[burn:], device, torch.bool)
        weights = to_tensor(batch[WEIGHTS], device, torch.float32)
        memory = to_tensor(np.asarray(batch[MEMORY]), device, torch.float32)
        starts = segment_starts(to_tensor(_time_major(batch[MASK]), device, torch.bool), burn)

        with torch.no_grad():  # the burn-in: no gradient reaches these steps
            online_memory = q_net.advance(obs[:burn], memory)
            target_memory = self.target_net.advance(obs[:burn], memory)
            _, _, target_next = self.target_net.unroll(obs[burn:], target_memory, starts, next_obs)
            assert target_next is not None
            next_q_target = self.target_net.head(target_next)
        q_all, _, online_next = q_net.unroll(obs[burn:], online_memory, starts, next_obs)
        assert online_next is not None
        with torch.no_grad():
            # A step's stored next observation is the one its bootstrap values.
            next_mask = self.policy.mask_tensor(_time_major(batch[NEXT_OBS])[burn:])
            chooser = q_net.head(online_next) if cfg.double_q else next_q_target
            next_actions = masked_argmax(chooser, next_mask).unsqueeze(-1)
            bootstrap = next_q_target.gather(-1, next_actions).squeeze(-1)
            if cfg.value_rescale:  # the nets' values are on the h scale; returns are not
                bootstrap = unrescale(bootstrap)
            target = nstep_targets(
                rewards, terminated, valid, bootstrap, self.gamma, int(cfg.n_step)
            )
            if cfg.value_rescale:
                target = rescale(target)
        q = q_all.gather(-1, actions.unsqueeze(-1)).squeeze(-1) * valid
        td_error = q - target
        if cfg.loss == "mse":
            per_step = td_error.pow(2)
        else:
            per_step = F.smooth_l1_loss(q, target, reduction="none")
        learnt = valid.to(torch.float32)
        loss = (weights[None] * per_step * learnt).sum() / learnt.sum().clamp(min=1.0)
        return SequenceLoss(loss, q, td_error, valid)

    def learn(self, batch: Batch) -> LearnResult:
        """One gradient step on a sampled batch of sequences."""
        cfg = self.cfg
        out = self.sequence_loss(batch)
        grad_norm = self.optimize(self.optimizer, out.loss, cfg.max_grad_norm)
        self.updates += 1
        if self.updates % max(int(cfg.target_update), 1) == 0:
            soft_update(self.target_net, self.policy.q_net, float(cfg.tau))

        td_abs = out.td_error.detach().abs()
        count = out.valid.sum().clamp(min=1)
        return LearnResult(
            metrics={
                "loss": float(out.loss.detach()),
                "q_mean": float(out.q.detach().sum() / count),
                "td_abs_mean": float(td_abs.sum() / count),
                "grad_norm": float(grad_norm),
                "lr": float(self.optimizer.param_groups[0]["lr"]),
            },
            priorities=sequence_priorities(td_abs, out.valid, float(cfg.priority_eta))
            .cpu()
            .numpy(),
        )
