"""What every data flow provides, and what the backends give a flow to build with.

A flow (:class:`DataFlow`) is one way experience moves from workers to learners. From the
algorithm's :data:`~joyrl_ray.data_needs.DataNeeds` it builds the run's data plane
(:class:`DataPlane`: which actors, how many, through the backend's :class:`ActorFactory`),
and the data plane hands each worker its sender and each learner its source. The driver
and the backends ask the data plane for its placements, waits, stats and saved replay,
and tell it of a worker dropped for good; none of them knows which flow runs.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from joyrl_ray.config.general import GeneralConfig
from joyrl_ray.control.client import CoordinatorClient
from joyrl_ray.data.dataset_rows import DatasetSource
from joyrl_ray.data.report_forwarder import ReportSink
from joyrl_ray.data_needs import ReplayNeeds
from joyrl_ray.roles.learner.source import LearnerSource
from joyrl_ray.roles.worker.sender import WorkerSender
from joyrl_ray.wire.handles import Call, Handle, RoleDied, RoleError
from joyrl_ray.wire.messages import InsertAck, Placement, PushAck, WaitState

CALL_TIMEOUT_S = 60.0


@dataclass
class DataSetup:
    """What the data plane starts from, besides the algorithm's needs."""

    n_workers: int
    n_learners: int = 1
    n_shards: int = 1
    learner_lag_tolerance: int = 64
    seed: int | None = None
    saved_replay: dict[str, np.ndarray] | None = None  # a resumed run's kept replay
    dataset: DatasetSource | None = None  # a run with no workers: where its shards read data


class ActorFactory(Protocol):
    """How a backend starts a data-plane actor (a plain object, or a Ray actor)."""

    #: Where replay shards forward their workers' reports (None: they keep them).
    report_sink: ReportSink | None
    #: How often a shard forwards (0: at once, one process); None: the shard's default.
    forward_every_s: float | None

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
        """Start ``cls(**kwargs)`` as ``role``; ``callers`` workers will call it; a
        ``restartable`` actor is started again, from the same arguments, when it dies."""
        ...


@dataclass
class DataPlaneStats:
    """The data plane's closing figures, summed over its actors (and each shard's)."""

    transitions_stored: int
    transitions_dropped: dict[str, int]
    priorities_applied: int
    buffer: dict[str, float]
    busy_s: float
    shards: list[dict[str, Any]] = field(default_factory=list)


class DataPlane(ABC):
    """One run's data-plane actors, built by its flow, and what the rest of the run asks of them."""

    def __init__(self, clients: list[Any]) -> None:
        #: Every data-plane actor's client (each has ``where``, ``waiting_roles`` and
        #: ``request_stop``), for the coordinator and the driver.
        self.clients = clients

    # ----- the roles' halves -----
    @abstractmethod
    def worker_sender(self, worker_id: int, coordinator: CoordinatorClient) -> WorkerSender:
        """Worker ``worker_id``'s sender (it travels to the worker)."""

    @abstractmethod
    def learner_source(self) -> LearnerSource:
        """A learner's source (it travels to each learner)."""

    # ----- the driver's calls -----
    def placements(self) -> list[Placement]:
        """Where the data plane's actors run (those that answer)."""
        found = []
        for call in [actor.where() for actor in self.clients]:
            try:
                found.append(call.result(CALL_TIMEOUT_S))
            except RoleError:
                continue
        return found

    def waits(self) -> dict[str, WaitState]:
        """Who waits inside a data-plane actor's call, for what."""
        waits: dict[str, WaitState] = {}
        for actor in self.clients:
            try:
                waits.update(actor.waiting_roles().result(CALL_TIMEOUT_S))
            except RoleError:  # an actor being restarted waits for nothing
                continue
        return waits

    def saved_replay(self) -> dict[str, np.ndarray] | None:
        """The replay to keep with a checkpoint (``save_buffer``); None when the flow keeps
        none. Raises ``RoleError`` when an actor that held part of it is gone."""
        return None

    def flush_reports(self) -> None:
        """Reports the data plane still holds, to the coordinator (before the last drain)."""
        return None

    @abstractmethod
    def stats(self) -> DataPlaneStats:
        """The closing figures (the run is over)."""

    def worker_dropped(self, worker_id: int) -> None:
        """Worker ``worker_id`` is gone for good: nothing is to wait for it."""
        return None

    def worker_returned(self, worker_id: int) -> None:
        """Worker ``worker_id`` joins the run (shed earlier, or new as the fleet grows):
        wait for it."""
        return None

    def lost(self) -> str | None:
        """Why the run cannot go on, when an actor that is not restarted died; else None."""
        return None


class DataFlow(ABC):
    """One way data moves from workers to learners."""

    #: The flow's name, as ``summary.json`` says it.
    name: str = ""
    #: What one learner update is called on the progress line.
    update_unit: str = "grad_steps"
    #: Whether the run learns (test mode's flow stores nothing and has no learner).
    learning: bool = True

    @abstractmethod
    def build(self, factory: ActorFactory, setup: DataSetup) -> DataPlane:
        """Start the data plane's actors through ``factory``."""

    def check_resume(
        self, general: GeneralConfig, saved_replay: dict[str, Any] | None, source: str
    ) -> None:
        """Raise ``ConfigError`` when a resume's kept data (saved in ``source``) cannot go
        back into this run."""
        return None

    def dataset_needs(self) -> ReplayNeeds | None:
        """How a dataset's episodes fill this flow's replay (``n_step``, ``gamma``,
        ``batch_size``); None when the flow cannot learn from a dataset."""
        return None


class AfterRoom:
    """A worker's wait for room at a data-plane actor, read as a ``PushAck``.

    A replay shard's answer passes the coordinator's on (``ask_coordinator`` False); the
    asynchronous rollout queue knows nothing of the coordinator, so the coordinator is
    asked after the wait, for the stop and the newest weights as they are then. An actor
    that died meanwhile (a shard Ray restarts empty) leaves nothing to wait for: the
    coordinator's answer stands in.
    """

    def __init__(
        self,
        room: Call[InsertAck],
        coordinator: CoordinatorClient,
        worker_id: int,
        known: int,
        *,
        ask_coordinator: bool = False,
    ) -> None:
        self.room, self.coordinator = room, coordinator
        self.worker_id, self.known = worker_id, known
        self.ask_coordinator = ask_coordinator

    def done(self) -> bool:
        return self.room.done()

    def result(self, timeout_s: float | None = None) -> PushAck:
        try:
            room = self.room.result(timeout_s)
        except RoleDied:
            return self._coordinator(timeout_s)
        if not self.ask_coordinator:
            return PushAck(
                room.stop, room.throttled, room.env_steps, room.weights, room.normalization
            )
        ack = self._coordinator(timeout_s)
        ack.throttled = room.throttled
        return ack

    def _coordinator(self, timeout_s: float | None) -> PushAck:
        return self.coordinator.wait_for_weights(self.worker_id, self.known, 0.0).result(timeout_s)
