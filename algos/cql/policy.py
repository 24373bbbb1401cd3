"""CQL(H) on SAC: conservative Q-learning, offline RL for bounded continuous actions
(acting and export: SAC's :class:`~algos.sac.policy.SACPolicy`; learning: :class:`CQL`).

SAC's update, with a conservative term added to each critic's loss::

    cql_alpha * (logsumexp_k [Q(s, a_k) - log mu(a_k)] - Q(s, a_data))

over ``n_action_samples`` actions from each of: the uniform distribution on the
normalised box (``log mu = -|A| log 2``), the current policy at ``s`` and at ``s'``
(``log mu`` their log-probabilities); all of them are scored at ``s``. Subtracting
``log mu`` is the importance correction that makes the logsumexp estimate a soft maximum
of Q over all actions. The term pushes Q down on actions the data does not hold and up on
those it does, so the actor cannot exploit values guessed for unseen actions.

The ``actions`` column holds env units, as SAC's workers store them; a dataset recorded
by SAC (or any of this project's continuous policies) is read the same way.
"""

from __future__ import annotations

import math

import torch

from algos.base import LearnResult
from algos.continuous import CriticUpdate
from algos.sac.policy import SAC
from joyrl_ray.batch import NEXT_OBS, OBS, WEIGHTS, Batch


def conservative_gap(
    q_sampled: torch.Tensor, log_density: torch.Tensor, q_data: torch.Tensor
) -> torch.Tensor:
    """Per row ``logsumexp_k (q_sampled - log_density) - q_data``: ``[B, K]``, ``[B, K]``,
    ``[B]`` to ``[B]``."""
    return torch.logsumexp(q_sampled - log_density, dim=1) - q_data


class CQL(SAC):
    """SAC whose critics also minimise the conservative term (``cql_alpha`` times it)."""

    def setup(self) -> None:
        super().setup()
        self.last_cql_loss = 0.0

    def action_samples(
        self, obs: torch.Tensor, next_obs: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``[B, 3n, D]`` normalised actions (n uniform, n from pi(s), n from pi(s')) and
        their log-densities ``[B, 3n]``."""
        rows, n, dim = len(obs), int(self.cfg.n_action_samples), self.policy.scaler.dim
        # normal draws for the whole batch (as SAC's noise), so N learners use the samples
        # one would; the normal CDF turns the first set into uniform ones on [-1, 1]
        draws = self.parallel.global_randn(rows, 3 * n * dim, self.torch_rng, self.device)
        draws = draws.view(rows, 3, n, dim)
        uniform = 2.0 * torch.special.ndtr(draws[:, 0]) - 1.0
        uniform_log_density = torch.full((rows, n), -dim * math.log(2.0), device=self.device)
        sampled, log_densities = [uniform], [uniform_log_density]
        with torch.no_grad():
            for states, noise in ((obs, draws[:, 1]), (next_obs, draws[:, 2])):
                repeated = states.unsqueeze(1).expand(rows, n, *states.shape[1:])
                actions, log_prob = self.policy.actor(repeated, noise)
                sampled.append(actions)
                log_densities.append(log_prob)
        return torch.cat(sampled, dim=1), torch.cat(log_densities, dim=1)

    def update_critic(
        self, columns: dict[str, torch.Tensor], actions: torch.Tensor, target: torch.Tensor
    ) -> CriticUpdate:
        """SAC's critic step with the conservative term added to each critic's loss."""
        if not self.cfg.cql_alpha:
            self.last_cql_loss = 0.0
            return super().update_critic(columns, actions, target)
        obs, weights = columns[OBS], columns[WEIGHTS]
        q1, q2 = self.critic(obs, actions)
        td1, td2 = q1 - target, q2 - target
        td_loss = 0.5 * (weights * (td1.pow(2) + td2.pow(2))).mean()

        sampled, log_density = self.action_samples(obs, columns[NEXT_OBS])
        repeated = obs.unsqueeze(1).expand(len(obs), sampled.shape[1], *obs.shape[1:])
        sq1, sq2 = self.critic(repeated, sampled)
        gaps = conservative_gap(sq1, log_density, q1) + conservative_gap(sq2, log_density, q2)
        cql_loss = self.cfg.cql_alpha * (weights * gaps).mean()

        loss = td_loss + cql_loss
        grad_norm = self.optimize(self.critic_optimizer, loss, self.cfg.max_grad_norm)
        self.last_cql_loss = float(cql_loss.detach())
        td_abs = 0.5 * (td1.detach().abs() + td2.detach().abs())
        return CriticUpdate(float(loss.detach()), float(q1.detach().mean()), td_abs, grad_norm)

    def learn(self, batch: Batch) -> LearnResult:
        """SAC's update (critics with the conservative term, actor, temperature)."""
        result = super().learn(batch)
        result.metrics["cql_loss"] = self.last_cql_loss
        return result
