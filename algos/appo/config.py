"""APPO and IMPALA defaults: PPO's networks and optimizer, V-trace in place of GAE, and the
asynchronous rollout flow (workers never wait for the learner; see :class:`AsyncRolloutNeeds`)."""

from __future__ import annotations

from dataclasses import dataclass

from algos.base_config import in_range, positive
from algos.ppo.config import PPOConfig
from joyrl_ray.data_needs import AsyncRolloutNeeds


@dataclass
class APPOConfig(PPOConfig):
    rho_bar: float = 1.0  # V-trace: clip of the importance weights in the targets (rho)
    c_bar: float = 1.0  # V-trace: clip of the trace coefficients (c)
    vtrace_lambda: float = 1.0  # V-trace: lambda in the trace coefficients (1: the paper's)
    batch_rollouts: int = 2  # rollouts (of rollout_len steps per env) learned from per update
    max_policy_lag: int = 4  # rollouts more weights versions behind the learner are dropped
    rollout_queue_capacity: int = 4  # rollouts queued or being collected; more workers wait

    def data_needs(self) -> AsyncRolloutNeeds:  # type: ignore[override]
        return AsyncRolloutNeeds(
            rollout_len=self.rollout_len,
            gamma=self.gamma,
            batch_rollouts=self.batch_rollouts,
            max_policy_lag=self.max_policy_lag,
            queue_capacity=self.rollout_queue_capacity,
        )

    def check(self) -> None:
        super().check()
        positive(self, "rho_bar", "c_bar")
        in_range(self, "batch_rollouts", 1)
        in_range(self, "max_policy_lag", 0)
        if self.rollout_queue_capacity < self.batch_rollouts:
            raise ValueError(
                f"algo_cfg.rollout_queue_capacity={self.rollout_queue_capacity} is smaller than "
                f"algo_cfg.batch_rollouts={self.batch_rollouts}, so no update could ever start; "
                "allowed: rollout_queue_capacity >= batch_rollouts"
            )
        if not 0.0 <= self.vtrace_lambda <= 1.0:
            raise ValueError(
                f"algo_cfg.vtrace_lambda={self.vtrace_lambda!r} is out of range; "
                "allowed: 0 <= vtrace_lambda <= 1"
            )


@dataclass
class IMPALAConfig(APPOConfig):
    n_epochs: int = 1  # IMPALA takes one pass over each batch of rollouts
    n_minibatches: int = 1
    normalize_advantages: bool = False
    ent_coef: float = 0.01
    max_grad_norm: float | None = 40.0
