"""On-policy, through real coordinator and rollout-queue actors: a rollout made with an old
weights version is dropped and counted, and weights published to the coordinator travel
by reference."""

from __future__ import annotations

import numpy as np

from joyrl_ray.control.client import CoordinatorClient
from joyrl_ray.control.coordinator import Coordinator, StopRule
from joyrl_ray.data.clients import RolloutQueueClient
from joyrl_ray.data.rollout_queue import RolloutQueue
from joyrl_ray.flows.rollouts import RolloutSender
from joyrl_ray.roles.worker.sender import Payload
from joyrl_ray.wire.handles import RayHandle, RayStore
from joyrl_ray.wire.messages import WorkerReport

STEPS = 16


def _rollout(fill: float) -> dict[str, np.ndarray]:
    return {
        "obs": np.full((STEPS // 2, 2, 4), fill, dtype=np.float32),  # [time, env, ...]
        "actions": np.zeros((STEPS // 2, 2), dtype=np.int64),
        "rewards": np.ones((STEPS // 2, 2), dtype=np.float32),
    }


def test_stale_rollouts_are_dropped_and_counted(ray_session):
    ray = ray_session
    coordinator_actor = (
        ray.remote(Coordinator)
        .options(num_cpus=0, max_concurrency=4, name="stale-rollouts-coordinator")
        .remote(stop_rule=StopRule(), n_workers=1, learning=True, store=RayStore())
    )
    coordinator = CoordinatorClient(
        RayHandle("Coordinator", name="stale-rollouts-coordinator", actor=coordinator_actor)
    )
    queue_actor = (
        ray.remote(RolloutQueue)
        .options(num_cpus=0, max_concurrency=4, name="stale-rollouts-queue")
        .remote(n_workers=1, coordinator=coordinator)
    )
    queue = RolloutQueueClient(
        RayHandle("RolloutQueue", name="stale-rollouts-queue", actor=queue_actor)
    )
    sender = RolloutSender(coordinator, queue, STEPS)

    def push(version: int, fill: float):
        payload = Payload(_rollout(fill), -1, version)
        return sender.send(0, payload, WorkerReport(0, STEPS), 0).result(30)

    def accounted() -> tuple[int, int, dict[str, int]]:
        stats = queue.stats().result(30)
        collected = coordinator.stats().result(30).transitions_collected
        return collected, stats.transitions_stored, stats.transitions_dropped

    try:
        assert coordinator.publish_weights({"w": np.zeros(3)}, 2).result(30)

        ack = push(1, 1.0)
        assert ack.weights is not None and ack.weights.version == 2 and not ack.stop
        np.testing.assert_array_equal(RayStore().get(ack.weights.box)["w"], np.zeros(3))
        # The learner at version 2 takes nothing: the only rollout was made with version 1.
        assert queue.take_rollouts(0, 1, 2, 0.0).result(30).rollout is None

        push(2, 2.0)
        taken = queue.take_rollouts(0, 1, 2, 0.0).result(30).rollout
        np.testing.assert_array_equal(taken["obs"], _rollout(2.0)["obs"])
        assert accounted() == (2 * STEPS, STEPS, {"stale_rollout": STEPS})

        # Queued with version 2, but the learner published again before taking it.
        push(2, 3.0)
        coordinator.publish_weights({"w": np.ones(3)}, 3).result(30)
        push(3, 4.0)
        taken = queue.take_rollouts(0, 2, 3, 0.0).result(30).rollout
        np.testing.assert_array_equal(taken["obs"], _rollout(4.0)["obs"])
        collected, stored, dropped = accounted()
        assert dropped == {"stale_rollout": 2 * STEPS}
        # Every step counts as collected, and each is stored or dropped.
        assert collected == 4 * STEPS == stored + 2 * STEPS
    finally:
        ray.kill(queue_actor)
        ray.kill(coordinator_actor)
