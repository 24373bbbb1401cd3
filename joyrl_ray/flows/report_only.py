"""Test mode: nothing is stored and nothing learns. Workers act with the checkpoint's
weights and send their reports (episodes, trajectories) straight to the coordinator."""

from __future__ import annotations

from joyrl_ray.batch import Batch
from joyrl_ray.control.client import CoordinatorClient
from joyrl_ray.flows.base import ActorFactory, DataFlow, DataPlane, DataPlaneStats, DataSetup
from joyrl_ray.roles.learner.source import LearnerSource, Round
from joyrl_ray.roles.worker.sender import Payload, WorkerSender
from joyrl_ray.wire.handles import Call
from joyrl_ray.wire.messages import PushAck, WorkerReport


class ReportOnlyFlow(DataFlow):
    name = "none"
    learning = False

    def build(self, factory: ActorFactory, setup: DataSetup) -> ReportOnlyPlane:
        return ReportOnlyPlane([])


class ReportOnlyPlane(DataPlane):
    """No data-plane actor at all."""

    def worker_sender(self, worker_id: int, coordinator: CoordinatorClient) -> WorkerSender:
        return ReportSender(coordinator)

    def learner_source(self) -> LearnerSource:
        return NoData()

    def stats(self) -> DataPlaneStats:
        return DataPlaneStats(0, {}, 0, {}, 0.0)


class ReportSender(WorkerSender):
    """Reports to the coordinator; acts only once the checkpoint's weights arrived."""

    def needs_newer(self, version: int) -> bool:
        return version == 0

    def wait_for_turn(
        self, worker_id: int, known_version: int, need_weights: bool, timeout_s: float
    ) -> Call[PushAck]:
        return self.coordinator.wait_for_weights(worker_id, known_version, timeout_s)

    def prepare(self, chunk: Batch, version: int) -> Payload:
        return Payload(None, 0, version)

    def send(
        self, worker_id: int, payload: Payload, report: WorkerReport, known_version: int
    ) -> Call[PushAck]:
        return self.coordinator.report_worker(report, 0, known_version)


class NoData(LearnerSource):
    """A source with nothing to learn from: the run is over at once."""

    def learner_started(self, generation: int) -> None:
        pass

    def next_round(self, version: int, wait_s: float) -> Round:
        return Round(stopped=True)
