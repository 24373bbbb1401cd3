"""IQL defaults: twin Q critics, an expectile value net, an advantage-weighted actor."""

from __future__ import annotations

from dataclasses import dataclass

from algos.base_config import OffPolicyConfig, in_range, positive
from algos.layers import LayerConfig, layers_field


@dataclass
class IQLConfig(OffPolicyConfig):
    actor_layers: list[LayerConfig] = layers_field(256, 256)  # actor: the Gaussian's tanh mean
    critic_layers: list[LayerConfig] = layers_field(256, 256)  # each twin Q on concat(obs, action)
    value_layers: list[LayerConfig] = layers_field(256, 256)  # V(obs), the expectile of Q
    batch_size: int = 256  # transitions per update
    learn_start: int = 0  # offline: the replay holds the whole dataset from the start
    actor_lr: float = 3e-4  # Adam learning rate of the actor
    critic_lr: float = 3e-4  # Adam learning rate of the twin critics
    value_lr: float = 3e-4  # Adam learning rate of the value net
    expectile: float = 0.7  # V(s) is this expectile of Q(s, a) over the data's actions
    beta: float = 3.0  # inverse temperature of the actor's weights exp(beta * advantage)
    max_weight: float = 100.0  # the actor's weights are clipped at this
    tau: float = 0.005  # Polyak factor of the target critics
    random_steps: int = 0  # env steps acting uniformly at random (when acting online)
    max_grad_norm: float | None = None  # gradient-norm clipping per network; null: off

    def check(self) -> None:
        super().check()
        positive(self, "actor_lr", "critic_lr", "value_lr", "max_weight", "max_grad_norm")
        if not 0.0 < self.expectile < 1.0:
            raise ValueError(
                f"algo_cfg.expectile={self.expectile!r} is out of range; allowed: 0 < expectile < 1"
            )
        in_range(self, "beta", 0)
        in_range(self, "tau", 0, 1, low_open=True)
        in_range(self, "random_steps", 0)
