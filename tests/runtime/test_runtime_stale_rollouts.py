"""On-policy: a rollout made with an old weights version is dropped and counted."""

from __future__ import annotations

import numpy as np

from joyrl_ray.data_server import DataServer, StopRule
from joyrl_ray.handles import RayHandle

STEPS = 16


def _rollout(fill: float) -> dict[str, np.ndarray]:
    return {
        "obs": np.full((STEPS // 2, 2, 4), fill, dtype=np.float32),  # [time, env, ...]
        "actions": np.zeros((STEPS // 2, 2), dtype=np.int64),
        "rewards": np.ones((STEPS // 2, 2), dtype=np.float32),
    }


def test_stale_rollouts_are_dropped_and_counted(ray_session):
    ray = ray_session
    actor = (
        ray.remote(DataServer)
        .options(num_cpus=0, name="stale-rollouts-server")
        .remote(stop_rule=StopRule(max_env_steps=-1), replay=None, n_workers=1)
    )
    server = RayHandle("stale-rollouts-server", actor)
    try:
        server.call("publish_weights", server.share({"w": np.zeros(3)}), 2).result()

        ack = server.call("push_rollout", 1, _rollout(1.0), STEPS).result()
        assert ack["weights_version"] == 2 and not ack["stop"]
        stats = server.call("stats").result()
        assert stats["transitions_dropped"] == {"stale_rollout": STEPS}
        assert stats["transitions_stored"] == 0
        assert server.call("take_rollouts", 1).result() == []

        server.call("push_rollout", 2, _rollout(2.0), STEPS).result()
        (taken,) = server.call("take_rollouts", 1).result()
        np.testing.assert_array_equal(taken["obs"], _rollout(2.0)["obs"])
        stats = server.call("stats").result()
        assert stats["transitions_stored"] == STEPS
        assert stats["transitions_dropped"] == {"stale_rollout": STEPS}

        # Queued with the current version, but the learner published again before taking it.
        server.call("push_rollout", 2, _rollout(3.0), STEPS).result()
        server.call("publish_weights", server.share({"w": np.ones(3)}), 3).result()
        assert server.call("take_rollouts", 1).result() == []
        stats = server.call("stats").result()
        assert stats["transitions_dropped"] == {"stale_rollout": 2 * STEPS}
        # Every step still counts as collected.
        assert server.call("counters").result()["env_steps"] == 3 * STEPS
    finally:
        ray.kill(actor)
