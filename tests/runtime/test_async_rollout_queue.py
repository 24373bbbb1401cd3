"""The asynchronous rollout queue (APPO, IMPALA): bounded, first in first out, rollouts past
the policy-lag bound dropped and counted. The bound is checked with a real queue actor on
Ray and workers calling it from threads, as worker actors would."""

from __future__ import annotations

import threading
import time

import numpy as np

from joyrl_ray.backends.planes import LocalPlanes, PlaneSetup
from joyrl_ray.control.coordinator import StopRule
from joyrl_ray.data.async_rollout_queue import AsyncRolloutQueue
from joyrl_ray.data.clients import AsyncRolloutQueueClient
from joyrl_ray.data_needs import AsyncRolloutNeeds
from joyrl_ray.roles.worker.sender import Payload
from joyrl_ray.wire.handles import LocalStore, RayHandle
from joyrl_ray.wire.messages import WorkerReport

STEPS, ENVS = 4, 2


def rollout(tag: float) -> dict[str, np.ndarray]:
    return {"rewards": np.full((STEPS, ENVS), tag, dtype=np.float32)}


def local_planes(batch: int = 2, lag: int = 1, capacity: int = 4, learners: int = 1):
    needs = AsyncRolloutNeeds(
        rollout_len=STEPS, batch_rollouts=batch, max_policy_lag=lag, queue_capacity=capacity
    )
    setup = PlaneSetup(stop_rule=StopRule(), needs=needs, n_workers=2, n_learners=learners)
    p = LocalPlanes(setup, LocalStore())
    assert isinstance(p.objects[0], AsyncRolloutQueue)
    return p, p.objects[0]


def push(p: LocalPlanes, worker: int, version: int, tag: float) -> None:
    assert not p.objects[0].wait_for_room(worker, 0.0).throttled
    report = WorkerReport(worker, STEPS * ENVS)
    p.sender(worker).send(worker, Payload(rollout(tag), -1, version), report, 0).result()


def tags(grant) -> list[float]:
    return [float(t) for t in grant.rollout["rewards"][0]]


def test_takes_the_oldest_rollouts_of_any_worker_without_waiting_for_every_worker() -> None:
    p, queue = local_planes()
    push(p, 0, 1, 0)
    assert queue.take_rollouts(0, 1, 1, 0.0).rollout is None  # one of the two it learns from
    push(p, 0, 1, 1)  # the same worker again: no worker waits for the others
    push(p, 1, 1, 2)
    assert tags(queue.take_rollouts(0, 1, 1, 0.0)) == [0.0, 0.0, 1.0, 1.0]
    assert [r.batch["rewards"][0, 0] for r in queue.rollouts] == [2.0]


def test_rollouts_past_the_policy_lag_are_dropped_as_stale_and_counted() -> None:
    p, queue = local_planes(lag=1)
    push(p, 0, 1, 0)
    push(p, 1, 2, 1)
    push(p, 0, 3, 2)
    # The learner is at version 3: version 1 is two versions behind, past the lag of 1.
    assert tags(queue.take_rollouts(0, 1, 3, 0.0)) == [1.0, 1.0, 2.0, 2.0]
    push(p, 1, 1, 3)  # pushed late: dropped at once, never queued
    stats = queue.stats()
    assert stats.transitions_dropped == {"stale": 2 * STEPS * ENVS}
    collected = p.coordinator_object.stats().transitions_collected
    assert collected == 4 * STEPS * ENVS == stats.transitions_stored + 2 * STEPS * ENVS
    assert stats.buffer["rollout_lag_max"] == 1


def test_two_learners_get_equal_env_slices_of_the_same_rollouts() -> None:
    p, queue = local_planes(learners=2)
    push(p, 0, 1, 0)
    push(p, 1, 1, 1)
    assert queue.take_rollouts(1, 1, 0, 0.0).rollout is None  # rank 0 decides
    assert tags(queue.take_rollouts(0, 1, 1, 0.0)) == [0.0, 0.0]
    assert tags(queue.take_rollouts(1, 1, 0, 0.0)) == [1.0, 1.0]
    assert queue.stats().transitions_stored == 2 * STEPS * ENVS


def test_workers_wait_for_room_and_the_queue_never_holds_more_than_its_capacity(ray_session):
    ray = ray_session
    capacity, n_workers, rounds = 2, 4, 3
    name = "async-rollout-queue-bounded"
    actor = (
        ray.remote(AsyncRolloutQueue)
        .options(num_cpus=0, max_concurrency=16, name=name)
        .remote(n_workers=n_workers, batch_rollouts=1, max_policy_lag=100, capacity=capacity)
    )
    queue = AsyncRolloutQueueClient(RayHandle("AsyncRolloutQueue", name=name, actor=actor))
    pushed: list[int] = []
    errors: list[BaseException] = []

    def worker(worker_id: int) -> None:
        try:
            for i in range(rounds):
                while queue.wait_for_room(worker_id, 5.0).result(30).throttled:
                    pass  # a full queue: ask again, as a worker does on its next turn
                queue.push_rollout(worker_id, 1, rollout(worker_id * 10 + i)).result(30)
                pushed.append(worker_id)
        except BaseException as exc:  # surfaced by the main thread
            errors.append(exc)

    try:
        threads = [threading.Thread(target=worker, args=(w,)) for w in range(n_workers)]
        for t in threads:
            t.start()
        # Nobody learned yet: `capacity` rollouts get in, and then every worker waits for room
        # (the queue names them: those that pushed, for their next rollout); however long that
        # takes on a busy machine, no more get in.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not errors:
            waiting = queue.waiting_roles().result(30)
            if len(pushed) >= capacity and len(waiting) == n_workers:
                break
            time.sleep(0.05)
        assert len(pushed) == capacity and not errors, (pushed, errors)
        assert sorted(waiting) == [f"worker {w}" for w in range(n_workers)]
        assert {state.what for state in waiting.values()} == {"room in the rollout queue"}
        time.sleep(0.5)
        assert len(pushed) == capacity
        assert queue.stats().result(30).buffer["rollout_queue_peak"] == capacity
        taken = 0
        deadline = time.monotonic() + 60
        while taken < n_workers * rounds and time.monotonic() < deadline:
            grant = queue.take_rollouts(0, taken + 1, 1, 1.0).result(30)
            taken += grant.rollout is not None
        for t in threads:
            t.join(30)
        assert not errors and taken == n_workers * rounds == len(pushed)
        stats = queue.stats().result(30)
        assert stats.buffer["rollout_queue_peak"] == capacity  # never more than its capacity
        assert stats.transitions_stored == n_workers * rounds * STEPS * ENVS
        assert stats.transitions_dropped == {}  # every rollout waited, none was dropped
    finally:
        ray.kill(actor)
