"""Weights versions are fenced: a publish not newer than the newest is refused and counted.

A learner group restarted from a checkpoint counts its versions again from the
checkpoint's; a publish of the old group still in flight, or of the new one before it has
caught up, must not replace newer weights that workers may already act with.
"""

from __future__ import annotations

import numpy as np

from joyrl_ray.control.coordinator import Coordinator, StopRule
from joyrl_ray.wire.handles import LocalStore
from joyrl_ray.wire.messages import Placement

WORKER = Placement(role="worker 0", node_id="node", ip="127.0.0.1", pid=1)


def weights(value: float) -> dict[str, np.ndarray]:
    return {"w": np.full(3, value, dtype=np.float32)}


def test_a_publish_not_newer_than_the_newest_is_refused_and_counted() -> None:
    server = Coordinator(stop_rule=StopRule(), n_workers=1, learning=True, store=LocalStore())
    assert server.publish_weights(weights(1.0), version=1)
    assert server.publish_weights(weights(3.0), version=3)
    assert not server.publish_weights(weights(2.0), version=2)  # older: refused
    assert not server.publish_weights(weights(-3.0), version=3)  # the same version: refused

    stats = server.stats()
    assert stats.weights_versions == 3 and stats.weights_rejected == 2
    # What a worker starting now receives is the newest accepted version, untouched.
    start = server.register_worker(0, WORKER)
    assert start.weights is not None and start.weights.version == 3
    np.testing.assert_array_equal(LocalStore().get(start.weights.box)["w"], weights(3.0)["w"])

    assert server.publish_weights(weights(4.0), version=4)  # a newer one goes through
    assert server.stats().weights_versions == 4
