"""Weights reach the workers: the learner publishes versions, a worker acting afterwards
uses exactly the learner's weights, and its actions change when the weights do.

Worker, Learner, coordinator and replay shard are real Ray actors in the session's Ray,
driven step by step from the test through their own methods.
"""

from __future__ import annotations

import sys
import time

import numpy as np
import ray.cloudpickle

from algos import get_algorithm
from envs.probe import probe_env
from joyrl_ray.backends.planes import PlaneSetup, RayPlanes
from joyrl_ray.control.coordinator import StopRule
from joyrl_ray.data.report_forwarder import FORWARD_EVERY_S
from joyrl_ray.roles.learner.config import LearnerConfig
from joyrl_ray.roles.learner.learner import LEARNED, Learner
from joyrl_ray.roles.worker.config import WorkerConfig
from joyrl_ray.roles.worker.worker import Worker
from joyrl_ray.wire.handles import RayStore
from tests.support.runs import make_cfg

# The probe subclasses below travel to the actors by value, not by module name.
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])

PUBLISH_EVERY = 5


class ProbeWorker(Worker):
    def probe(self, obs: np.ndarray) -> tuple[int, np.ndarray, np.ndarray]:
        q = self.policy.q_values(obs)
        return self.weights.version, q, q.argmax(axis=-1)


class ProbeLearner(Learner):
    def probe(self, obs: np.ndarray) -> tuple[int, np.ndarray]:
        self.pending.drain(30)  # its publishes have reached the coordinator
        return self.weights_version, self.algorithm.policy.q_values(obs)


def _probe_obs() -> np.ndarray:
    rng = np.random.default_rng(0)
    scale = np.array([2.0, 2.0, 0.2, 2.0], dtype=np.float32)
    return (rng.uniform(-1, 1, size=(512, 4)) * scale).astype(np.float32)


def test_new_weights_reach_the_worker_and_change_its_actions(ray_session, tmp_path):
    ray = ray_session
    cfg = make_cfg(
        tmp_path,
        "general_cfg.mp_backend=ray",
        "general_cfg.worker_chunk_steps=32",
        f"general_cfg.weights_publish_every={PUBLISH_EVERY}",
        "general_cfg.online_eval=false",
        "general_cfg.model_save_fre=100000",
        "general_cfg.seed=3",
        "algo_cfg.learn_start=64",
        "algo_cfg.lr=0.003",
        "algo_cfg.updates_per_step=1.0",
    )
    planes = RayPlanes(
        PlaneSetup(
            stop_rule=StopRule(),
            needs=get_algorithm("DQN").policy_cls.data_needs(cfg.algo),
            n_workers=1,
            learner_lag_tolerance=-1,
        )
    )
    learner = (
        ray.remote(ProbeLearner)
        .options(num_cpus=0)
        .remote(LearnerConfig.of(cfg), planes.learner_links(), probe_env(cfg.env))
    )
    worker = (
        ray.remote(ProbeWorker)
        .options(num_cpus=0)
        .remote(0, WorkerConfig.of(cfg), planes.sender(0), RayStore())
    )
    obs = _probe_obs()
    try:
        ray.get(learner.start.remote(None))
        assert ray.get(learner.stats.remote()).weights_version == 1  # published at start
        # The publish is a call the learner does not wait for: the probe waits for it, so
        # the coordinator holds version 1 when the worker registers (under load the worker
        # registered first, and acted with its own initial weights).
        lv1, lq1 = ray.get(learner.probe.remote(obs))
        ray.get(worker.start.remote())
        ray.get(worker.step.remote(1.0))
        v1, q1, a1 = ray.get(worker.probe.remote(obs))
        assert v1 == lv1 == 1
        np.testing.assert_array_equal(q1, lq1)  # the worker acts with the learner's weights

        versions = [v1]
        for _ in range(12):  # collect and learn in turns, as the actors' loops would
            ray.get(worker.step.remote(1.0))
            while ray.get(learner.train_step.remote(0.0)) == LEARNED:
                pass
            versions.append(ray.get(worker.probe.remote(obs))[0])
        stats = ray.get(learner.stats.remote())
        assert stats.updates >= 200
        assert stats.weights_version == 1 + stats.updates // PUBLISH_EVERY
        # The worker picks up new versions as they are published (it learns of them from
        # the acks of its pushes, which pass on what its shard last heard from the
        # coordinator), never goes back, and saw several of them.
        assert versions == sorted(versions) and versions[-1] > 1, versions
        assert len(set(versions)) >= 4, versions

        ray.get(learner.publish_weights.remote())  # publish the very latest weights
        lv2, lq2 = ray.get(learner.probe.remote(obs))
        assert lv2 == 2 + stats.updates // PUBLISH_EVERY
        # The worker's shard hears of a new version in the coordinator's answer to its next
        # forward of reports (at most FORWARD_EVERY_S after the last one), and the worker in
        # the ack of a push after that: it acts with it within max_pushes_in_flight + 2
        # chunks when a forward interval passes between them.
        for _ in range(cfg.general.max_pushes_in_flight + 2):
            ray.get(worker.step.remote(1.0))
            v2, q2, a2 = ray.get(worker.probe.remote(obs))
            if v2 == lv2:
                break
            time.sleep(FORWARD_EVERY_S)
        assert v2 == lv2
        np.testing.assert_array_equal(q2, lq2)
        assert not np.allclose(q1, q2)
        assert (a1 != a2).any(), "greedy actions unchanged after ~200 updates"
    finally:
        for actor in (worker, learner):
            ray.kill(actor)
        planes.kill()
