"""APPO and IMPALA defaults: PPO's networks and optimizer, V-trace in place of GAE."""

from __future__ import annotations

from dataclasses import dataclass

from algos.base_config import positive
from algos.ppo.config import PPOConfig


@dataclass
class APPOConfig(PPOConfig):
    rho_bar: float = 1.0  # V-trace: clip of the importance weights in the targets (rho)
    c_bar: float = 1.0  # V-trace: clip of the trace coefficients (c)
    vtrace_lambda: float = 1.0  # V-trace: lambda in the trace coefficients (1: the paper's)

    def check(self) -> None:
        super().check()
        positive(self, "rho_bar", "c_bar")
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
