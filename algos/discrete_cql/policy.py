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
import torch.nn.functional as F

from algos.base import LearnResult, to_tensor
from algos.dqn.policy import DQN
from algos.masks import masked_argmax, masked_logits
from algos.networks import soft_update
from joyrl_ray.batch import ACTIONS, DISCOUNTS, NEXT_OBS, OBS, REWARDS, WEIGHTS, Batch


class DiscreteCQL(DQN):
    """DQN with the conservative term added to its loss."""

    def learn(self, batch: Batch) -> LearnResult:
        """One gradient step on a sampled batch."""
        cfg, device, policy = self.cfg, self.device, self.policy
        q_net = policy.q_net
        obs = policy.obs_tensor(batch[OBS])
        actions = to_tensor(batch[ACTIONS], device, torch.int64).reshape(-1, 1)
        rewards = to_tensor(batch[REWARDS], device, torch.float32)
        next_obs = policy.obs_tensor(batch[NEXT_OBS])
        discounts = to_tensor(batch[DISCOUNTS], device, torch.float32)
        weights = to_tensor(batch[WEIGHTS], device, torch.float32)

        q_all = q_net(obs)
        q = q_all.gather(1, actions).squeeze(1)
        with torch.no_grad():
            next_q_target = self.target_net(next_obs)
            next_mask = policy.mask_tensor(batch[NEXT_OBS])
            chooser = q_net(next_obs) if cfg.double_q else next_q_target
            next_actions = masked_argmax(chooser, next_mask).unsqueeze(1)
            target = rewards + discounts * next_q_target.gather(1, next_actions).squeeze(1)
        td_error = q - target
        if cfg.loss == "mse":
            per_sample = td_error.pow(2)
        else:
            per_sample = F.smooth_l1_loss(q, target, reduction="none")
        td_loss = (weights * per_sample).mean()
        legal_q = masked_logits(q_all, policy.mask_tensor(batch[OBS]))
        cql_loss = (torch.logsumexp(legal_q, dim=1) - q).mean()
        loss = td_loss + cfg.cql_alpha * cql_loss

        grad_norm = self.optimize(self.optimizer, loss, cfg.max_grad_norm)
        self.updates += 1
        if self.updates % max(int(cfg.target_update), 1) == 0:
            soft_update(self.target_net, q_net, float(cfg.tau))

        return LearnResult(
            metrics={
                "loss": float(loss.detach()),
                "td_loss": float(td_loss.detach()),
                "cql_loss": float(cql_loss.detach()),
                "q_mean": float(q.detach().mean()),
                "td_abs_mean": float(td_error.detach().abs().mean()),
                "grad_norm": float(grad_norm),
                "lr": float(self.optimizer.param_groups[0]["lr"]),
            },
            priorities=td_error.detach().abs().cpu().numpy(),
        )
