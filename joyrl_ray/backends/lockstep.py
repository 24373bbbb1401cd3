"""``general_cfg.lockstep`` on Ray: the actors take the single backend's turns.

The same actors as :mod:`.ray_runtime` (the coordinator, the data plane, one learner, the
workers, placed as there), but no role runs a loop of its own: the driver gives them their
turns (:mod:`.turns`), and every call between actors is answered before the caller goes on
(lockstep handles; a shard forwards each report at once; a worker loads newer weights as
they reach it). So everything happens in one order, whatever the processes' timing, and a
seeded run is reproducible off-policy too, where the free-running backend's is not (which
weights a worker acts with, and which rows a shard holds when a learner samples, depend on
timing there). Nothing runs side by side, so it is slower; the online evaluation runs in
the driver between turns, as on the single backend. A role that dies stops the run, named
(there is no loop to restart it into), and so does a turn that takes ``stall_timeout_s``
(the driver waits inside it); the learner, unless it failed, makes its final checkpoint.
"""

from __future__ import annotations

import contextlib
from typing import Any

from joyrl_ray.backends.learner_group import LearnerGroup
from joyrl_ray.backends.placement import Requests, actor_options, worker_strategy
from joyrl_ray.backends.planes import PlaneSetup, RayPlanes
from joyrl_ray.backends.runtime import LearnerSetups, RoleConfigs, Spaces
from joyrl_ray.backends.turns import (
    TurnLearner,
    Turns,
    TurnTakingRuntime,
    TurnWorker,
)
from joyrl_ray.config.general import GeneralConfig
from joyrl_ray.flows.base import DataPlane
from joyrl_ray.roles.learner.client import LearnerClient
from joyrl_ray.roles.learner.config import LearnerConfig
from joyrl_ray.roles.learner.learner import LearnerResult
from joyrl_ray.roles.worker.client import WorkerClient
from joyrl_ray.roles.worker.kinds import worker_class
from joyrl_ray.roles.worker.worker import WorkerStats
from joyrl_ray.wire.handles import ObjectStore, RayHandle, RayStore, RoleError

# A role's start waits for its process to be started first: on a loaded machine Ray starts a
# few at a time. A turn (a chunk, a round of updates) that takes general_cfg.stall_timeout_s
# is stuck: the run stops, stalled.
START_TIMEOUT_S = 600.0
CLOSE_TIMEOUT_S = 5.0  # a worker stuck in its envs is killed at shutdown anyway


class RemoteWorker:
    """A worker actor, called one turn at a time."""

    def __init__(self, worker_id: int, actor: Any, turn_timeout_s: float) -> None:
        self.worker_id = worker_id
        self.client = WorkerClient(RayHandle(f"worker {worker_id}", actor=actor))
        self.turn_timeout_s = turn_timeout_s

    def start(self) -> None:
        self.client.start().result(START_TIMEOUT_S)

    def step(self, wait_s: float) -> bool:
        return self.client.step(wait_s).result(self.turn_timeout_s)

    def finish(self) -> WorkerStats:
        return self.client.finish().result(self.turn_timeout_s)

    def close(self) -> None:
        try:
            self.client.close().result(CLOSE_TIMEOUT_S)
        except RoleError:  # it died, or is stuck: shutdown kills it
            pass


class RemoteLearner:
    """A learner actor, called one turn at a time."""

    def __init__(self, actor: Any, cfg: LearnerConfig, turn_timeout_s: float) -> None:
        self.client = LearnerClient(RayHandle(cfg.role(0), actor=actor))
        self.turn_timeout_s = turn_timeout_s

    def start(self) -> None:
        self.client.start(None).result(START_TIMEOUT_S)

    def train_step(self, wait_s: float) -> str:
        return self.client.train_step(wait_s).result(self.turn_timeout_s)

    def finish(self) -> LearnerResult:
        return self.client.finish().result(self.turn_timeout_s)


class LockstepRuntime(TurnTakingRuntime):
    """Ray actors that take turns; the driver's view of them."""

    def __init__(
        self,
        general: GeneralConfig,
        roles: RoleConfigs,
        setup: PlaneSetup,
        learners: LearnerSetups,
        spaces: Spaces | None,
        requests: Requests,
    ) -> None:
        import ray

        self.ray = ray
        self.store: ObjectStore = RayStore()
        # A start that fails stops what it started (see RayRuntime): on a Ray that outlives
        # the run, its actors and placement group would hold their CPUs for later runs.
        with contextlib.ExitStack() as started:
            self.planes = RayPlanes.of(general, setup)
            started.callback(self.planes.kill)
            self.data: DataPlane = self.planes.data
            self.coordinator = self.planes.coordinator
            # The learners first, started before any worker, as on the single backend: the
            # workers' first weights are theirs.
            self.learner_groups: dict[str, LearnerGroup] = {}
            remote_learners: dict[str, TurnLearner] = {}
            for policy, learner in learners.items():
                cfg, links = roles.learners[policy], self.planes.learner_links(policy)
                group = LearnerGroup(cfg, general, links, learner, requests)
                self.learner_groups[policy] = group
                started.callback(group.shutdown)
                group.create(learner.start_state)
                remote = RemoteLearner(group.actors[0], cfg, general.stall_timeout_s)
                remote.start()
                remote_learners[policy] = remote
            options = {
                **actor_options(requests.worker),
                "max_restarts": 0,
                "scheduling_strategy": worker_strategy(general),
            }
            worker_cls = ray.remote(worker_class(roles.worker)).options(**options)
            self.worker_actors: list[Any] = []
            started.callback(self._kill_workers)
            for i in range(general.n_workers):
                senders = self.planes.worker_senders(i)
                self.worker_actors.append(worker_cls.remote(i, roles.worker, senders, RayStore()))
            limit = general.stall_timeout_s
            workers = [RemoteWorker(i, actor, limit) for i, actor in enumerate(self.worker_actors)]
            for worker in workers:
                worker.start()
            in_turn: list[TurnWorker] = list(workers)
            self.take_turns(
                general, roles, spaces, Turns(in_turn, remote_learners, self.coordinator)
            )
            started.pop_all()  # started: shutdown() stops it all from now on

    def _kill_workers(self) -> None:
        for actor in self.worker_actors:
            self.ray.kill(actor, no_restart=True)

    def shutdown(self) -> None:
        try:
            self.turns.stop()
        except RoleError:  # a role or the coordinator is gone: nothing is left to finish
            pass
        self._kill_workers()
        for group in self.learner_groups.values():
            group.shutdown()
        self.planes.kill()
        self.close_evaluator()
