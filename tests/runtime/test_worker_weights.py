"""A worker held back by the update-to-data ratio acts, once let go, with the newest weights.

A real Worker steps real CartPole envs and pushes into a real replay shard, in this process.
No learner takes updates, so the ratio soon holds the worker back. Then, as a learner
would, the test publishes new weights and takes every update the ratio allows: the wait
is over, and the chunk the worker collects next must be acted with the weights published
while it waited, not with those it had before (which would leave every held-back worker a
whole wait behind the learner).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from algos import get_algorithm
from joyrl_ray.backends.planes import LocalPlanes, PlaneSetup
from joyrl_ray.control.coordinator import StopRule
from joyrl_ray.roles.worker.config import WorkerConfig
from joyrl_ray.roles.worker.worker import Worker
from joyrl_ray.wire.handles import LocalStore
from tests.support.runs import make_cfg

CHUNK, LEARN_START, MAX_ENV_STEPS = 64, 64, 100_000


def test_a_held_back_worker_acts_with_the_weights_published_while_it_waited(
    tmp_path: Path,
) -> None:
    cfg = make_cfg(
        tmp_path,
        "env_cfg.id=CartPole-v1",
        "general_cfg.mp_backend=single",
        "general_cfg.seed=1",  # unseeded, the chunk let go now and then ended no episode
        "general_cfg.n_envs_per_worker=1",
        f"general_cfg.worker_chunk_steps={CHUNK}",
        f"general_cfg.max_env_steps={MAX_ENV_STEPS}",
        f"algo_cfg.learn_start={LEARN_START}",
        "algo_cfg.batch_size=32",
        "algo_cfg.updates_per_step=1",
    )
    setup = PlaneSetup(
        stop_rule=StopRule(max_env_steps=MAX_ENV_STEPS),
        needs=get_algorithm("DQN").policy_cls.data_needs(cfg.algo),
        n_workers=1,
        learner_lag_tolerance=0,
    )
    store = LocalStore()
    planes = LocalPlanes(setup, store)
    server, shard = planes.coordinator_object, planes.objects[0]
    worker = Worker(0, WorkerConfig.of(cfg), planes.sender(0), store)
    worker.start()
    for _ in range(20):  # no learner: past learn_start the ratio holds the worker back
        worker.step(0.0)
        if worker.throttled:
            break
    assert worker.throttled, "the ratio never held the worker back"
    held_at = server.drain_reports().counters.env_steps
    worker.step(0.0)  # still held back: collects nothing
    assert server.drain_reports().counters.env_steps == held_at

    published = {name: array + 0.25 for name, array in worker.policy.get_weights().items()}
    assert server.publish_weights(published, version=1)
    grant = shard.sample_round(rank=0, round_id=1, rows=32, max_updates=MAX_ENV_STEPS, timeout_s=0)
    assert grant.batches, "the learner took no updates: the worker would stay held back"

    worker.step(0.0)  # let go: collects and pushes one chunk

    episodes = server.drain_reports().episodes
    assert episodes, f"no CartPole episode ended within a chunk of {CHUNK} steps"
    assert [ep.weights_version for ep in episodes] == [1] * len(episodes)
    for name, array in worker.policy.get_weights().items():
        np.testing.assert_array_equal(array, published[name], err_msg=name)
    worker.finish()
