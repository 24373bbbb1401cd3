"""The DataServer rollout queue: one rollout per worker per weights version, stale ones dropped."""

from __future__ import annotations

import numpy as np

from joyrl_ray.data_server import DataServer, StopRule


def rollout(tag: float) -> dict[str, np.ndarray]:
    return {"rewards": np.full((4, 2), tag, dtype=np.float32)}


def server() -> DataServer:
    s = DataServer(stop_rule=StopRule(), replay=None, n_workers=2)
    s.publish_weights(["w1"], 1)
    return s


def test_take_waits_for_one_rollout_per_worker() -> None:
    s = server()
    s.push_rollout(1, rollout(0), 8)
    assert s.take_rollouts(2) == []
    s.push_rollout(1, rollout(1), 8)
    taken = s.take_rollouts(2)
    assert [float(r["rewards"][0, 0]) for r in taken] == [0.0, 1.0]
    assert s.take_rollouts(2) == [] and s.env_steps == 16


def test_rollouts_of_old_weights_are_dropped_and_counted() -> None:
    s = server()
    s.push_rollout(0, rollout(0), 8)  # made before version 1 was published
    s.push_rollout(1, rollout(1), 8)
    s.push_rollout(1, rollout(2), 8)  # a restarted worker pushed twice for version 1
    s.push_rollout(1, rollout(3), 8)
    assert len(s.take_rollouts(2)) == 2
    s.publish_weights(["w2"], 2)  # the leftover version-1 rollout is stale now
    s.push_rollout(2, rollout(4), 8)
    assert s.take_rollouts(2) == []
    s.push_rollout(2, rollout(5), 8)
    assert [float(r["rewards"][0, 0]) for r in s.take_rollouts(2)] == [4.0, 5.0]
    assert s.stats()["transitions_dropped"] == {"stale_rollout": 16}


def test_no_rollouts_after_stop() -> None:
    s = server()
    s.push_rollout(1, rollout(0), 8)
    s.push_rollout(1, rollout(1), 8)
    s.request_stop("test")
    assert s.take_rollouts(2) == []
