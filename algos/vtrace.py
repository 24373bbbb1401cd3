"""V-trace targets (Espeholt et al. 2018, IMPALA) on time-major rollouts ``[T, N]``.

Asynchronous learners learn from rollouts that workers acted out with older weights (the
behaviour policy ``mu``); V-trace corrects for that lag with truncated importance weights
``rho_t = min(rho_bar, pi/mu)`` and trace coefficients ``c_t = lambda * min(c_bar, pi/mu)``:

    delta_t = rho_t * (r_t + gamma * V(next_obs_t) * (1 - terminated_t) - V(obs_t))
    v_t - V(obs_t) = delta_t + gamma * c_t * (1 - done_t) * (v_{t+1} - V(obs_{t+1}))

Each step carries its own bootstrap value ``V(next_obs_t)``, the value of the true next
observation (the final one at an episode end), as in :mod:`algos.ppo.gae`: a terminated
step is not bootstrapped, a truncated one is bootstrapped from its final observation, the
last step of the rollout from the value of the observation after it, and the recursion
never crosses an episode end. With on-policy data (all ratios 1, ``rho_bar, c_bar >= 1``,
``lambda = 1``) the targets ``v_t`` are the GAE(lambda=1) returns.

Torch, no gradient: the targets and advantages are constants of the loss.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class VTrace:
    """Value targets ``vs``, policy-gradient advantages and the clipped ratios, all ``[T, N]``."""

    vs: torch.Tensor
    pg_advantages: torch.Tensor
    rhos: torch.Tensor


@torch.no_grad()
def vtrace(
    log_rhos: torch.Tensor,
    rewards: torch.Tensor,
    values: torch.Tensor,
    next_values: torch.Tensor,
    terminated: torch.Tensor,
    truncated: torch.Tensor,
    *,
    gamma: float,
    rho_bar: float = 1.0,
    c_bar: float = 1.0,
    lam: float = 1.0,
) -> VTrace:
    """V-trace over ``[T, N]`` inputs; ``log_rhos = log pi(a|x) - log mu(a|x)``.

    ``pg_advantages_t = rho_t * (r_t + gamma * v_{t+1} * (1 - terminated_t) - V(obs_t))``
    where ``v_{t+1}`` is the next step's target inside an episode and the bootstrap value
    ``V(next_obs_t)`` at an episode end or the rollout's end.
    """
    if rho_bar <= 0 or c_bar <= 0:
        raise ValueError(f"rho_bar and c_bar must be > 0 (got {rho_bar}, {c_bar})")
    ratios = torch.exp(log_rhos.float())
    rhos = torch.clamp(ratios, max=rho_bar)
    cs = lam * torch.clamp(ratios, max=c_bar)
    not_terminal = 1.0 - terminated.float()
    not_done = 1.0 - (terminated.bool() | truncated.bool()).float()
    values, next_values, rewards = values.float(), next_values.float(), rewards.float()
    deltas = rhos * (rewards + gamma * next_values * not_terminal - values)

    corrections = torch.zeros_like(deltas)  # v_t - V(obs_t)
    running = torch.zeros_like(deltas[0])
    for t in range(len(deltas) - 1, -1, -1):
        running = deltas[t] + gamma * cs[t] * not_done[t] * running
        corrections[t] = running
    vs = values + corrections

    # The target of the step after t: v_{t+1} inside an episode, else the bootstrap value.
    next_vs = next_values.clone()
    inside = not_done[:-1].bool()
    next_vs[:-1] = torch.where(inside, vs[1:], next_values[:-1])
    pg_advantages = rhos * (rewards + gamma * next_vs * not_terminal - values)
    return VTrace(vs=vs, pg_advantages=pg_advantages, rhos=rhos)
