"""On-policy, through a real DataServer actor: a rollout made with an old weights version
is dropped and counted, and weights published by the DataServer travel by reference."""

from __future__ import annotations

import numpy as np

from joyrl_ray.clients import DataServerClient
from joyrl_ray.data_needs import RolloutNeeds
from joyrl_ray.data_server import DataServer, StopRule
from joyrl_ray.handles import RayHandle, RayStore
from joyrl_ray.messages import WorkerReport

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
        .options(num_cpus=0, max_concurrency=4, name="stale-rollouts-server")
        .remote(
            stop_rule=StopRule(max_env_steps=-1),
            needs=RolloutNeeds(rollout_len=STEPS // 2),
            n_workers=1,
            store=RayStore(),
        )
    )
    server = DataServerClient(RayHandle("DataServer", name="stale-rollouts-server", actor=actor))

    def push(version: int, fill: float):
        report = WorkerReport(0, STEPS)
        return server.push_rollout(0, version, _rollout(fill), report, 0).result(30)

    try:
        assert server.publish_weights({"w": np.zeros(3)}, 2).result(30)

        ack = push(1, 1.0)
        assert ack.weights is not None and ack.weights.version == 2 and not ack.stop
        np.testing.assert_array_equal(RayStore().get(ack.weights.box)["w"], np.zeros(3))
        stats = server.stats().result(30)
        assert stats.transitions_dropped == {"stale_rollout": STEPS}
        assert stats.transitions_stored == 0
        assert server.take_rollouts(0, 1, 0.0).result(30).rollout is None

        push(2, 2.0)
        taken = server.take_rollouts(0, 2, 0.0).result(30).rollout
        np.testing.assert_array_equal(taken["obs"], _rollout(2.0)["obs"])
        stats = server.stats().result(30)
        assert stats.transitions_stored == STEPS
        assert stats.transitions_dropped == {"stale_rollout": STEPS}

        # Queued with the current version, but the learner published again before taking it.
        push(2, 3.0)
        server.publish_weights({"w": np.ones(3)}, 3).result(30)
        assert server.take_rollouts(0, 3, 0.0).result(30).rollout is None
        stats = server.stats().result(30)
        assert stats.transitions_dropped == {"stale_rollout": 2 * STEPS}
        # Every step still counts as collected.
        assert stats.transitions_collected == 3 * STEPS
        assert stats.transitions_collected == stats.transitions_stored + 2 * STEPS
    finally:
        ray.kill(actor)
