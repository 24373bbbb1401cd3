"""TD3 defaults: twin critics, target policy smoothing, delayed deterministic actor updates."""

from __future__ import annotations

from dataclasses import dataclass

from algos.base_config import OffPolicyConfig, in_range, positive
from algos.layers import LayerConfig, layers_field


@dataclass
class TD3Config(OffPolicyConfig):
    actor_layers: list[LayerConfig] = layers_field(256, 256)  # deterministic actor; tanh head
    critic_layers: list[LayerConfig] = layers_field(256, 256)  # each twin Q on concat(obs, action)
    batch_size: int = 256  # transitions per update
    actor_lr: float = 1e-3  # Adam learning rate of the actor
    critic_lr: float = 1e-3  # Adam learning rate of the twin critics
    tau: float = 0.005  # Polyak factor of the target actor and critics
    policy_delay: int = 2  # critic updates per actor (and target) update
    policy_noise: float = 0.2  # target smoothing noise std, in normalised action units
    noise_clip: float = 0.5  # target smoothing noise clipped to +- this (normalised units)
    expl_noise: float = 0.1  # exploration noise std while acting (normalised units)
    random_steps: int = 1_000  # env steps acting uniformly at random before using the actor
    max_grad_norm: float | None = None  # gradient-norm clipping per network; null: off

    def check(self) -> None:
        super().check()
        positive(self, "actor_lr", "critic_lr", "max_grad_norm")
        in_range(self, "tau", 0, 1, low_open=True)
        in_range(self, "policy_delay", 1)
        for key in ("policy_noise", "noise_clip", "expl_noise", "random_steps"):
            in_range(self, key, 0)
