"""Discrete conservative Q-learning (Kumar et al. 2020, the discrete form): DQN's TD
learning plus a term that pushes down the Q values of every action and pushes up those
of the dataset's actions, so that actions the data never took are not over-valued.

Loss per batch: ``td_loss + cql_alpha * mean(logsumexp_a Q(s, a) - Q(s, a_data))``, where
``td_loss`` is exactly :class:`~algos.dqn.policy.DQN`'s (targets, double Q, dueling,
importance weights and target sync as configured) and the log-sum-exp runs over the legal
actions when the observations hold an action mask. The conservative term is a plain mean:
importance weights correct the TD targets' sampling only. Acting is DQN's.
"""

from __future__ import annotations

import torch

from algos.dqn.policy import DQN
from algos.masks import masked_logits
from joyrl_ray.batch import OBS, Batch


class DiscreteCQL(DQN):
    """DQN with the conservative term added to its loss."""

    def penalty(
        self, batch: Batch, q_all: torch.Tensor, q_taken: torch.Tensor
    ) -> tuple[torch.Tensor | float, dict[str, float]]:
        legal_q = masked_logits(q_all, self.policy.mask_tensor(batch[OBS]))
        cql_loss = (torch.logsumexp(legal_q, dim=1) - q_taken).mean()
        return float(self.cfg.cql_alpha) * cql_loss, {"cql_loss": float(cql_loss.detach())}
