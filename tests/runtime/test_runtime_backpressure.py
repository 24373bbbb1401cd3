"""A slow replay shard slows the worker down instead of piling pushes up in memory."""

from __future__ import annotations

import sys
import time
from collections import deque

import ray.cloudpickle

from algos import get_algorithm
from joyrl_ray.control.client import CoordinatorClient
from joyrl_ray.control.coordinator import Coordinator, StopRule
from joyrl_ray.data.clients import DataServerClient
from joyrl_ray.data.replay_shard import DataServer
from joyrl_ray.flows.replay import ReplaySender
from joyrl_ray.roles.worker.config import WorkerConfig
from joyrl_ray.roles.worker.worker import Worker
from joyrl_ray.wire.handles import RayHandle, RayStore
from tests.support.runs import make_cfg

ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])

DELAY_S = 0.15
MAX_IN_FLIGHT = 3
CHUNK = 8
N_ENVS = 2
CHUNKS = 20


class SlowDataServer(DataServer):
    """A replay shard that takes DELAY_S for every insert (a loaded node, a big batch)."""

    def __init__(self, *args, delay_s: float, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.delay_s = delay_s
        self.pushes = 0

    def insert(self, worker_id, batch, *args):
        time.sleep(self.delay_s)
        self.pushes += 1
        return super().insert(worker_id, batch, *args)

    def push_count(self) -> int:
        return self.pushes


class PeakDeque(deque):
    """The worker's queue of unacknowledged pushes, remembering its longest length."""

    peak = 0

    def append(self, item) -> None:
        super().append(item)
        self.peak = max(self.peak, len(self))


def test_slow_data_server_bounds_pushes_in_flight(ray_session, tmp_path):
    ray = ray_session
    cfg = make_cfg(
        tmp_path,
        "general_cfg.mp_backend=ray",
        f"general_cfg.max_pushes_in_flight={MAX_IN_FLIGHT}",
        f"general_cfg.worker_chunk_steps={CHUNK}",
        f"general_cfg.n_envs_per_worker={N_ENVS}",
        "general_cfg.seed=5",
    )
    needs = get_algorithm("DQN").policy_cls.data_needs(cfg.algo)
    server = (
        ray.remote(SlowDataServer)
        .options(num_cpus=0, max_concurrency=1, name="backpressure-server")
        .remote(
            needs=needs,
            learner_lag_tolerance=-1,  # collection only: no learner to wait for
            delay_s=DELAY_S,
            coordinator=CoordinatorClient(
                RayHandle("Coordinator", name="backpressure-coordinator")
            ),
        )
    )
    coordinator_actor = (
        ray.remote(Coordinator)
        .options(num_cpus=0, max_concurrency=4, name="backpressure-coordinator")
        .remote(stop_rule=StopRule(), n_workers=1, learning=True, store=RayStore())
    )
    try:
        shard = DataServerClient(RayHandle("DataServer", name="backpressure-server", actor=server))
        client = CoordinatorClient(
            RayHandle("Coordinator", name="backpressure-coordinator", actor=coordinator_actor)
        )
        worker = Worker(0, WorkerConfig.of(cfg), ReplaySender(client, shard), RayStore())
        # As a learner does at its start: version 1 is published; the worker takes it from
        # an ack and fetches it once.
        client.publish_weights(worker.policy.get_weights(), 1).result(30)
        worker.start()
        worker.channel.in_flight = PeakDeque()
        t0 = time.monotonic()
        for _ in range(CHUNKS):
            assert worker.step(1.0)
            assert len(worker.channel.in_flight) < MAX_IN_FLIGHT  # at most max - 1 between chunks
        elapsed = time.monotonic() - t0
        worker.channel.wait_for_acks(0)

        assert worker.channel.in_flight.peak == MAX_IN_FLIGHT  # the bound was reached, never passed
        # Stepping 8 x 2 CartPole envs takes ~1 ms: without backpressure the 20 chunks would
        # be sent in well under a second; with it the worker waits for its shard.
        assert elapsed >= (CHUNKS - MAX_IN_FLIGHT) * DELAY_S
        assert shard.flush_reports(30).result(30)  # the reports it still holds
        reports = client.drain_reports().result(30)
        waited = reports.worker_times.push_wait_s + worker.times.push_wait_s
        assert waited > elapsed / 2  # waiting for acks, not stepping
        assert worker.weights.version == 1
        # Nothing was lost on the way: every push arrived and was stored.
        assert ray.get(server.push_count.remote()) == CHUNKS
        stats = shard.stats().result(30)
        steps = CHUNKS * CHUNK * N_ENVS
        assert worker.stats().env_steps == steps == client.stats().result(30).transitions_collected
        assert stats.transitions_stored == steps and stats.transitions_dropped == {}
        worker.close()
    finally:
        ray.kill(server)
        ray.kill(coordinator_actor)
