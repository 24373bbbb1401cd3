"""Config fields the runtime reads from every algorithm of a flavour.

Off-policy algorithms share the replay settings (the DataServer builds the buffer from
them and the learner keeps the update-to-data ratio); on-policy algorithms share the
rollout length. An algorithm's own config dataclass inherits one of these.
"""

from __future__ import annotations

from dataclasses import dataclass

BUFFER_TYPES = ("REPLAY_QUE", "PER")


@dataclass
class OffPolicyConfig:
    batch_size: int = 64  # transitions per update
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


@dataclass
class OnPolicyConfig:
    rollout_len: int = 128  # steps per env in one rollout
    gamma: float = 0.99  # discount
