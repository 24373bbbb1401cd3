"""Typed clients of the data-plane actors: a replay shard (``DataServer``), the rollout
queues. No torch: any process (a fleet of synthetic workers) can use them."""

from __future__ import annotations

import numpy as np

from joyrl_ray.batch import Batch
from joyrl_ray.data.async_rollout_queue import AsyncRolloutQueue
from joyrl_ray.data.replay_shard import DataServer, ShardStats
from joyrl_ray.data.rollout_queue import QueueStats, RolloutQueue
from joyrl_ray.wire.handles import Call
from joyrl_ray.wire.messages import (
    Frames,
    InsertAck,
    Placement,
    PushAck,
    RolloutGrant,
    SampleGrant,
    WaitState,
    WorkerReport,
)
from joyrl_ray.wire.role_client import RoleClient


class DataServerClient(RoleClient):
    """Calls into one replay shard, a :class:`~joyrl_ray.data.replay_shard.DataServer`."""

    def insert(
        self,
        worker_id: int,
        batch: Batch | None,
        frames: Frames | None = None,
        report: WorkerReport | None = None,
        known_version: int = 0,
    ) -> Call[InsertAck]:
        return self._call(DataServer.insert, worker_id, batch, frames, report, known_version)

    def flush_reports(self, timeout_s: float) -> Call[bool]:
        return self._call(DataServer.flush_reports, timeout_s)

    def wait_for_room(
        self, worker_id: int, timeout_s: float, known_version: int = 0
    ) -> Call[InsertAck]:
        return self._call(DataServer.wait_for_room, worker_id, timeout_s, known_version)

    def learner_started(self, generation: int) -> Call[Placement]:
        return self._call(DataServer.learner_started, generation)

    def sample_round(
        self, rank: int, round_id: int, rows: int, max_updates: int, timeout_s: float
    ) -> Call[SampleGrant]:
        return self._call(DataServer.sample_round, rank, round_id, rows, max_updates, timeout_s)

    def update_priorities(
        self, slots: np.ndarray, generations: np.ndarray, priorities: np.ndarray
    ) -> Call[int]:
        return self._call(DataServer.update_priorities, slots, generations, priorities)

    def request_stop(self, reason: str) -> Call[None]:
        return self._call(DataServer.request_stop, reason)

    def where(self) -> Call[Placement]:
        return self._call(DataServer.where)

    def waiting_roles(self) -> Call[dict[str, WaitState]]:
        return self._call(DataServer.waiting_roles)

    def buffer_state(self) -> Call[dict[str, np.ndarray]]:
        return self._call(DataServer.buffer_state)

    def stats(self) -> Call[ShardStats]:
        return self._call(DataServer.stats)


class RolloutQueueClient(RoleClient):
    """Calls into the on-policy :class:`~joyrl_ray.data.rollout_queue.RolloutQueue`."""

    def push_rollout(self, worker_id: int, version: int, rollout: Batch) -> Call[InsertAck]:
        return self._call(RolloutQueue.push_rollout, worker_id, version, rollout)

    def push_and_report(
        self, worker_id: int, version: int, rollout: Batch, report: WorkerReport, known_version: int
    ) -> Call[PushAck]:
        return self._call(
            RolloutQueue.push_and_report, worker_id, version, rollout, report, known_version
        )

    def learner_started(self, generation: int) -> Call[Placement]:
        return self._call(RolloutQueue.learner_started, generation)

    def take_rollouts(
        self, rank: int, round_id: int, version: int, timeout_s: float
    ) -> Call[RolloutGrant]:
        return self._call(RolloutQueue.take_rollouts, rank, round_id, version, timeout_s)

    def drop_worker(self, worker_id: int) -> Call[None]:
        return self._call(RolloutQueue.drop_worker, worker_id)

    def add_worker(self, worker_id: int) -> Call[None]:
        return self._call(RolloutQueue.add_worker, worker_id)

    def request_stop(self, reason: str) -> Call[None]:
        return self._call(RolloutQueue.request_stop, reason)

    def where(self) -> Call[Placement]:
        return self._call(RolloutQueue.where)

    def waiting_roles(self) -> Call[dict[str, WaitState]]:
        return self._call(RolloutQueue.waiting_roles)

    def finish(self) -> Call[None]:
        return self._call(RolloutQueue.finish)

    def stats(self) -> Call[QueueStats]:
        return self._call(RolloutQueue.stats)


class AsyncRolloutQueueClient(RolloutQueueClient):
    """Calls into the asynchronous
    :class:`~joyrl_ray.data.async_rollout_queue.AsyncRolloutQueue` (its other calls are the
    synchronous queue's)."""

    def wait_for_room(self, worker_id: int, timeout_s: float) -> Call[InsertAck]:
        return self._call(AsyncRolloutQueue.wait_for_room, worker_id, timeout_s)


DataPlaneClient = DataServerClient | RolloutQueueClient
