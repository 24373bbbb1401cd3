"""Typed clients: how the roles call each other, on both backends.

Each client method names the role method it runs (so "go to definition" lands on it and a
type checker checks the arguments against it) and returns a ``Call[T]`` of that method's
return type. Only this module names role methods; everything else calls a client.

The data path, one hop at a time (off-policy; on-policy differs where marked):

1. ``Worker.step`` -> ``Worker._collect``: one policy forward (``Policy.act``) and one
   vector env step per step, written into ``[time, env]`` chunk columns.
2. ``NStepFolder.fold`` turns the chunk into transitions (on-policy: the chunk is the
   rollout, pushed as it is).
3. ``WorkerLink.push_transitions``: the rows and the ``WorkerReport`` go to the worker's
   replay shard in one call (``DataServer.insert``); the shard forwards its workers'
   reports to ``Coordinator.take_reports`` a few times a second, and its ack (a
   ``PushAck`` to the worker) tells the worker to stop, to wait (the shard is throttled)
   and carries newer weights, as the coordinator last answered the shard (on-policy:
   ``RolloutQueue.push_rollout``, ``Coordinator.report_worker``, then
   ``Coordinator.wait_for_weights`` for the next version).
4. ``ShardSampler`` -> ``DataServer.sample_round`` on each shard in turn, a few requests
   in flight: the learners' round of batches, as many as that shard's ratio allows
   (on-policy: ``RolloutQueue.take_rollouts``).
5. ``Learner._learn`` -> ``Algorithm.learn`` -> ``Algorithm.optimize``: the gradient step,
   averaged over learners; priorities go back to the shard the batch came from.
6. ``CoordinatorClient.publish_weights``: the coordinator puts the weights in the object
   store (it owns them) under a new version.
7. The shard's next forward brings that version's box, and its next ack to each worker
   carries it; ``ActingWeights.take`` fetches it (``ObjectStore.get``) and
   ``Policy.set_weights`` loads it: back to step 1.

Beside it: the learner puts each checkpoint in the object store and hands the coordinator
its reference (``submit_checkpoint``); the driver drains reports (``drain_reports``),
fetches and writes checkpoints, and has them evaluated (``EvaluatorClient.evaluate``).
"""

from __future__ import annotations

import numpy as np

from joyrl_ray.evaluator import EvalResult, OnlineEvaluator
from joyrl_ray.handles import Call
from joyrl_ray.learner import Learner, LearnerResult
from joyrl_ray.plane_clients import RoleClient
from joyrl_ray.worker import Worker, WorkerStats


class WorkerClient(RoleClient):
    """What the driver asks of a :class:`~joyrl_ray.worker.Worker` actor."""

    def run(self) -> Call[WorkerStats]:
        return self._call(Worker.run)


class LearnerClient(RoleClient):
    """What the driver asks of a :class:`~joyrl_ray.learner.Learner` actor."""

    def rendezvous(self) -> Call[tuple[str, int]]:
        return self._call(Learner.rendezvous)

    def run(self, group_address: tuple[str, int] | None) -> Call[LearnerResult]:
        return self._call(Learner.run, group_address)


class EvaluatorClient(RoleClient):
    """Checkpoint evaluations, beside learning."""

    def evaluate(
        self, weights: dict[str, np.ndarray], updates: int, env_steps: int
    ) -> Call[EvalResult]:
        return self._call(OnlineEvaluator.evaluate, weights, updates, env_steps)

