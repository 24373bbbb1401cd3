"""SAC defaults: twin soft Q critics, tanh-squashed Gaussian actor, learned temperature."""

from __future__ import annotations

from dataclasses import dataclass

from algos.base_config import OffPolicyConfig, in_range, positive
from algos.layers import LayerConfig, layers_field


@dataclass
class SACConfig(OffPolicyConfig):
    actor_layers: list[LayerConfig] = layers_field(256, 256)  # actor; mean + log-std head on top
    critic_layers: list[LayerConfig] = layers_field(256, 256)  # each twin Q on concat(obs, action)
    batch_size: int = 256  # transitions per update
    actor_lr: float = 3e-4  # Adam learning rate of the actor
    critic_lr: float = 3e-4  # Adam learning rate of the twin critics
    alpha_lr: float = 3e-4  # Adam learning rate of log(alpha)
    tau: float = 0.005  # Polyak factor of the target critics
    target_update: int = 1  # updates between target-critic soft updates
    alpha: float = 0.2  # entropy temperature (the start value when auto_alpha)
    auto_alpha: bool = True  # tune alpha so the policy entropy tracks target_entropy
    target_entropy: float | None = None  # null: -(action dimensions)
    log_std_min: float = -20.0  # lower clamp of the actor's log-std
    log_std_max: float = 2.0  # upper clamp of the actor's log-std
    random_steps: int = 1_000  # env steps acting uniformly at random before using the actor
    max_grad_norm: float | None = None  # gradient-norm clipping per network; null: off

    def check(self) -> None:
        super().check()
        positive(self, "actor_lr", "critic_lr", "alpha_lr", "alpha", "max_grad_norm")
        in_range(self, "tau", 0, 1, low_open=True)
        in_range(self, "target_update", 1)
        in_range(self, "random_steps", 0)
