"""Typed clients: how the roles call each other, on both backends.

Each client method names the role method it runs (so "go to definition" lands on it and a
type checker checks the arguments against it) and returns a ``Call[T]`` of that method's
return type. Only this module names role methods; everything else calls a client.

The data path, one hop at a time (off-policy; on-policy differs where marked):

1. ``Worker.step`` -> ``Worker._collect``: one policy forward (``Policy.act``) and one
   ``SyncVectorEnv.step`` per vector step, written into ``[time, env]`` chunk columns.
2. ``NStepFolder.fold`` turns the chunk into transitions (on-policy: the chunk is the
   rollout, pushed as it is).
3. ``DataServerClient.push_transitions`` -> ``DataServer.push_transitions``: the
   transitions go into replay (``ReplayBuffer.add``), the ``WorkerReport`` into the
   counters; the ``PushAck`` tells the worker to stop, to wait (throttled) and carries
   newer weights (on-policy: ``push_rollout``, then ``wait_for_turn`` for the next weights).
4. ``DataServerClient.sample_round`` -> ``DataServer.sample_round``: the learners' round of
   batches, as many as the update-to-data ratio allows (on-policy: ``take_rollouts``).
5. ``Learner._learn`` -> ``Policy.learn`` -> ``Policy.optimize``: the gradient step,
   averaged over learners; priorities go back with ``update_priorities``.
6. ``DataServerClient.publish_weights`` -> ``DataServer.publish_weights``: the DataServer
   puts the weights in the object store (it owns them) under a new version.
7. The next ``PushAck`` carries that version's box; ``Worker._take_weights`` fetches it
   (``ObjectStore.get``) and ``Policy.set_weights`` loads it: back to step 1.

Beside it: the learner hands checkpoints in (``submit_checkpoint``), the driver drains
reports (``drain_reports``), writes the task directory, and has checkpoints evaluated
(``EvaluatorClient.evaluate``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Concatenate, ParamSpec, TypeVar

import gymnasium as gym
import numpy as np

from joyrl_ray.batch import Batch
from joyrl_ray.data_server import DataServer, DataServerStats
from joyrl_ray.evaluator import EvalResult, OnlineEvaluator
from joyrl_ray.handles import Call, Handle
from joyrl_ray.learner import Learner, LearnerResult
from joyrl_ray.messages import (
    CheckpointReport,
    Counters,
    Frames,
    LearnerReport,
    LearnerStart,
    Placement,
    PushAck,
    Reports,
    RolloutGrant,
    SampleGrant,
    StallReport,
    WorkerReport,
    WorkerStart,
)
from joyrl_ray.worker import Worker, WorkerStats

P = ParamSpec("P")
R = TypeVar("R")


class _Client:
    def __init__(self, handle: Handle) -> None:
        self.handle = handle

    @property
    def role(self) -> str:
        return self.handle.role

    def _call(
        self, method: Callable[Concatenate[Any, P], R], *args: P.args, **kwargs: P.kwargs
    ) -> Call[R]:
        return self.handle.invoke(method.__name__, *args, **kwargs)


class DataServerClient(_Client):
    """Calls into the :class:`~joyrl_ray.data_server.DataServer`."""

    # ----- workers -----
    def register_worker(self, worker_id: int, where: Placement) -> Call[WorkerStart]:
        return self._call(DataServer.register_worker, worker_id, where)

    def push_transitions(
        self,
        worker_id: int,
        batch: Batch | None,
        report: WorkerReport,
        known_version: int,
        frames: Frames | None = None,
    ) -> Call[PushAck]:
        return self._call(
            DataServer.push_transitions, worker_id, batch, report, known_version, frames
        )

    def push_rollout(
        self,
        worker_id: int,
        version: int,
        rollout: Batch,
        report: WorkerReport,
        known_version: int,
    ) -> Call[PushAck]:
        return self._call(
            DataServer.push_rollout, worker_id, version, rollout, report, known_version
        )

    def wait_for_turn(
        self, worker_id: int, known_version: int, need_newer_weights: bool, timeout_s: float
    ) -> Call[PushAck]:
        return self._call(
            DataServer.wait_for_turn, worker_id, known_version, need_newer_weights, timeout_s
        )

    # ----- learners -----
    def learner_started(
        self, rank: int, generation: int, restored: Counters, where: Placement
    ) -> Call[LearnerStart]:
        return self._call(DataServer.learner_started, rank, generation, restored, where)

    def sample_round(
        self, rank: int, round_id: int, rows: int, max_updates: int, timeout_s: float
    ) -> Call[SampleGrant]:
        return self._call(DataServer.sample_round, rank, round_id, rows, max_updates, timeout_s)

    def take_rollouts(self, rank: int, round_id: int, timeout_s: float) -> Call[RolloutGrant]:
        return self._call(DataServer.take_rollouts, rank, round_id, timeout_s)

    def update_priorities(
        self, slots: np.ndarray, generations: np.ndarray, priorities: np.ndarray
    ) -> Call[int]:
        return self._call(DataServer.update_priorities, slots, generations, priorities)

    def publish_weights(self, weights: dict[str, np.ndarray], version: int) -> Call[bool]:
        return self._call(DataServer.publish_weights, weights, version)

    def report_learner(self, report: LearnerReport) -> Call[Counters]:
        return self._call(DataServer.report_learner, report)

    def submit_checkpoint(self, report: CheckpointReport) -> Call[None]:
        return self._call(DataServer.submit_checkpoint, report)

    # ----- driver -----
    def drain_reports(self) -> Call[Reports]:
        return self._call(DataServer.drain_reports)

    def wait_for_news(self, seen: int, timeout_s: float) -> Call[int]:
        return self._call(DataServer.wait_for_news, seen, timeout_s)

    def request_stop(self, reason: str, detail: str | None = None) -> Call[None]:
        return self._call(DataServer.request_stop, reason, detail)

    def drop_worker(self, worker_id: int) -> Call[int]:
        return self._call(DataServer.drop_worker, worker_id)

    def stall_report(self) -> Call[StallReport]:
        return self._call(DataServer.stall_report)

    def finish(self) -> Call[None]:
        return self._call(DataServer.finish)

    def buffer_state(self) -> Call[dict[str, np.ndarray] | None]:
        return self._call(DataServer.buffer_state)

    def stats(self) -> Call[DataServerStats]:
        return self._call(DataServer.stats)


class WorkerClient(_Client):
    """What the driver asks of a :class:`~joyrl_ray.worker.Worker` actor."""

    def run(self) -> Call[WorkerStats]:
        return self._call(Worker.run)


class LearnerClient(_Client):
    """What the driver asks of a :class:`~joyrl_ray.learner.Learner` actor."""

    def rendezvous(self) -> Call[tuple[str, int]]:
        return self._call(Learner.rendezvous)

    def run(self, group_address: tuple[str, int] | None) -> Call[LearnerResult]:
        return self._call(Learner.run, group_address)


class EvaluatorClient(_Client):
    """Checkpoint evaluations, beside learning."""

    def evaluate(
        self, weights: dict[str, np.ndarray], updates: int, env_steps: int
    ) -> Call[EvalResult]:
        return self._call(OnlineEvaluator.evaluate, weights, updates, env_steps)


Spaces = tuple[gym.Space, gym.Space]
