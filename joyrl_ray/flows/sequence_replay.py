"""Sequence replay (recurrent Q-learning, R2D2): replay shards whose rows are sequences.

The replay flow's shards, samplers and priority path, with one change at each end. A
worker cuts its envs' steps into overlapping sequences (see
:class:`~joyrl_ray.data.buffers.sequences.SequenceCutter`) instead of folding n-step
transitions, each with the memory its first step was acted from; a shard stores, samples
and prioritizes whole sequences, and counts the env steps each row stores for the first
time (its ``new_steps``), so ``transitions_*``, ``learn_start`` and ``updates_per_step``
stay in env steps. Stacked frames travel inside the sequences, not once each.
"""

from __future__ import annotations

from typing import Any

from joyrl_ray.batch import NEW_STEPS, Batch
from joyrl_ray.control.client import CoordinatorClient
from joyrl_ray.data.buffers.sequences import SequenceCutter
from joyrl_ray.data.clients import DataServerClient
from joyrl_ray.data_needs import SequenceReplayNeeds
from joyrl_ray.flows.replay import ReplayFlow, ReplayPlane, ReplaySender, shard_of
from joyrl_ray.roles.worker.sender import Payload, SenderSetup, WorkerSender


class SequenceReplayFlow(ReplayFlow):
    name = "sequence_replay"
    needs: SequenceReplayNeeds

    def __init__(self, needs: SequenceReplayNeeds) -> None:
        super().__init__(needs)

    def shard_kwargs(self) -> dict[str, Any]:
        return {"steps_column": NEW_STEPS}

    def dataset_needs(self) -> None:
        return None  # a dataset's episodes are not cut into sequences (yet)

    def plane(self, shards: list[DataServerClient]) -> ReplayPlane:
        return SequenceReplayPlane(self.needs, shards)


class SequenceReplayPlane(ReplayPlane):
    """The replay shards, with workers that send sequences."""

    needs: SequenceReplayNeeds

    def worker_sender(self, worker_id: int, coordinator: CoordinatorClient) -> ReplaySender:
        shard = shard_of(worker_id, len(self.shards))
        return SequenceSender(coordinator, self.shards[shard], shard, self.needs)


class SequenceSender(ReplaySender):
    """Cuts a chunk into sequences and inserts them into the worker's shard; a payload
    counts the env steps its rows store for the first time."""

    def __init__(
        self,
        coordinator: CoordinatorClient,
        shard: DataServerClient,
        shard_index: int,
        needs: SequenceReplayNeeds,
    ) -> None:
        super().__init__(coordinator, shard, shard_index)
        self.needs = needs
        self.cutter: SequenceCutter | None = None

    def bind(self, setup: SenderSetup) -> None:
        # Not the n-step folder nor the frame encoder: a sequence holds its own frames.
        WorkerSender.bind(self, setup)
        needs = self.needs
        # An episode's first row leads with burn_in padding steps, so its first steps are
        # learnt too (the learner zeroes the memory where the padding ends).
        self.cutter = SequenceCutter(setup.n_envs, needs.length, needs.stride, needs.burn_in)

    def prepare(self, chunk: Batch, version: int) -> Payload:
        assert self.cutter is not None, "bind() first"
        rows = self.cutter.cut(chunk)
        return Payload(rows, int(rows[NEW_STEPS].sum()) if rows else 0, version)

    def unfinished(self) -> int:
        return self.cutter.reset() if self.cutter is not None else 0
