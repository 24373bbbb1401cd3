"""R2D2's n-step targets inside a sequence, its value rescaling, and its priority of a
sequence.

Everything is ``[L, B]``: the learning steps of ``B`` sequences (after the burn-in). A
sequence holds one episode's steps, so an episode can end only at its last valid step;
the steps after that are padding (``valid`` False).
"""

from __future__ import annotations

import torch


def nstep_targets(
    rewards: torch.Tensor,
    terminated: torch.Tensor,
    valid: torch.Tensor,
    bootstrap: torch.Tensor,
    gamma: float,
    n_step: int,
) -> torch.Tensor:
    """``sum_{i<k} gamma^i r_{t+i} + gamma^k V_{t+k-1}`` per step, where ``V_s`` is
    ``bootstrap[s]`` (the value of step ``s``'s next observation; 0 where ``s`` terminated)
    and ``k = n_step`` unless the sequence's valid steps end first (an episode end, or the
    sequence's own end: there the stored next observation bootstraps). Padding steps get 0.
    """
    steps = rewards.shape[0]
    t = torch.arange(steps, device=rewards.device)[:, None]
    last_valid = valid.long().sum(0, keepdim=True) - 1  # [1, B]
    last = torch.minimum(t + n_step - 1, last_valid).clamp(min=0)  # the step each target ends on
    span = (last - t + 1).clamp(min=0)
    target = torch.zeros_like(rewards)
    for i in range(n_step):
        at = (t + i).clamp(max=steps - 1).expand_as(rewards)
        inside = (i < span).to(rewards.dtype)
        target = target + gamma**i * inside * rewards.gather(0, at)
    alive = 1.0 - terminated.to(rewards.dtype).gather(0, last.expand_as(rewards))
    discount = torch.pow(torch.full_like(rewards, gamma), span.to(rewards.dtype)) * alive
    target = target + discount * bootstrap.gather(0, last.expand_as(rewards))
    return target * valid.to(rewards.dtype)


def sequence_priorities(td_abs: torch.Tensor, valid: torch.Tensor, eta: float) -> torch.Tensor:
    """Per sequence, ``eta * max |TD| + (1 - eta) * mean |TD|`` over its valid steps (0 for
    a sequence with none)."""
    weight = valid.to(td_abs.dtype)
    masked = td_abs * weight
    count = weight.sum(0)
    mean = masked.sum(0) / count.clamp(min=1.0)
    return eta * masked.max(0).values + (1.0 - eta) * mean


RESCALE_EPS = 1e-3


def rescale(x: torch.Tensor, eps: float = RESCALE_EPS) -> torch.Tensor:
    """R2D2's ``h(x) = sign(x) (sqrt(|x| + 1) - 1) + eps x``: the Q network learns values on
    this squashed scale, so long returns do not make its targets grow without bound."""
    return torch.sign(x) * (torch.sqrt(x.abs() + 1.0) - 1.0) + eps * x


def unrescale(y: torch.Tensor, eps: float = RESCALE_EPS) -> torch.Tensor:
    """The inverse of :func:`rescale` (Pohlen et al., 2018, Proposition A.2)."""
    root = torch.sqrt(1.0 + 4.0 * eps * (y.abs() + 1.0 + eps))
    return torch.sign(y) * (((root - 1.0) / (2.0 * eps)) ** 2 - 1.0)
