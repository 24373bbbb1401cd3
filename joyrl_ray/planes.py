"""What the runtime builds for a run: the coordinator and its data plane.

Off-policy: ``n_replay_shards`` replay shards (``DataServer``); on-policy: one rollout
queue, synchronous (``RolloutQueue``) or asynchronous (``AsyncRolloutQueue``), as the
algorithm's :data:`DataNeeds` say; test mode: no data plane at all (nothing is stored).
Both backends build the same classes from one :class:`PlaneSetup`: :class:`LocalPlanes`
as plain objects in this process, :class:`RayPlanes` as actors. Nothing here imports torch.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from joyrl_ray.control.coordinator import Coordinator, StopRule
from joyrl_ray.data.async_rollout_queue import AsyncRolloutQueue
from joyrl_ray.data.replay_shard import DataServer
from joyrl_ray.data.rollout_queue import RolloutQueue
from joyrl_ray.data_needs import (
    AsyncRolloutNeeds,
    DataNeeds,
    OnPolicyNeeds,
    ReplayNeeds,
    RolloutNeeds,
)
from joyrl_ray.handles import LocalHandle, ObjectStore, RayHandle, RayStore
from joyrl_ray.messages import Counters
from joyrl_ray.plane_clients import (
    AsyncRolloutQueueClient,
    CoordinatorClient,
    DataPlaneClient,
    DataServerClient,
    LearnerLinks,
    RolloutQueueClient,
    WorkerLink,
)

SHARD_KEY = "shard{}/"  # a saved replay's keys, per shard: shard0/obs, shard1/obs, ...


@dataclass
class PlaneSetup:
    """Everything the coordinator and the data plane start from."""

    stop_rule: StopRule
    needs: DataNeeds | None  # None in test mode
    n_workers: int
    n_learners: int = 1
    n_shards: int = 1
    learner_lag_tolerance: int = 64
    counters: Counters | None = None
    seed: int | None = None
    buffer_states: list[dict[str, np.ndarray] | None] = field(default_factory=list)

    @property
    def replay(self) -> ReplayNeeds | None:
        return self.needs if isinstance(self.needs, ReplayNeeds) else None

    @property
    def rollouts(self) -> OnPolicyNeeds | None:
        needs = self.needs
        return needs if isinstance(needs, RolloutNeeds | AsyncRolloutNeeds) else None

    def queue_role(self) -> tuple[type[RolloutQueue], type[RolloutQueueClient], str]:
        """The rollout queue's class, its client and its role name."""
        if isinstance(self.needs, AsyncRolloutNeeds):
            return AsyncRolloutQueue, AsyncRolloutQueueClient, "AsyncRolloutQueue"
        return RolloutQueue, RolloutQueueClient, "RolloutQueue"

    def coordinator_kwargs(self) -> dict[str, Any]:
        return {
            "stop_rule": self.stop_rule,
            "n_workers": self.n_workers,
            "learning": self.needs is not None,
            "counters": self.counters,
        }

    def shard_kwargs(self, shard: int) -> dict[str, Any]:
        assert self.replay is not None
        state = self.buffer_states[shard] if shard < len(self.buffer_states) else None
        return {
            "needs": self.replay,
            "shard": shard,
            "n_shards": self.n_shards,
            "n_learners": self.n_learners,
            "learner_lag_tolerance": self.learner_lag_tolerance,
            "seed": self.seed,
            "buffer_state": state,
        }

    def queue_kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"n_workers": self.n_workers, "n_learners": self.n_learners}
        if isinstance(self.needs, AsyncRolloutNeeds):
            kwargs.update(
                batch_rollouts=self.needs.batch_rollouts,
                max_policy_lag=self.needs.max_policy_lag,
                capacity=self.needs.queue_capacity,
            )
        return kwargs


def shard_of(worker_id: int, n_shards: int) -> int:
    return worker_id % n_shards


def join_shard_states(states: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Every shard's replay in one mapping (``save_buffer``), keys prefixed by shard."""
    return {SHARD_KEY.format(i) + k: v for i, state in enumerate(states) for k, v in state.items()}


def split_shard_states(saved: dict[str, np.ndarray]) -> list[dict[str, np.ndarray]]:
    """A saved replay back into per-shard states; an unprefixed file is one shard's."""
    if not any(k.startswith("shard") and "/" in k for k in saved):
        return [dict(saved)]
    shards: dict[int, dict[str, np.ndarray]] = {}
    for key, value in saved.items():
        head, _, name = key.partition("/")
        shards.setdefault(int(head.removeprefix("shard")), {})[name] = value
    return [shards[i] for i in sorted(shards)]


class LocalPlanes:
    """The coordinator and the data plane as plain objects in this process, with clients."""

    def __init__(self, setup: PlaneSetup, store: ObjectStore) -> None:
        self.data_plane: list[DataPlaneClient] = []
        n_shards = setup.n_shards if setup.replay is not None else 0
        # In one process a shard forwards each report at once (the run stays reproducible).
        self.shard_objects = [
            DataServer(**setup.shard_kwargs(i), forward_every_s=0.0) for i in range(n_shards)
        ]
        self.shards = [DataServerClient(LocalHandle(s, "DataServer")) for s in self.shard_objects]
        self.data_plane.extend(self.shards)
        self.queue_object: RolloutQueue | None = None
        self.queue: RolloutQueueClient | None = None
        if setup.rollouts is not None:
            queue_cls, client_cls, role = setup.queue_role()
            self.queue_object = queue_cls(**setup.queue_kwargs())
            self.queue = client_cls(LocalHandle(self.queue_object, role))
            self.data_plane.append(self.queue)
        self.server = Coordinator(
            **setup.coordinator_kwargs(), store=store, data_plane=self.data_plane
        )
        self.coordinator = CoordinatorClient(LocalHandle(self.server, "Coordinator"))
        for shard in self.shard_objects:
            shard.reports.coordinator = self.coordinator

    def link(self, worker_id: int) -> WorkerLink:
        return _worker_link(self.coordinator, self.shards, self.queue, worker_id)


class RayPlanes:
    """The coordinator and the data plane as Ray actors (threaded: callers that wait, such
    as throttled workers, learners ahead of the data or the driver's news, block inside
    their call without blocking the others), with clients.

    A replay shard that dies is restarted by Ray (``max_restarts=-1``), empty or from the
    replay the run resumed with: its workers go on.
    """

    def __init__(
        self,
        setup: PlaneSetup,
        *,
        max_pushes_in_flight: int = 2,
        options: dict[str, Any] | None = None,
        shard_cls: type = DataServer,
    ) -> None:
        import ray

        run_id = uuid.uuid4().hex[:12]
        coordinator_name = f"joyrl-coordinator-{run_id}"
        # Shards forward their workers' reports to the coordinator, found by its name (a
        # restarted shard finds it again; the coordinator is created last).
        named_coordinator = CoordinatorClient(RayHandle("Coordinator", name=coordinator_name))
        options = options or {}
        per_worker = max_pushes_in_flight + 2
        others = 4 * setup.n_learners + 8
        self.actors: list[Any] = []
        self.data_plane: list[DataPlaneClient] = []
        self.shards: list[DataServerClient] = []
        self.queue: RolloutQueueClient | None = None
        if setup.replay is not None:
            for i in range(setup.n_shards):
                name = f"joyrl-replay-shard-{i}-{run_id}"
                workers_here = len(range(i, setup.n_workers, setup.n_shards))
                actor = (
                    ray.remote(shard_cls)
                    .options(
                        num_cpus=0,
                        max_concurrency=workers_here * per_worker + others,
                        name=name,
                        max_restarts=-1,
                        **options,
                    )
                    .remote(**setup.shard_kwargs(i), coordinator=named_coordinator)
                )
                self.actors.append(actor)
                handle = RayHandle("DataServer", name=name, actor=actor)
                self.shards.append(DataServerClient(handle))
            self.data_plane.extend(self.shards)
        elif setup.rollouts is not None:
            name = f"joyrl-rollout-queue-{run_id}"
            queue_cls, client_cls, role = setup.queue_role()
            actor = (
                ray.remote(queue_cls)
                .options(
                    num_cpus=0,
                    max_concurrency=setup.n_workers * per_worker + others,
                    name=name,
                    **options,
                )
                .remote(**setup.queue_kwargs())
            )
            self.actors.append(actor)
            self.queue = client_cls(RayHandle(role, name=name, actor=actor))
            self.data_plane.append(self.queue)
        name = coordinator_name
        self.coordinator_actor = (
            ray.remote(Coordinator)
            .options(
                num_cpus=0,
                max_concurrency=setup.n_workers * per_worker + others,
                name=name,
                **options,
            )
            .remote(**setup.coordinator_kwargs(), store=RayStore(), data_plane=self.data_plane)
        )
        self.coordinator = CoordinatorClient(
            RayHandle("Coordinator", name=name, actor=self.coordinator_actor)
        )

    def link(self, worker_id: int) -> WorkerLink:
        return _worker_link(self.coordinator, self.shards, self.queue, worker_id)

    def learner_links(self) -> LearnerLinks:
        return LearnerLinks(self.coordinator, self.shards, self.queue, RayStore())

    def kill(self) -> None:
        import ray

        for actor in [self.coordinator_actor, *self.actors]:
            ray.kill(actor, no_restart=True)


def _worker_link(
    coordinator: CoordinatorClient,
    shards: list[DataServerClient],
    queue: RolloutQueueClient | None,
    worker_id: int,
) -> WorkerLink:
    if shards:
        shard = shard_of(worker_id, len(shards))
        return WorkerLink(coordinator, shards[shard], shard)
    return WorkerLink(coordinator, queue)
