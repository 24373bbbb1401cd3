"""Typed clients of the control plane and the data plane (no torch: a fleet of synthetic
workers, or any process, can use them). See :mod:`joyrl_ray.clients` for the data path."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Concatenate, ParamSpec, TypeVar

import numpy as np

from joyrl_ray.batch import Batch
from joyrl_ray.control.coordinator import Coordinator, CoordinatorStats
from joyrl_ray.data.async_rollout_queue import AsyncRolloutQueue
from joyrl_ray.data.replay_shard import DataServer, ShardStats
from joyrl_ray.data.rollout_queue import QueueStats, RolloutQueue
from joyrl_ray.handles import Call, Handle, ObjectStore, RoleDied
from joyrl_ray.messages import (
    CheckpointRef,
    Counters,
    Frames,
    InsertAck,
    LearnerReport,
    LearnerStart,
    Placement,
    PushAck,
    Reports,
    RolloutGrant,
    SampleGrant,
    StallReport,
    WaitState,
    WorkerReport,
    WorkerStart,
)

ROLLOUT_TIMEOUT_S = 60.0
P = ParamSpec("P")
R = TypeVar("R")


class RoleClient:
    """Calls a role's methods through a handle (either backend)."""

    def __init__(self, handle: Handle) -> None:
        self.handle = handle

    @property
    def role(self) -> str:
        return self.handle.role

    def _call(
        self, method: Callable[Concatenate[Any, P], R], *args: P.args, **kwargs: P.kwargs
    ) -> Call[R]:
        return self.handle.invoke(method.__name__, *args, **kwargs)


class CoordinatorClient(RoleClient):
    """Calls into the :class:`~joyrl_ray.control.coordinator.Coordinator`."""

    # ----- workers -----
    def register_worker(self, worker_id: int, where: Placement) -> Call[WorkerStart]:
        return self._call(Coordinator.register_worker, worker_id, where)

    def report_worker(
        self, report: WorkerReport, rows: int, known_version: int, shard: int = -1
    ) -> Call[PushAck]:
        return self._call(Coordinator.report_worker, report, rows, known_version, shard)

    def take_reports(
        self, shard: int, reports: list[tuple[WorkerReport, int]], known_version: int
    ) -> Call[PushAck]:
        return self._call(Coordinator.take_reports, shard, reports, known_version)

    def wait_for_weights(
        self, worker_id: int, known_version: int, timeout_s: float
    ) -> Call[PushAck]:
        return self._call(Coordinator.wait_for_weights, worker_id, known_version, timeout_s)

    # ----- learners -----
    def learner_started(
        self, rank: int, generation: int, restored: Counters, where: Placement
    ) -> Call[LearnerStart]:
        return self._call(Coordinator.learner_started, rank, generation, restored, where)

    def publish_weights(self, weights: dict[str, np.ndarray], version: int) -> Call[bool]:
        return self._call(Coordinator.publish_weights, weights, version)

    def report_learner(self, report: LearnerReport) -> Call[Counters]:
        return self._call(Coordinator.report_learner, report)

    def submit_checkpoint(self, checkpoint: CheckpointRef) -> Call[None]:
        return self._call(Coordinator.submit_checkpoint, checkpoint)

    # ----- runtime and driver -----
    def drain_reports(self) -> Call[Reports]:
        return self._call(Coordinator.drain_reports)

    def wait_for_news(self, seen: int, timeout_s: float) -> Call[int]:
        return self._call(Coordinator.wait_for_news, seen, timeout_s)

    def request_stop(self, reason: str, detail: str | None = None) -> Call[None]:
        return self._call(Coordinator.request_stop, reason, detail)

    def drop_worker(self, worker_id: int) -> Call[int]:
        return self._call(Coordinator.drop_worker, worker_id)

    def count_lost(self, shard: int, rows: int, line: str) -> Call[None]:
        return self._call(Coordinator.count_lost, shard, rows, line)

    def stall_report(self) -> Call[StallReport]:
        return self._call(Coordinator.stall_report)

    def stats(self) -> Call[CoordinatorStats]:
        return self._call(Coordinator.stats)


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

    def learner_started(self, generation: int) -> Call[Placement]:
        return self._call(RolloutQueue.learner_started, generation)

    def take_rollouts(
        self, rank: int, round_id: int, version: int, timeout_s: float
    ) -> Call[RolloutGrant]:
        return self._call(RolloutQueue.take_rollouts, rank, round_id, version, timeout_s)

    def drop_worker(self, worker_id: int) -> Call[None]:
        return self._call(RolloutQueue.drop_worker, worker_id)

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


class ShardAck:
    """A worker's push to its replay shard (rows and report in one call), as a ``PushAck``.

    A shard that died (Ray is restarting it) does not stop the worker: the rows it sent
    are counted as lost with the shard, the report's counts from its totals (see
    :mod:`joyrl_ray.control.report_gaps`), and the worker goes on (its next insert waits
    for the restarted shard).
    """

    def __init__(
        self,
        insert: Call[InsertAck],
        report: WorkerReport,
        rows: int,
        known: int,
        link: WorkerLink,
    ) -> None:
        self.insert, self.report, self.rows = insert, report, rows
        self.known, self.link = known, link

    def done(self) -> bool:
        return self.insert.done()

    def result(self, timeout_s: float | None = None) -> PushAck:
        try:
            ack = self.insert.result(timeout_s)
        except RoleDied as exc:
            # The shard may have forwarded the report before it died, or not: the report
            # goes on with its totals alone, from which the coordinator counts it if not.
            link, report = self.link, self.report
            alone = WorkerReport(
                report.worker_id,
                0,
                fatal_env_error=report.fatal_env_error,
                incarnation=report.incarnation,
                totals=report.totals,
            )
            call = link.coordinator.report_worker(alone, 0, self.known, link.shard)
            answer = call.result(timeout_s)
            if self.rows:
                line = f"{self.rows} rows were lost with replay shard {link.shard} ({exc})"
                link.coordinator.count_lost(link.shard, self.rows, line).result(timeout_s)
            return answer
        return PushAck(ack.stop, ack.throttled, ack.env_steps, ack.weights)


@dataclass
class WorkerLink:
    """A worker's two peers: the coordinator, and its shard (or the rollout queue)."""

    coordinator: CoordinatorClient
    data: DataPlaneClient | None  # None in test mode: nothing is stored
    shard: int = -1  # which replay shard ``data`` is (-1: the rollout queue, or none)

    def register_worker(self, worker_id: int, where: Placement) -> Call[WorkerStart]:
        return self.coordinator.register_worker(worker_id, where)

    def push_transitions(
        self,
        worker_id: int,
        batch: Batch | None,
        report: WorkerReport,
        known_version: int,
        frames: Frames | None = None,
    ) -> Call[PushAck]:
        """Off-policy: the rows and the report to the worker's shard, in one call (the shard
        forwards the report); test mode: the report to the coordinator."""
        rows = len(next(iter(batch.values()))) if batch else 0
        if isinstance(self.data, DataServerClient):
            insert = self.data.insert(worker_id, batch, frames, report, known_version)
            return ShardAck(insert, report, rows, known_version, self)
        return self.coordinator.report_worker(report, rows, known_version)

    def push_rollout(
        self, worker_id: int, version: int, rollout: Batch, report: WorkerReport, known: int
    ) -> Call[PushAck]:
        """The rollout first, then the report: a rollout whose report stops the run is in
        the queue before the stop is, so both backends learn from the same rounds."""
        assert isinstance(self.data, RolloutQueueClient)
        self.data.push_rollout(worker_id, version, rollout).result(ROLLOUT_TIMEOUT_S)
        return self.coordinator.report_worker(report, report.env_steps, known)

    def wait_for_turn(
        self, worker_id: int, known_version: int, need_newer_weights: bool, timeout_s: float
    ) -> Call[PushAck]:
        """Wait for newer weights at the coordinator, or for room at the worker's shard
        (or in the asynchronous rollout queue: a place for its next rollout)."""
        data = self.data
        if need_newer_weights or not isinstance(data, DataServerClient | AsyncRolloutQueueClient):
            return self.coordinator.wait_for_weights(worker_id, known_version, timeout_s)
        if isinstance(data, DataServerClient):
            room = data.wait_for_room(worker_id, timeout_s, known_version)
            return _AfterRoom(room, self.coordinator, worker_id, known_version)
        # The asynchronous rollout queue knows nothing of the coordinator: asked after the
        # wait, the coordinator says the stop and the newest weights as they are then.
        room = data.wait_for_room(worker_id, timeout_s)
        return _AfterRoom(room, self.coordinator, worker_id, known_version, ask_coordinator=True)


class _AfterRoom:
    """A throttled worker's wait at its shard, whose ack passes on the coordinator's; or at
    the asynchronous rollout queue, followed by the coordinator's own ack."""

    def __init__(
        self,
        room: Call[InsertAck],
        coordinator: CoordinatorClient,
        worker_id: int,
        known: int,
        *,
        ask_coordinator: bool = False,
    ) -> None:
        self.room, self.coordinator = room, coordinator
        self.worker_id, self.known = worker_id, known
        self.ask_coordinator = ask_coordinator

    def done(self) -> bool:
        return self.room.done()

    def result(self, timeout_s: float | None = None) -> PushAck:
        try:
            room = self.room.result(timeout_s)
        except RoleDied:  # the shard is being restarted, empty: nothing to wait for
            call = self.coordinator.wait_for_weights(self.worker_id, self.known, 0.0)
            return call.result(timeout_s)
        if not self.ask_coordinator:
            return PushAck(room.stop, room.throttled, room.env_steps, room.weights)
        ack = self.coordinator.wait_for_weights(self.worker_id, self.known, 0.0).result(timeout_s)
        ack.throttled = room.throttled
        return ack


@dataclass
class LearnerLinks:
    """A learner's peers: the coordinator, the replay shards or the rollout queue, and the
    object store its checkpoints go into."""

    coordinator: CoordinatorClient
    shards: Sequence[DataServerClient]
    queue: RolloutQueueClient | None
    store: ObjectStore
