"""R2D2 defaults: DQN's settings, on sequences replayed from their stored memory."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from algos.base_config import in_range
from algos.dqn.config import DQNConfig
from algos.layers import LayerConfig, recurrent_index
from joyrl_ray.data_needs import SequenceReplayNeeds


def _recurrent_q_layers() -> list[LayerConfig]:
    return [LayerConfig("linear", [64], "relu"), LayerConfig("lstm", [64], "none")]


@dataclass
class R2D2Config(DQNConfig):
    value_layers: list[LayerConfig] = field(
        default_factory=_recurrent_q_layers
    )  # with one lstm/gru
    batch_size: int = 32  # sequences per update (over all learners)
    buffer_type: str = "PER"  # REPLAY_QUE (uniform) or PER (prioritized by sequence)
    buffer_size: int = 10_000  # sequences kept
    updates_per_step: float = 0.1  # gradient updates per env step
    n_step: int = 5  # n-step targets, computed inside each sequence by the learner
    double_q: bool = True  # the online net picks the bootstrap action, the target values it
    dueling: bool = False  # value and advantage streams after the recurrent layer (as the
    # paper's network); false: one linear head
    target_update: int = 500  # updates between target-network syncs
    sequence_len: int = 40  # steps learnt from per sequence
    burn_in: int = 20  # steps before them that only warm the stored memory (no gradient)
    sequence_overlap: int | None = None  # steps consecutive sequences share; null: half a sequence
    priority_eta: float = 0.9  # a sequence's priority: eta max |TD| + (1 - eta) mean |TD|
    value_rescale: bool = True  # learn Q on R2D2's h(x) scale: targets h(r + gamma h^-1(Q'))

    #: The Q network's memory: one lstm or gru layer in value_layers (required).
    recurrent_layers: ClassVar[tuple[str, ...]] = ("value_layers",)

    @property
    def overlap(self) -> int:
        """Steps consecutive sequences of an episode share."""
        if self.sequence_overlap is not None:
            return int(self.sequence_overlap)
        return (self.burn_in + self.sequence_len) // 2

    def data_needs(self) -> SequenceReplayNeeds:
        return SequenceReplayNeeds(
            batch_size=self.batch_size,
            buffer_size=self.buffer_size,
            learn_start=self.learn_start,
            updates_per_step=self.updates_per_step,
            gamma=self.gamma,
            prioritized=self.buffer_type == "PER",
            per_alpha=self.per_alpha,
            per_beta_start=self.per_beta_start,
            per_beta_samples=self.per_beta_samples,
            per_eps=self.per_eps,
            sequence_len=self.sequence_len,
            burn_in=self.burn_in,
            overlap=self.overlap,
        )

    def check(self) -> None:
        super().check()
        if recurrent_index(self.value_layers) is None:
            raise ValueError(
                "algo_cfg.value_layers has no recurrent layer: R2D2 learns a Q network with "
                "memory; allowed: value_layers with one layer of layer_type lstm or gru "
                "(or algo_name DQN for a feed-forward Q network)"
            )
        in_range(self, "sequence_len", 1)
        in_range(self, "burn_in", 0)
        length = self.burn_in + self.sequence_len
        in_range(self, "sequence_overlap", 0, length - 1)
        if not self.burn_in <= self.overlap <= self.sequence_len:
            raise ValueError(
                f"algo_cfg.sequence_overlap={self.overlap} (burn_in={self.burn_in}, "
                f"sequence_len={self.sequence_len}) leaves steps no sequence learns from; "
                "allowed: burn_in <= sequence_overlap <= sequence_len"
            )
        in_range(self, "priority_eta", 0, 1)
