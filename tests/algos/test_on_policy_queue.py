"""The on-policy rollout queue: one rollout per worker per weights version, stale ones
dropped, and each learner's equal share of the env columns (a real coordinator and
rollout queue, in this process)."""

from __future__ import annotations

import numpy as np

from joyrl_ray.backends.planes import LocalPlanes, PlaneSetup
from joyrl_ray.control.coordinator import StopRule
from joyrl_ray.data_needs import RolloutNeeds
from joyrl_ray.roles.worker.sender import Payload
from joyrl_ray.wire.handles import LocalStore
from joyrl_ray.wire.messages import WorkerReport

STEPS, ENVS = 4, 2


def rollout(tag: float) -> dict[str, np.ndarray]:
    return {"rewards": np.full((STEPS, ENVS), tag, dtype=np.float32)}


def planes(n_workers: int = 2, n_learners: int = 1) -> LocalPlanes:
    setup = PlaneSetup(
        stop_rule=StopRule(),
        needs=RolloutNeeds(rollout_len=STEPS),
        n_workers=n_workers,
        n_learners=n_learners,
    )
    p = LocalPlanes(setup, LocalStore())
    p.coordinator_object.publish_weights({"w": np.zeros(1)}, 1)
    return p


def push(p: LocalPlanes, version: int, tag: float, worker: int = 0) -> None:
    report = WorkerReport(worker, STEPS * ENVS)
    p.sender(worker).send(worker, Payload(rollout(tag), -1, version), report, 0).result()


class Rounds:
    """Asks for rounds as a learner does: the next round id until that round comes."""

    def __init__(self, p: LocalPlanes, version: int = 1) -> None:
        self.queue, self.round_id, self.version = p.objects[0], 0, version

    def take(self, rank: int = 0, new_round: bool = True):
        grant = self.queue.take_rollouts(rank, self.round_id + int(new_round), self.version, 0.0)
        if new_round and (grant.rollout is not None or grant.stop):
            self.round_id += 1
        return grant


def tags(grant) -> list[float]:
    return [float(t) for t in grant.rollout["rewards"][0]]


def test_take_waits_for_one_rollout_per_worker() -> None:
    p = planes()
    rounds = Rounds(p)
    push(p, 1, 0)
    assert rounds.take().rollout is None
    push(p, 1, 1, worker=1)
    assert tags(rounds.take()) == [0.0, 0.0, 1.0, 1.0]  # both rollouts, joined along envs
    assert rounds.take().rollout is None and p.coordinator_object.counters.env_steps == 16


def test_rollouts_of_old_weights_are_dropped_and_counted() -> None:
    p = planes()
    rounds = Rounds(p)
    push(p, 0, 0)  # made before version 1 was published
    push(p, 1, 1)
    push(p, 1, 2)  # a restarted worker pushed twice for version 1
    push(p, 1, 3)
    assert rounds.take().rollout is not None
    rounds.version = 2  # the learner published version 2: the leftover rollout is stale
    push(p, 2, 4)
    assert rounds.take().rollout is None
    push(p, 2, 5)
    assert tags(rounds.take()) == [4.0, 4.0, 5.0, 5.0]
    stats = p.objects[0].stats()
    assert stats.transitions_dropped == {"stale_rollout": 16}
    collected = p.coordinator_object.stats().transitions_collected
    assert collected == 6 * 8 == stats.transitions_stored + 16 + 0


def test_at_the_stop_a_complete_round_is_learned_and_later_rollouts_are_dropped() -> None:
    p = planes()
    push(p, 1, 0)
    push(p, 1, 1, worker=1)
    p.coordinator_object.request_stop("test")  # the coordinator tells the queue
    push(p, 1, 2)  # after the stop: dropped
    rounds = Rounds(p)
    assert tags(rounds.take()) == [0.0, 0.0, 1.0, 1.0]  # made before the stop
    grant = rounds.take()
    assert grant.stop and grant.rollout is None
    assert p.objects[0].stats().transitions_dropped == {"after_stop": 8}


def test_two_learners_get_equal_env_slices_of_the_same_round() -> None:
    p = planes(n_workers=2, n_learners=2)
    push(p, 1, 0)
    push(p, 1, 1, worker=1)
    rounds = Rounds(p)
    assert rounds.take(rank=1, new_round=True).rollout is None  # rank 0 decides rounds
    first = rounds.take(rank=0)
    second = rounds.take(rank=1, new_round=False)
    assert tags(first) == [0.0, 0.0] and tags(second) == [1.0, 1.0]
    assert p.objects[0].stats().transitions_stored == 16
    assert not p.objects[0].rounds  # served to both: forgotten


def test_a_stale_version_is_never_published_over_a_newer_one() -> None:
    p = planes()
    s = p.coordinator_object
    assert s.publish_weights({"w": np.ones(1)}, 3)
    assert not s.publish_weights({"w": np.zeros(1)}, 2)  # e.g. a restarted learner's old one
    assert s.stats().weights_versions == 3 and s.stats().weights_rejected == 1
    handed_out = s.wait_for_weights(0, known_version=0, timeout_s=0).weights
    assert handed_out is not None and handed_out.version == 3
    np.testing.assert_array_equal(handed_out.box[0]["w"], np.ones(1))
