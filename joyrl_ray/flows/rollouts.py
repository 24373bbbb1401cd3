"""Synchronous rollouts (PPO): one rollout per worker per weights version.

Data plane: one rollout queue (``RolloutQueue``; Ray does not restart it: its loss stops
the run, named so). Each worker collects ``rollout_len`` steps with the current weights
version, pushes the rollout with its report (the queue hands the report to the
coordinator) and waits at the coordinator for the next version; the learner takes one
rollout per worker per iteration, joined in worker order (a seeded run is reproducible),
learns, and publishes the next version. A rollout made with
stale weights is dropped and counted. A straggler stalls the iteration.
"""

from __future__ import annotations

from typing import Any

from joyrl_ray.batch import Batch, real_steps
from joyrl_ray.control.client import CoordinatorClient
from joyrl_ray.data.clients import RolloutQueueClient
from joyrl_ray.data.rollout_queue import RolloutQueue
from joyrl_ray.data_needs import RolloutNeeds
from joyrl_ray.flows.base import (
    CALL_TIMEOUT_S,
    ActorFactory,
    DataFlow,
    DataPlane,
    DataPlaneStats,
    DataSetup,
)
from joyrl_ray.roles.learner.source import LearnerSource, Round
from joyrl_ray.roles.worker.sender import Payload, SenderSetup, WorkerSender
from joyrl_ray.wire.handles import Call, RoleDied, plain_line
from joyrl_ray.wire.messages import PushAck, WorkerReport


class RolloutFlow(DataFlow):
    name = "rollouts"
    update_unit = "iters"
    queue_cls: type[RolloutQueue] = RolloutQueue
    client_cls: type[RolloutQueueClient] = RolloutQueueClient

    def __init__(self, needs: RolloutNeeds) -> None:
        self.needs: Any = needs

    def queue_kwargs(self, setup: DataSetup) -> dict[str, Any]:
        return {"n_workers": setup.n_workers, "n_learners": setup.n_learners}

    def build(self, factory: ActorFactory, setup: DataSetup) -> RolloutPlane:
        handle = factory.start(
            self.queue_cls,
            self.queue_cls.__name__,
            "rollout-queue",
            {**self.queue_kwargs(setup), "coordinator": factory.report_sink},
            callers=setup.n_workers,
            restartable=False,
        )
        return RolloutPlane(self, self.client_cls(handle))

    def sender(self, coordinator: CoordinatorClient, queue: RolloutQueueClient) -> WorkerSender:
        return RolloutSender(coordinator, queue, self.needs.rollout_len)


class RolloutPlane(DataPlane):
    """The rollout queue."""

    def __init__(self, flow: RolloutFlow, queue: RolloutQueueClient) -> None:
        super().__init__([queue])
        self.flow, self.queue = flow, queue

    def worker_sender(self, worker_id: int, coordinator: CoordinatorClient) -> WorkerSender:
        return self.flow.sender(coordinator, self.queue)

    def learner_source(self) -> RolloutSource:
        return RolloutSource(self.queue)

    def stats(self) -> DataPlaneStats:
        self.queue.finish().result(CALL_TIMEOUT_S)
        q = self.queue.stats().result(CALL_TIMEOUT_S)
        return DataPlaneStats(
            q.transitions_stored, dict(q.transitions_dropped), 0, dict(q.buffer), round(q.busy_s, 3)
        )

    def worker_dropped(self, worker_id: int) -> None:
        """The queue stops waiting for its rollouts."""
        self.queue.drop_worker(worker_id).result(30)

    def worker_returned(self, worker_id: int) -> None:
        """The queue waits for its rollouts (again)."""
        self.queue.add_worker(worker_id).result(30)

    def lost(self) -> str | None:
        """Whether the rollout queue died (Ray does not restart it: the run stops, named so)."""
        try:
            self.queue.where().result(CALL_TIMEOUT_S)
        except RoleDied as exc:
            return f"the data server (rollout queue) is gone: {plain_line(str(exc))}"
        return None


# ----- the worker's half -----
class RolloutSender(WorkerSender):
    """Pushes each rollout whole, with its report; the next rollout waits for a newer
    weights version at the coordinator."""

    keeps_failed_steps = True

    def __init__(
        self, coordinator: CoordinatorClient, queue: RolloutQueueClient, rollout_len: int
    ) -> None:
        super().__init__(coordinator)
        self.queue, self.rollout_len = queue, rollout_len
        self.rollout_version = -1  # the weights version of the worker's last rollout

    def bind(self, setup: SenderSetup) -> None:
        super().bind(setup)
        self.chunk_len = self.rollout_len

    def needs_newer(self, version: int) -> bool:
        # Every rollout needs a version newer than the last one's (and the first needs the
        # learner's first one; a worker's own initial weights would be stale).
        return version <= max(self.rollout_version, 0)

    def throttled_after_send(self, throttled: bool) -> bool:
        return False

    def wait_for_turn(
        self, worker_id: int, known_version: int, need_weights: bool, timeout_s: float
    ) -> Call[PushAck]:
        return self.coordinator.wait_for_weights(worker_id, known_version, timeout_s)

    def prepare(self, chunk: Batch, version: int) -> Payload:
        self.rollout_version = version
        return Payload(chunk, real_steps(chunk), version)

    def send(
        self, worker_id: int, payload: Payload, report: WorkerReport, known_version: int
    ) -> Call[PushAck]:
        """The rollout with its report, which the queue hands to the coordinator once the
        rollout is in (see ``RolloutQueue.push_and_report``)."""
        if payload.batch is None:
            return self.coordinator.report_worker(report, 0, known_version)
        return self.queue.push_and_report(
            worker_id, payload.version, payload.batch, report, known_version
        )


# ----- the learner's half -----
class RolloutSource(LearnerSource):
    """Each iteration: the learner's env slice of one rollout per worker."""

    publishes_every_update = True

    def __init__(self, queue: RolloutQueueClient) -> None:
        self.queue = queue
        self.round_id = 0

    def learner_started(self, generation: int) -> None:
        self.queue.learner_started(generation).result(timeout_s=CALL_TIMEOUT_S)

    def next_round(self, version: int, wait_s: float) -> Round:
        """One iteration; a round that did not come (deadline) is asked for again."""
        call = self.queue.take_rollouts(self.rank, self.round_id + 1, version, wait_s)
        grant = call.result(timeout_s=wait_s + CALL_TIMEOUT_S)
        if grant.stop:
            return Round(stopped=True)
        if grant.rollout is None:
            return Round()
        self.round_id += 1
        self.env_steps_learned += grant.env_steps
        return Round([grant.rollout])
