"""Config fields the runtime needs from every algorithm of a flavour, and range checks.

Off-policy algorithms share the replay settings (the DataServer builds the buffer from
them and keeps the update-to-data ratio); on-policy algorithms share the rollout length.
An algorithm's own config dataclass inherits one of these, declares what data it needs
through :meth:`data_needs`, and adds its own rules to :meth:`check` (called before
anything starts, so a value out of range is one line, not a traceback later).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from algos.layers import check_recurrent_layers
from joyrl_ray.data_needs import ReplayNeeds, RolloutNeeds

BUFFER_TYPES = ("REPLAY_QUE", "PER")


def in_range(
    cfg: Any,
    key: str,
    low: float | None = None,
    high: float | None = None,
    *,
    low_open: bool = False,
) -> None:
    """Raise ValueError unless ``cfg.key`` (when not None) lies in the interval."""
    value = getattr(cfg, key)
    if value is None:
        return
    ok = True
    if low is not None:
        ok = value > low if low_open else value >= low
    if high is not None:
        ok = ok and value <= high
    if not ok:
        parts = []
        if low is not None:
            parts.append(f"{low:g} {'<' if low_open else '<='} ")
        parts.append(key)
        if high is not None:
            parts.append(f" <= {high:g}")
        raise ValueError(f"algo_cfg.{key}={value!r} is out of range; allowed: {''.join(parts)}")


def one_of(cfg: Any, key: str, allowed: Sequence[str]) -> None:
    value = getattr(cfg, key)
    if value not in allowed:
        raise ValueError(f"algo_cfg.{key}={value!r} is not allowed; allowed: {', '.join(allowed)}")


def positive(cfg: Any, *keys: str) -> None:
    for key in keys:
        in_range(cfg, key, 0, low_open=True)


@dataclass
class OffPolicyConfig:
    batch_size: int = 64  # transitions per update (over all learners)
    buffer_type: str = "REPLAY_QUE"  # REPLAY_QUE (uniform ring) or PER (prioritized)
    buffer_size: int = 100_000  # transitions kept
    learn_start: int = 1_000  # env steps collected before the first update
    updates_per_step: float = 1.0  # update-to-data ratio: gradient updates per env step
    gamma: float = 0.99  # discount
    n_step: int = 1  # n-step returns, folded by the workers
    per_alpha: float = 0.6  # PER: priority exponent
    per_beta_start: float = 0.4  # PER: importance-sampling exponent, annealed to 1
    per_beta_samples: int = 2_000_000  # PER: sampled rows over which beta reaches 1
    per_eps: float = 1e-6  # PER: added to |TD error|

    def data_needs(self) -> ReplayNeeds:
        return ReplayNeeds(
            batch_size=self.batch_size,
            buffer_size=self.buffer_size,
            learn_start=self.learn_start,
            updates_per_step=self.updates_per_step,
            n_step=self.n_step,
            gamma=self.gamma,
            prioritized=self.buffer_type == "PER",
            per_alpha=self.per_alpha,
            per_beta_start=self.per_beta_start,
            per_beta_samples=self.per_beta_samples,
            per_eps=self.per_eps,
        )

    #: The layer lists that may hold a recurrent layer (lstm, gru): none, off-policy.
    recurrent_layers: ClassVar[tuple[str, ...]] = ()

    def check(self) -> None:
        check_recurrent_layers(self, self.recurrent_layers)
        one_of(self, "buffer_type", BUFFER_TYPES)
        for key in ("batch_size", "buffer_size", "n_step", "per_beta_samples"):
            in_range(self, key, 1)
        if self.batch_size > self.buffer_size:
            raise ValueError(
                f"algo_cfg.batch_size={self.batch_size} is larger than algo_cfg.buffer_size="
                f"{self.buffer_size}, so no batch could ever be sampled; allowed: batch_size <= "
                "buffer_size"
            )
        in_range(self, "learn_start", 0)
        positive(self, "updates_per_step")
        in_range(self, "gamma", 0, 1)
        in_range(self, "per_alpha", 0)
        in_range(self, "per_beta_start", 0, 1)
        in_range(self, "per_eps", 0)


@dataclass
class OnPolicyConfig:
    rollout_len: int = 128  # steps per env in one rollout
    gamma: float = 0.99  # discount

    def data_needs(self) -> RolloutNeeds:
        return RolloutNeeds(rollout_len=self.rollout_len, gamma=self.gamma)

    #: The layer lists that may hold a recurrent layer (lstm, gru), learnt on sequences.
    recurrent_layers: ClassVar[tuple[str, ...]] = ()

    def check(self) -> None:
        check_recurrent_layers(self, self.recurrent_layers)
        in_range(self, "rollout_len", 1)
        in_range(self, "gamma", 0, 1)
