"""What a backend builds for a run: the coordinator and a data plane per policy.

Each policy's flow (:func:`~joyrl_ray.flows.registry.flow_for` of its algorithm's needs) says
which data-plane actors it has; a backend says how an actor starts: :class:`LocalPlanes` as
plain objects in this process, :class:`RayPlanes` as threaded Ray actors (callers that
wait, such as throttled workers, learners ahead of the data or the driver's news, block
inside their call without blocking the others). A single-agent run has one policy and one
data plane, as it always had; a multi-agent run's are joined into one for the driver
(:class:`~joyrl_ray.flows.joined.JoinedPlanes`). Nothing here imports torch.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import numpy as np

from joyrl_ray.backends.placement import data_server_options
from joyrl_ray.config.general import GeneralConfig
from joyrl_ray.control.client import CoordinatorClient
from joyrl_ray.control.coordinator import Coordinator, StopRule
from joyrl_ray.data.dataset_rows import DatasetSource
from joyrl_ray.data.report_forwarder import ReportSink
from joyrl_ray.data_needs import DataNeeds
from joyrl_ray.flows.base import DataFlow, DataPlane, DataSetup
from joyrl_ray.flows.joined import JoinedPlanes, PolicyFactory
from joyrl_ray.flows.registry import flow_for
from joyrl_ray.league.league import LeagueSettings
from joyrl_ray.normalization import NormSettings
from joyrl_ray.policies import DEFAULT_POLICY
from joyrl_ray.roles.learner.source import LearnerLinks
from joyrl_ray.roles.worker.sender import WorkerSender
from joyrl_ray.wire.handles import Handle, LocalHandle, ObjectStore, RayHandle, RayStore
from joyrl_ray.wire.messages import Counters


@dataclass
class PlaneSetup:
    """Everything the coordinator and the data plane start from."""

    stop_rule: StopRule
    needs: DataNeeds | None  # None in test mode: nothing is stored
    n_workers: int
    n_learners: int = 1
    n_shards: int = 1
    learner_lag_tolerance: int = 64
    counters: Counters | None = None
    seed: int | None = None
    saved_replay: dict[str, np.ndarray] | None = None  # a resumed run's kept replay
    dataset: DatasetSource | None = None  # a run with no workers: where its shards read data
    normalization: NormSettings | None = None
    start_normalization: dict[str, Any] | None = None  # a checkpoint's statistics
    # A multi-agent run's: each policy's needs, in the order of its policies (None: the one
    # policy of a single-agent run, with ``needs``).
    policies: dict[str, DataNeeds | None] | None = None
    start_updates: dict[str, int] | None = None  # a resumed multi-agent run's, per policy
    league: LeagueSettings | None = None
    start_league: dict[str, Any] | None = None  # a resumed league: its state and snapshots

    def flow(self) -> DataFlow:
        return flow_for(self.needs)

    def flows(self) -> dict[str, DataFlow]:
        """Each policy's flow (a single-agent run: its one, as ``DEFAULT_POLICY``)."""
        if self.policies is None:
            return {DEFAULT_POLICY: self.flow()}
        return {policy: flow_for(needs) for policy, needs in self.policies.items()}

    def data_setup(self) -> DataSetup:
        return DataSetup(
            n_workers=self.n_workers,
            n_learners=self.n_learners,
            n_shards=self.n_shards,
            learner_lag_tolerance=self.learner_lag_tolerance,
            seed=self.seed,
            saved_replay=self.saved_replay,
            dataset=self.dataset,
        )

    def coordinator_kwargs(self, flows: dict[str, DataFlow]) -> dict[str, Any]:
        return {
            "stop_rule": self.stop_rule,
            "n_workers": self.n_workers,
            "learning": any(flow.learning for flow in flows.values()),
            "counters": self.counters,
            "normalization": self.normalization,
            "start_normalization": self.start_normalization,
            "policies": list(flows),
            "start_updates": self.start_updates,
            "league": self.league,
            "start_league": self.start_league,
        }


class PolicyPlanes:
    """The data planes of a run's policies, and what the roles get of them (either backend)."""

    coordinator: CoordinatorClient
    planes: dict[str, DataPlane]
    data: DataPlane

    def _build(
        self, flows: dict[str, DataFlow], factory: Any, setup: PlaneSetup, sink: CoordinatorClient
    ) -> None:
        """Each policy's data plane through ``factory``, its reports to ``sink`` (named by the
        policy, as every call of its actors is); ``data``: the one, or all of them joined."""
        data_setup = setup.data_setup()
        single = setup.policies is None
        self.planes = {}
        for policy, flow in flows.items():
            by_policy = (
                factory if single else PolicyFactory(factory, policy, sink.for_policy(policy))
            )
            self.planes[policy] = flow.build(by_policy, data_setup)
        self.data = self.planes[DEFAULT_POLICY] if single else JoinedPlanes(self.planes)

    def sender(self, worker_id: int, policy: str = DEFAULT_POLICY) -> WorkerSender:
        """Worker ``worker_id``'s sender for ``policy``'s rows."""
        return self.planes[policy].worker_sender(worker_id, self.coordinator.for_policy(policy))

    def senders(self, worker_id: int) -> dict[str, WorkerSender]:
        """Worker ``worker_id``'s sender for each policy."""
        return {policy: self.sender(worker_id, policy) for policy in self.planes}

    def worker_senders(self, worker_id: int) -> WorkerSender | dict[str, WorkerSender]:
        """What a worker is built with: its sender, or (multi-agent) one per policy."""
        if list(self.planes) == [DEFAULT_POLICY]:
            return self.sender(worker_id)
        return self.senders(worker_id)


class LocalFactory:
    """Data-plane actors as plain objects; a shard forwards each report at once (the run
    stays reproducible)."""

    forward_every_s: float | None = 0.0

    def __init__(self, report_sink: ReportSink) -> None:
        self.report_sink: ReportSink | None = report_sink
        self.objects: list[Any] = []

    def start(
        self,
        cls: type,
        role: str,
        name: str,
        kwargs: dict[str, Any],
        *,
        callers: int,
        restartable: bool,
    ) -> Handle:
        obj = cls(**kwargs)
        self.objects.append(obj)
        return LocalHandle(obj, role)


class LocalPlanes(PolicyPlanes):
    """The coordinator and the data planes as plain objects in this process, with clients."""

    def __init__(self, setup: PlaneSetup, store: ObjectStore) -> None:
        flows = setup.flows()
        self.coordinator_object = Coordinator(**setup.coordinator_kwargs(flows), store=store)
        self.coordinator = CoordinatorClient(LocalHandle(self.coordinator_object, "Coordinator"))
        factory = LocalFactory(self.coordinator)
        self._build(flows, factory, setup, self.coordinator)
        self.objects = factory.objects  # the data planes' objects, in the order built
        self.coordinator_object.data_plane = {p: d.clients for p, d in self.planes.items()}

    def learner_links(self, store: ObjectStore, policy: str = DEFAULT_POLICY) -> LearnerLinks:
        source = self.planes[policy].learner_source()
        return LearnerLinks(self.coordinator.for_policy(policy), source, store)


class RayFactory:
    """Data-plane actors as threaded Ray actors, named by run; a restartable one is
    restarted by Ray (``max_restarts=-1``) from its first arguments. In lockstep, every
    call is answered before the caller goes on, and a shard forwards each report at once,
    as in one process."""

    def __init__(
        self,
        run_id: str,
        report_sink: ReportSink,
        per_caller: int,
        others: int,
        options: Any,
        lockstep: bool = False,
    ) -> None:
        self.run_id = run_id
        self.report_sink: ReportSink | None = report_sink
        self.per_caller, self.others, self.options = per_caller, others, options
        self.lockstep = lockstep
        self.forward_every_s: float | None = 0.0 if lockstep else None
        self.actors: list[Any] = []

    def start(
        self,
        cls: type,
        role: str,
        name: str,
        kwargs: dict[str, Any],
        *,
        callers: int,
        restartable: bool,
    ) -> Handle:
        import ray

        actor_name = f"joyrl-{name}-{self.run_id}"
        restarts = {"max_restarts": -1} if restartable else {}
        actor = (
            ray.remote(cls)
            .options(
                num_cpus=0,
                max_concurrency=callers * self.per_caller + self.others,
                name=actor_name,
                **restarts,
                **self.options,
            )
            .remote(**kwargs)
        )
        self.actors.append(actor)
        return RayHandle(role, name=actor_name, actor=actor, lockstep=self.lockstep)


class RayPlanes(PolicyPlanes):
    """The coordinator and the data planes as Ray actors, with clients (``lockstep``: whose
    calls are answered before the caller goes on)."""

    def __init__(
        self,
        setup: PlaneSetup,
        *,
        max_pushes_in_flight: int = 2,
        options: dict[str, Any] | None = None,
        lockstep: bool = False,
    ) -> None:
        import ray

        run_id = uuid.uuid4().hex[:12]
        coordinator_name = f"joyrl-coordinator-{run_id}"
        # The data plane forwards its workers' reports to the coordinator, found by its name
        # (a restarted shard finds it again; the coordinator is created last).
        named_coordinator = CoordinatorClient(
            RayHandle("Coordinator", name=coordinator_name, lockstep=lockstep)
        )
        options = options or {}
        per_caller = max_pushes_in_flight + 2
        others = 4 * setup.n_learners + 8
        flows = setup.flows()
        factory = RayFactory(run_id, named_coordinator, per_caller, others, options, lockstep)
        self._build(flows, factory, setup, named_coordinator)
        self.actors = factory.actors
        self.coordinator_actor = (
            ray.remote(Coordinator)
            .options(
                num_cpus=0,
                max_concurrency=(setup.n_workers * per_caller + others) * len(flows),
                name=coordinator_name,
                **options,
            )
            .remote(
                **setup.coordinator_kwargs(flows),
                store=RayStore(),
                data_plane={p: d.clients for p, d in self.planes.items()},
            )
        )
        self.coordinator = CoordinatorClient(
            RayHandle(
                "Coordinator",
                name=coordinator_name,
                actor=self.coordinator_actor,
                lockstep=lockstep,
            )
        )

    @classmethod
    def of(cls, general: GeneralConfig, setup: PlaneSetup) -> RayPlanes:
        """The run's planes, as its ``general_cfg`` places and paces them."""
        return cls(
            setup,
            max_pushes_in_flight=general.max_pushes_in_flight,
            options=data_server_options(general),
            lockstep=general.lockstep,
        )

    def learner_links(self, policy: str = DEFAULT_POLICY) -> LearnerLinks:
        source = self.planes[policy].learner_source()
        return LearnerLinks(self.coordinator.for_policy(policy), source, RayStore())

    def kill(self) -> None:
        import ray

        for actor in [self.coordinator_actor, *self.actors]:
            ray.kill(actor, no_restart=True)
