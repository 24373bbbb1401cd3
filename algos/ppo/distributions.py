"""PPO's actor and its action distributions for Discrete, MultiDiscrete and Box spaces.

Sampling draws from the policy's numpy generator (seeded per worker), so a seeded run
does not depend on torch's global RNG, which the learner shares in the single backend.
Log-probabilities and entropies are torch, differentiable, summed over action dimensions.
A Discrete actor given an action mask (:mod:`algos.masks`) puts no probability on illegal
actions: sampling, the mode, log-probabilities and the entropy all see the masked logits.
"""

from __future__ import annotations

import math
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from algos.layers import recurrent_index
from algos.masks import masked_logits
from algos.networks import build_network
from algos.observations import ObservationInput
from algos.recurrent import RecurrentNetwork

LOG_2PI_E_HALF = 0.5 * math.log(2.0 * math.pi * math.e)


class CategoricalDist:
    """One categorical per row; actions are int64 ``[B]``."""

    def __init__(self, logits: torch.Tensor) -> None:
        self.logits = logits - logits.logsumexp(dim=-1, keepdim=True)

    def log_prob(self, actions: torch.Tensor) -> torch.Tensor:
        return self.logits.gather(-1, actions.long().unsqueeze(-1)).squeeze(-1)

    def entropy(self) -> torch.Tensor:
        return -(self.logits.exp() * self.logits).sum(-1)

    def mode(self) -> np.ndarray:
        return self.logits.argmax(-1).cpu().numpy().astype(np.int64)

    def sample(self, rng: np.random.Generator) -> np.ndarray:
        probs = self.logits.exp().double().cpu().numpy()
        cdf = probs.cumsum(-1)
        draws = rng.random(cdf.shape[:-1] + (1,)) * cdf[..., -1:]
        return np.minimum((draws > cdf).sum(-1), cdf.shape[-1] - 1).astype(np.int64)


class MultiCategoricalDist:
    """Independent categoricals, one per MultiDiscrete component; actions ``[B, K]``."""

    def __init__(self, logits: torch.Tensor, nvec: list[int]) -> None:
        self.parts = [CategoricalDist(x) for x in torch.split(logits, nvec, dim=-1)]

    def log_prob(self, actions: torch.Tensor) -> torch.Tensor:
        return sum(d.log_prob(actions[..., i]) for i, d in enumerate(self.parts))

    def entropy(self) -> torch.Tensor:
        return sum(d.entropy() for d in self.parts)

    def mode(self) -> np.ndarray:
        return np.stack([d.mode() for d in self.parts], axis=-1)

    def sample(self, rng: np.random.Generator) -> np.ndarray:
        return np.stack([d.sample(rng) for d in self.parts], axis=-1)


class GaussianDist:
    """Diagonal Gaussian; actions float32 ``[B, D]`` (raw samples, unclipped)."""

    def __init__(self, mean: torch.Tensor, log_std: torch.Tensor) -> None:
        self.mean = mean
        self.log_std = log_std.expand_as(mean)

    def log_prob(self, actions: torch.Tensor) -> torch.Tensor:
        z = (actions - self.mean) * torch.exp(-self.log_std)
        return (-0.5 * z.pow(2) - self.log_std - 0.5 * math.log(2.0 * math.pi)).sum(-1)

    def entropy(self) -> torch.Tensor:
        return (self.log_std + LOG_2PI_E_HALF).sum(-1)

    def mode(self) -> np.ndarray:
        return self.mean.cpu().numpy().astype(np.float32)

    def sample(self, rng: np.random.Generator) -> np.ndarray:
        mean = self.mean.cpu().numpy()
        std = self.log_std.exp().cpu().numpy()
        return (mean + std * rng.standard_normal(mean.shape)).astype(np.float32)


Dist = CategoricalDist | MultiCategoricalDist | GaussianDist


def init_orthogonal(network: nn.Module, head_gain: float) -> None:
    """Orthogonal weights (gain sqrt 2), zero biases; the last linear layer gets ``head_gain``."""
    layers = [m for m in network.modules() if isinstance(m, (nn.Linear, nn.Conv2d))]
    for i, layer in enumerate(layers):
        gain = head_gain if i == len(layers) - 1 else math.sqrt(2.0)
        nn.init.orthogonal_(layer.weight, gain=gain)
        nn.init.zeros_(layer.bias)


class Actor(nn.Module):
    """The policy network plus, for Box spaces, a log-std (a parameter or a second head half).

    With an lstm or gru layer in ``actor_layers`` the network has memory
    (:class:`~algos.recurrent.RecurrentNetwork`): it acts by :meth:`step` and learns by
    :meth:`unroll`, and its recurrent features are what the critic reads.
    """

    def __init__(self, cfg: Any, inputs: ObservationInput, action_space: gym.Space) -> None:
        super().__init__()
        self.kind, self.nvec, self.action_shape = _describe(action_space)
        self.state_dependent_std = self.kind == "gaussian" and bool(cfg.state_dependent_std)
        n_out = sum(self.nvec)
        width = n_out * (2 if self.state_dependent_std else 1)
        self.recurrent = recurrent_index(cfg.actor_layers) is not None
        self.net: nn.Module = (
            RecurrentNetwork(cfg.actor_layers, inputs, width)
            if self.recurrent
            else build_network(cfg.actor_layers, inputs, width)
        )
        if cfg.ortho_init:
            init_orthogonal(self.net, head_gain=0.01)
        self.log_std_min, self.log_std_max = float(cfg.log_std_min), float(cfg.log_std_max)
        if self.kind == "gaussian":
            if self.state_dependent_std:
                head = [m for m in self.net.modules() if isinstance(m, nn.Linear)][-1]
                with torch.no_grad():
                    head.bias[n_out:] = float(cfg.log_std_init)
            else:
                self.log_std = nn.Parameter(torch.full((n_out,), float(cfg.log_std_init)))

    @property
    def memory_net(self) -> RecurrentNetwork:
        # AttributeError, so that hasattr() (as torch.jit.trace asks of every attribute) is False
        if not isinstance(self.net, RecurrentNetwork):
            raise AttributeError("a feed-forward actor has no memory_net")
        return self.net

    def forward(self, obs: torch.Tensor, mask: torch.Tensor | None = None) -> Dist:
        return self.distribution(self.net(obs), mask)

    def step(
        self, obs: torch.Tensor, memory: torch.Tensor, mask: torch.Tensor | None = None
    ) -> tuple[Dist, torch.Tensor]:
        """A recurrent actor's step for a batch of envs: the distribution, the new memory."""
        out, _, memory = self.memory_net.step(obs, memory)
        return self.distribution(out, mask), memory

    def unroll(
        self,
        obs: torch.Tensor,
        memory: torch.Tensor,
        starts: torch.Tensor,
        mask: torch.Tensor | None = None,
    ) -> tuple[Dist, torch.Tensor]:
        """Sequences ``[L, B, ...]`` (:meth:`RecurrentNetwork.unroll`): the distribution of
        every step, flat ``[L * B]``, and the recurrent features ``[L * B, H]``."""
        out, features, _ = self.memory_net.unroll(obs, memory, starts)
        flat_mask = None if mask is None else mask.flatten(0, 1)
        return self.distribution(out.flatten(0, 1), flat_mask), features.flatten(0, 1)

    def distribution(self, out: torch.Tensor, mask: torch.Tensor | None = None) -> Dist:
        """The action distribution of the network's outputs ``[B, ...]``; a Discrete one
        over the legal actions of ``mask`` ``[B, n]`` when given."""
        if self.kind == "discrete":
            return CategoricalDist(masked_logits(out, mask))
        if self.kind == "multi_discrete":
            return MultiCategoricalDist(out, self.nvec)
        if self.state_dependent_std:
            mean, log_std = out.chunk(2, dim=-1)
        else:
            mean, log_std = out, self.log_std
        return GaussianDist(mean, log_std.clamp(self.log_std_min, self.log_std_max))


def _describe(space: gym.Space) -> tuple[str, list[int], tuple[int, ...]]:
    """(kind, output widths per component, action shape per row) for a supported space."""
    if isinstance(space, gym.spaces.Discrete):
        return "discrete", [int(space.n)], ()
    if isinstance(space, gym.spaces.MultiDiscrete):
        if np.any(space.start != 0):
            raise ValueError(f"PPO needs MultiDiscrete components starting at 0, got {space}")
        return "multi_discrete", [int(n) for n in space.nvec.ravel()], tuple(space.shape)
    if isinstance(space, gym.spaces.Box):
        return "gaussian", [int(np.prod(space.shape))], tuple(space.shape)
    raise ValueError(f"PPO supports Discrete, MultiDiscrete and Box actions, got {space}")
