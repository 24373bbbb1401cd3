"""BC defaults: one actor network fitted to the replayed actions."""

from __future__ import annotations

from dataclasses import dataclass

from algos.base_config import OffPolicyConfig, in_range, one_of, positive
from algos.layers import LayerConfig, layers_field


@dataclass
class BCConfig(OffPolicyConfig):
    actor_layers: list[LayerConfig] = layers_field(256, 256)  # logits (Discrete); tanh head (Box)
    lr: float = 1e-3  # Adam learning rate
    batch_size: int = 256  # transitions per update
    learn_start: int = 0  # offline: the replay holds the whole dataset from the start
    expl_noise: float = 0.1  # Box: Gaussian noise std while exploring (normalised units)
    max_grad_norm: float | None = None  # gradient-norm clipping; null turns it off

    def check(self) -> None:
        super().check()
        # Cloning has no TD error to prioritise by.
        one_of(self, "buffer_type", ("REPLAY_QUE",))
        positive(self, "lr", "max_grad_norm")
        in_range(self, "expl_noise", 0)
