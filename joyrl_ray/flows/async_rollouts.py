"""Asynchronous rollouts (APPO / IMPALA): workers never wait for the learner.

Data plane: one bounded rollout queue (``AsyncRolloutQueue``). A worker first reserves a
place for its next rollout (waiting only while the queue is full), collects it with
whatever weights it has, and pushes it with its weights version; the learner takes
``batch_rollouts`` of them per update, corrects for the lag with V-trace and drops those
more than ``max_policy_lag`` versions behind (counted). A straggler slows only its share.
"""

from __future__ import annotations

from typing import Any

from joyrl_ray.control.client import CoordinatorClient
from joyrl_ray.data.async_rollout_queue import AsyncRolloutQueue
from joyrl_ray.data.clients import AsyncRolloutQueueClient, RolloutQueueClient
from joyrl_ray.data_needs import AsyncRolloutNeeds
from joyrl_ray.flows.base import AfterRoom, DataSetup
from joyrl_ray.flows.rollouts import RolloutFlow, RolloutSender
from joyrl_ray.roles.worker.sender import WorkerSender
from joyrl_ray.wire.handles import Call
from joyrl_ray.wire.messages import PushAck


class AsyncRolloutFlow(RolloutFlow):
    name = "async_rollouts"
    queue_cls = AsyncRolloutQueue
    client_cls = AsyncRolloutQueueClient

    def __init__(self, needs: AsyncRolloutNeeds) -> None:
        self.needs: Any = needs

    def queue_kwargs(self, setup: DataSetup) -> dict[str, Any]:
        return super().queue_kwargs(setup) | {
            "batch_rollouts": self.needs.batch_rollouts,
            "max_policy_lag": self.needs.max_policy_lag,
            "capacity": self.needs.queue_capacity,
        }

    def sender(self, coordinator: CoordinatorClient, queue: RolloutQueueClient) -> WorkerSender:
        assert isinstance(queue, AsyncRolloutQueueClient)
        return AsyncRolloutSender(coordinator, queue, self.needs.rollout_len)


class AsyncRolloutSender(RolloutSender):
    """A place in the queue before each rollout; any recent weights will do."""

    initially_throttled = True  # until the worker holds a place for its next rollout

    def __init__(
        self, coordinator: CoordinatorClient, queue: AsyncRolloutQueueClient, rollout_len: int
    ) -> None:
        super().__init__(coordinator, queue, rollout_len)
        self.async_queue = queue

    def needs_newer(self, version: int) -> bool:
        return version == 0  # any recent version, but the learner's, not its own initial one

    def throttled_after_ack(self, ack: PushAck, throttled: bool) -> bool:
        return throttled  # a place in the queue comes only from its wait

    def throttled_after_wait(self, ack: PushAck, waited_for_weights: bool, throttled: bool) -> bool:
        return throttled if waited_for_weights else ack.throttled

    def throttled_after_send(self, throttled: bool) -> bool:
        return True  # its place is filled: the next rollout needs one

    def wait_for_turn(
        self, worker_id: int, known_version: int, need_weights: bool, timeout_s: float
    ) -> Call[PushAck]:
        if need_weights:
            return self.coordinator.wait_for_weights(worker_id, known_version, timeout_s)
        room = self.async_queue.wait_for_room(worker_id, timeout_s)
        return AfterRoom(room, self.coordinator, worker_id, known_version, ask_coordinator=True)
