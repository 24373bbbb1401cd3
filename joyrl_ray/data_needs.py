"""What an algorithm asks of the data path, declared by its policy class.

The runtime never reads algorithm config fields by name: it asks the policy class for its
:data:`DataNeeds` (``Policy.data_needs(cfg)``) and builds from that replay, the
synchronous rollout queue or the asynchronous one. Numpy-free and torch-free, so the
DataServer process can import it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ReplayNeeds:
    """Off-policy: replay the DataServer keeps, and the update-to-data ratio it enforces."""

    batch_size: int  # rows per update (over all learners)
    buffer_size: int
    learn_start: int  # env steps before the first update
    updates_per_step: float  # gradient updates per env step
    n_step: int = 1  # workers fold n-step returns with this and gamma
    gamma: float = 0.99
    prioritized: bool = False
    per_alpha: float = 0.6
    per_beta_start: float = 0.4
    per_beta_samples: int = 2_000_000
    per_eps: float = 1e-6


@dataclass(frozen=True)
class SequenceReplayNeeds(ReplayNeeds):
    """Off-policy on sequences: workers cut each env's episodes into rows of ``burn_in +
    sequence_len`` steps, a row starting every ``burn_in + sequence_len - overlap`` steps,
    each with the memory its first step was acted from; an episode's first row leads with
    ``burn_in`` padding steps, so that its first steps are learnt. Replay stores and samples whole
    rows (``batch_size``, ``buffer_size``: rows), and counts the env steps they store
    (``learn_start``, ``updates_per_step``: env steps). Nothing is n-step folded."""

    sequence_len: int = 40  # steps learnt from per row
    burn_in: int = 0  # steps before them that only warm the memory
    overlap: int = 20  # steps consecutive rows of an episode share

    @property
    def length(self) -> int:
        """Steps per row."""
        return self.burn_in + self.sequence_len

    @property
    def stride(self) -> int:
        """Steps between the first steps of consecutive rows of an episode."""
        return self.length - self.overlap


@dataclass(frozen=True)
class RolloutNeeds:
    """On-policy: one rollout of ``rollout_len`` steps per env per weights version."""

    rollout_len: int
    gamma: float = 0.99


@dataclass(frozen=True)
class AsyncRolloutNeeds:
    """Asynchronous on-policy (V-trace): workers push rollouts without waiting for the
    learner, into a bounded queue; the learner takes ``batch_rollouts`` of them per update
    and drops those more than ``max_policy_lag`` weights versions behind its own."""

    rollout_len: int
    gamma: float = 0.99
    batch_rollouts: int = 2  # rollouts per update (over all learners)
    max_policy_lag: int = 4  # older rollouts (in weights versions) are dropped, counted
    queue_capacity: int = 4  # rollouts queued or being collected, at most


OnPolicyNeeds = RolloutNeeds | AsyncRolloutNeeds
DataNeeds = ReplayNeeds | SequenceReplayNeeds | RolloutNeeds | AsyncRolloutNeeds
