"""PPO defaults: clipped surrogate, GAE(lambda), minibatch epochs over each rollout."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from algos.base_config import OnPolicyConfig, in_range, one_of, positive
from algos.layers import LayerConfig, layers_field

LR_SCHEDULES = ("constant", "linear")


@dataclass
class PPOConfig(OnPolicyConfig):
    actor_layers: list[LayerConfig] = layers_field(64, 64, activation="tanh")  # policy net
    critic_layers: list[LayerConfig] = layers_field(64, 64, activation="tanh")  # value net
    gae_lambda: float = 0.95  # GAE(lambda): 1 is Monte Carlo, 0 is one-step TD
    clip_eps: float = 0.2  # surrogate clip: ratio kept in [1 - eps, 1 + eps]
    value_clip: float | None = None  # clip new values to old +- this; null: plain MSE
    vf_coef: float = 0.5  # weight of the value loss
    ent_coef: float = 0.0  # weight of the entropy bonus
    n_epochs: int = 10  # passes over each rollout
    n_minibatches: int = 4  # minibatches per epoch (used when minibatch_size is 0)
    minibatch_size: int = 0  # transitions per minibatch; 0: rollout size / n_minibatches
    normalize_advantages: bool = True  # per-minibatch zero mean, unit std
    max_grad_norm: float | None = 0.5  # gradient-norm clipping; null turns it off
    target_kl: float | None = None  # stop an iteration's epochs once approx KL exceeds this
    lr: float = 3e-4  # Adam learning rate of the actor (and of the critic unless critic_lr)
    critic_lr: float | None = None  # Adam learning rate of the critic; null: same as lr
    adam_eps: float = 1e-5  # Adam epsilon
    lr_schedule: str = "constant"  # constant, or linear decay to lr_end_factor * lr
    lr_end_factor: float = 0.0  # linear schedule: final lr as a fraction of the initial one
    lr_decay_steps: int = 0  # linear schedule: transitions learned over which lr decays
    reward_scaling: bool = False  # divide rewards by a running std of discounted returns
    reward_clip: float | None = 10.0  # with reward_scaling: clip scaled rewards to +- this
    ortho_init: bool = True  # orthogonal init (hidden gain sqrt 2, policy head 0.01, value 1)
    state_dependent_std: bool = False  # Gaussian: log-std from the actor net, not a parameter
    log_std_init: float = 0.0  # Gaussian: initial log-std (parameter or head bias)
    log_std_min: float = -5.0  # Gaussian: lower clamp of log-std
    log_std_max: float = 2.0  # Gaussian: upper clamp of log-std
    sequence_len: int = 0  # lstm / gru actor: steps per learnt sequence; 0: the whole rollout

    #: An lstm or gru layer in actor_layers gives the actor memory (the critic reads it).
    recurrent_layers: ClassVar[tuple[str, ...]] = ("actor_layers",)

    def check(self) -> None:
        super().check()
        positive(self, "lr", "critic_lr", "clip_eps", "adam_eps", "value_clip", "target_kl")
        positive(self, "max_grad_norm", "reward_clip")
        in_range(self, "gae_lambda", 0, 1)
        in_range(self, "n_epochs", 1)
        in_range(self, "n_minibatches", 1)
        in_range(self, "minibatch_size", 0)
        in_range(self, "vf_coef", 0)
        in_range(self, "lr_end_factor", 0, 1)
        in_range(self, "lr_decay_steps", 0)
        one_of(self, "lr_schedule", LR_SCHEDULES)
        in_range(self, "sequence_len", 0)
        if self.sequence_len and self.rollout_len % self.sequence_len:
            raise ValueError(
                f"algo_cfg.sequence_len={self.sequence_len} does not divide algo_cfg.rollout_len="
                f"{self.rollout_len}; allowed: a divisor of rollout_len, or 0 (the whole rollout)"
            )
