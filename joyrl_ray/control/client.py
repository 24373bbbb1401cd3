"""The coordinator's typed client: what workers, learners, shards and the driver ask of it."""

from __future__ import annotations

import numpy as np

from joyrl_ray.control.coordinator import Coordinator, CoordinatorStats
from joyrl_ray.wire.handles import Call
from joyrl_ray.wire.messages import (
    CheckpointRef,
    Counters,
    LearnerReply,
    LearnerReport,
    LearnerStart,
    Placement,
    PushAck,
    Reports,
    StallReport,
    TakenReport,
    WorkerReport,
    WorkerStart,
)
from joyrl_ray.wire.role_client import RoleClient


class CoordinatorClient(RoleClient):
    """Calls into the :class:`~joyrl_ray.control.coordinator.Coordinator`."""

    # ----- workers -----
    def register_worker(self, worker_id: int, where: Placement) -> Call[WorkerStart]:
        return self._call(Coordinator.register_worker, worker_id, where)

    def report_worker(
        self,
        report: WorkerReport,
        rows: int,
        known_version: int,
        shard: int = -1,
        stored: bool = False,
    ) -> Call[PushAck]:
        return self._call(Coordinator.report_worker, report, rows, known_version, shard, stored)

    def take_reports(
        self, shard: int, reports: list[TakenReport], known_version: int
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

    def report_learner(self, report: LearnerReport) -> Call[LearnerReply]:
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

    def shed_worker(self, worker_id: int) -> Call[tuple[int, str | None]]:
        return self._call(Coordinator.shed_worker, worker_id)

    def admit_worker(self, worker_id: int) -> Call[None]:
        return self._call(Coordinator.admit_worker, worker_id)

    def count_lost(self, shard: int, rows: int, line: str) -> Call[None]:
        return self._call(Coordinator.count_lost, shard, rows, line)

    def stall_report(self) -> Call[StallReport]:
        return self._call(Coordinator.stall_report)

    def stats(self) -> Call[CoordinatorStats]:
        return self._call(Coordinator.stats)
