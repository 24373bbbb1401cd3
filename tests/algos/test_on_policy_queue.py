"""The DataServer rollout queue: one rollout per worker per weights version, stale ones
dropped, and each learner's equal share of the env columns."""

from __future__ import annotations

import numpy as np

from joyrl_ray.data_needs import RolloutNeeds
from joyrl_ray.data_server import DataServer, StopRule
from joyrl_ray.messages import WorkerReport

STEPS, ENVS = 4, 2


def rollout(tag: float) -> dict[str, np.ndarray]:
    return {"rewards": np.full((STEPS, ENVS), tag, dtype=np.float32)}


def server(n_workers: int = 2, n_learners: int = 1) -> DataServer:
    s = DataServer(
        stop_rule=StopRule(),
        needs=RolloutNeeds(rollout_len=STEPS),
        n_workers=n_workers,
        n_learners=n_learners,
    )
    s.publish_weights({"w": np.zeros(1)}, 1)
    return s


def push(s: DataServer, version: int, tag: float, worker: int = 0) -> None:
    s.push_rollout(worker, version, rollout(tag), WorkerReport(worker, STEPS * ENVS), 0)


class Rounds:
    """Asks for rounds as a learner does: a new round id each time."""

    def __init__(self, s: DataServer) -> None:
        self.s, self.round_id = s, 0

    def take(self, rank: int = 0, new_round: bool = True):
        self.round_id += new_round
        return self.s.take_rollouts(rank, self.round_id, 0.0)


def tags(grant) -> list[float]:
    return [float(t) for t in grant.rollout["rewards"][0]]


def test_take_waits_for_one_rollout_per_worker() -> None:
    s = server()
    rounds = Rounds(s)
    push(s, 1, 0)
    assert rounds.take().rollout is None
    push(s, 1, 1, worker=1)
    assert tags(rounds.take()) == [0.0, 0.0, 1.0, 1.0]  # both rollouts, joined along envs
    assert rounds.take().rollout is None and s.counters.env_steps == 16


def test_rollouts_of_old_weights_are_dropped_and_counted() -> None:
    s = server()
    rounds = Rounds(s)
    push(s, 0, 0)  # made before version 1 was published
    push(s, 1, 1)
    push(s, 1, 2)  # a restarted worker pushed twice for version 1
    push(s, 1, 3)
    assert rounds.take().rollout is not None
    s.publish_weights({"w": np.ones(1)}, 2)  # the leftover version-1 rollout is stale now
    push(s, 2, 4)
    assert rounds.take().rollout is None
    push(s, 2, 5)
    assert tags(rounds.take()) == [4.0, 4.0, 5.0, 5.0]
    stats = s.stats()
    assert stats.transitions_dropped == {"stale_rollout": 16}
    assert stats.transitions_collected == 6 * 8 == stats.transitions_stored + 16 + 0


def test_no_rollouts_after_stop() -> None:
    s = server()
    push(s, 1, 0)
    push(s, 1, 1)
    s.request_stop("test")
    grant = Rounds(s).take()
    assert grant.stop and grant.rollout is None


def test_two_learners_get_equal_env_slices_of_the_same_round() -> None:
    s = server(n_workers=2, n_learners=2)
    push(s, 1, 0)
    push(s, 1, 1, worker=1)
    rounds = Rounds(s)
    first = rounds.take(rank=0)
    second = rounds.take(rank=1, new_round=False)
    assert tags(first) == [0.0, 0.0] and tags(second) == [1.0, 1.0]
    assert s.stats().transitions_stored == 16 and not s.rounds  # served to both: forgotten


def test_a_stale_version_is_never_published_over_a_newer_one() -> None:
    s = server()
    assert s.publish_weights({"w": np.ones(1)}, 3)
    assert not s.publish_weights({"w": np.zeros(1)}, 2)  # e.g. a restarted learner's old one
    assert s.stats().weights_versions == 3 and s.stats().weights_rejected == 1
    handed_out = s.wait_for_turn(0, known_version=0, need_newer_weights=True, timeout_s=0).weights
    assert handed_out is not None and handed_out.version == 3
    np.testing.assert_array_equal(handed_out.box[0]["w"], np.ones(1))
