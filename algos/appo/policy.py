"""APPO and IMPALA: PPO's actor and critic, with targets corrected for policy lag by V-trace.

A rollout may have been acted out with older weights than the learner's (the behaviour
policy ``mu``, whose log-probabilities the workers stored). Before an update, the learner
takes the log-probabilities of the same actions under its current policy (the target
policy ``pi``, fixed for the update as IMPACT's target network) and computes V-trace
targets ``v_s`` and advantages from ``log pi - log mu`` (:mod:`algos.vtrace`). APPO then
runs PPO's clipped surrogate with the ratio taken against ``pi``; IMPALA takes one
policy-gradient step ``-log pi(a|x) * advantage``. Both regress the critic on ``v_s``.
Acting is PPO's (:class:`~algos.ppo.policy.PPOPolicy`), memory and action masks included
(``log pi`` is taken over the legal actions as ``log mu`` was): a recurrent actor's
``log pi`` is replayed sequence by sequence from the memory stored with each one's first step.
"""

from __future__ import annotations

import torch

from algos.base import to_tensor
from algos.ppo.policy import PPO, TargetInputs, Targets
from algos.vtrace import vtrace


class APPO(PPO):
    """PPO's clipped surrogate on V-trace advantages, the value loss on V-trace targets."""

    @torch.no_grad()
    def _log_probs(self, rollout: TargetInputs, chunk: int = 4096) -> torch.Tensor:
        """``log pi`` of the rollout's actions, flat (a recurrent actor's sequences each
        replayed from its stored memory, as the minibatches replay them)."""
        actor, sequences = self.policy.actor, rollout.sequences
        if sequences.memory is not None:
            obs = rollout.obs.reshape(*rollout.rewards.shape, *rollout.obs.shape[1:])
            out, _, _ = self._replay(obs, sequences)
            return actor.distribution(out.flatten(0, 1), rollout.mask).log_prob(rollout.actions)
        if rollout.mask is None:
            parts = zip(rollout.obs.split(chunk), rollout.actions.split(chunk), strict=True)
            return torch.cat([actor(o).log_prob(a) for o, a in parts])
        masked = zip(
            rollout.obs.split(chunk),
            rollout.actions.split(chunk),
            rollout.mask.split(chunk),
            strict=True,
        )
        return torch.cat([actor(o, m).log_prob(a) for o, a, m in masked])

    def _rollout_targets(self, rollout: TargetInputs) -> Targets:
        """V-trace advantages and targets ``v_s`` from ``log pi - log mu``, and ``log pi``."""
        shape = rollout.rewards.shape
        device = self.device
        target = self._log_probs(rollout)
        cfg = self.cfg
        out = vtrace(
            target.reshape(shape) - rollout.behaviour_log_prob.reshape(shape),
            to_tensor(rollout.rewards, device),
            rollout.values,
            rollout.next_values,
            to_tensor(rollout.terminated, device),
            to_tensor(rollout.truncated, device),
            gamma=self.gamma,
            rho_bar=cfg.rho_bar,
            c_bar=cfg.c_bar,
            lam=cfg.vtrace_lambda,
        )
        return out.pg_advantages.reshape(-1), out.vs.reshape(-1), target


class IMPALA(APPO):
    """The V-trace actor-critic: ``-log pi(a|x) * advantage``, no clipping."""

    def _policy_losses(
        self, log_prob: torch.Tensor, ratio: torch.Tensor, advantages: torch.Tensor
    ) -> torch.Tensor:
        return -(log_prob * advantages)
