"""The coordinator's typed client: what workers, learners, shards and the driver ask of it.

A client speaks for one policy (:meth:`CoordinatorClient.for_policy`): the calls of a
policy's workers' senders, its data-plane actors and its learners name it, so that none of
them needs to know that a run may have several.
"""

from __future__ import annotations

import numpy as np

from joyrl_ray.control.coordinator import Coordinator, CoordinatorStats
from joyrl_ray.league.league import Game
from joyrl_ray.policies import DEFAULT_POLICY
from joyrl_ray.wire.handles import Call, Handle
from joyrl_ray.wire.messages import (
    CheckpointRef,
    Counters,
    LeagueView,
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
    """Calls into the :class:`~joyrl_ray.control.coordinator.Coordinator`, for ``policy``."""

    def __init__(self, handle: Handle, policy: str = DEFAULT_POLICY) -> None:
        super().__init__(handle)
        self.policy = policy

    def for_policy(self, policy: str) -> CoordinatorClient:
        """The same coordinator, called for ``policy``."""
        return CoordinatorClient(self.handle, policy)

    # ----- workers -----
    def register_worker(self, worker_id: int, where: Placement) -> Call[WorkerStart]:
        return self._call(Coordinator.register_worker, worker_id, where, self.policy)

    def report_worker(
        self,
        report: WorkerReport,
        rows: int,
        known_version: int,
        shard: int = -1,
        stored: bool = False,
    ) -> Call[PushAck]:
        return self._call(
            Coordinator.report_worker, report, rows, known_version, shard, stored, self.policy
        )

    def take_reports(
        self, shard: int, reports: list[TakenReport], known_version: int
    ) -> Call[PushAck]:
        return self._call(Coordinator.take_reports, shard, reports, known_version, self.policy)

    def wait_for_weights(
        self, worker_id: int, known_version: int, timeout_s: float
    ) -> Call[PushAck]:
        return self._call(
            Coordinator.wait_for_weights, worker_id, known_version, timeout_s, self.policy
        )

    def league_games(
        self, worker_id: int, incarnation: int, games: list[Game], known_version: int
    ) -> Call[LeagueView | None]:
        return self._call(Coordinator.league_games, worker_id, incarnation, games, known_version)

    # ----- learners -----
    def learner_started(
        self, rank: int, generation: int, restored: Counters, where: Placement
    ) -> Call[LearnerStart]:
        return self._call(
            Coordinator.learner_started, rank, generation, restored, where, self.policy
        )

    def publish_weights(self, weights: dict[str, np.ndarray], version: int) -> Call[bool]:
        return self._call(Coordinator.publish_weights, weights, version, self.policy)

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
        return self._call(Coordinator.count_lost, shard, rows, line, self.policy)

    def stall_report(self) -> Call[StallReport]:
        return self._call(Coordinator.stall_report)

    def stats(self) -> Call[CoordinatorStats]:
        return self._call(Coordinator.stats)
