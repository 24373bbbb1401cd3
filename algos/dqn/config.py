"""DQN defaults (and the DoubleDQN / DuelingDQN variants, which only flip a switch)."""

from __future__ import annotations

from dataclasses import dataclass

from algos.base_config import OffPolicyConfig, in_range, one_of, positive
from algos.layers import LayerConfig, layers_field

LOSSES = ("huber", "mse")


@dataclass
class DQNConfig(OffPolicyConfig):
    value_layers: list[LayerConfig] = layers_field(256, 256)  # hidden layers of the Q network
    lr: float = 1e-3  # Adam learning rate
    updates_per_step: float = 0.5  # update-to-data ratio: gradient updates per env step
    epsilon_start: float = 1.0  # epsilon = end + (start - end) * exp(-env_steps / decay)
    epsilon_end: float = 0.02  # exploration floor
    epsilon_decay: float = 2000.0  # in env steps (global, over all workers)
    target_update: int = 50  # updates between target-network syncs
    tau: float = 1.0  # target sync: 1.0 copies, < 1 averages (Polyak)
    loss: str = "huber"  # huber or mse
    max_grad_norm: float | None = 10.0  # gradient-norm clipping; null turns it off
    double_q: bool = False  # pick next actions with the online net, value them with the target
    dueling: bool = False  # value and advantage streams over a shared trunk

    def check(self) -> None:
        super().check()
        positive(self, "lr", "epsilon_decay", "max_grad_norm")
        in_range(self, "epsilon_start", 0, 1)
        in_range(self, "epsilon_end", 0, 1)
        in_range(self, "target_update", 1)
        in_range(self, "tau", 0, 1, low_open=True)
        one_of(self, "loss", LOSSES)


@dataclass
class DoubleDQNConfig(DQNConfig):
    double_q: bool = True


@dataclass
class DuelingDQNConfig(DQNConfig):
    double_q: bool = True
    dueling: bool = True
