"""What a worker needs of its data flow: how a chunk leaves it, and when it may collect.

A worker knows nothing of replay shards or rollout queues. Its flow (:mod:`joyrl_ray.flows`)
builds a :class:`WorkerSender` on the driver, with the clients it calls; the sender travels
to the worker (pickled, on Ray) and is bound there to the worker's own envs.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

from gymnasium.spaces import Space

from joyrl_ray.batch import Batch, batch_rows
from joyrl_ray.control.client import CoordinatorClient
from joyrl_ray.wire.handles import Call
from joyrl_ray.wire.messages import Frames, Placement, PushAck, WorkerReport, WorkerStart


@dataclass(frozen=True)
class SenderSetup:
    """The worker-side facts a sender is bound to."""

    n_envs: int
    gamma: float
    obs_space: Space
    frame_stacked: bool  # frame_stack is the env's last wrapper
    chunk_steps: int  # general_cfg.worker_chunk_steps: a chunk's length unless the flow says
    max_pushes_in_flight: int


@dataclass
class Payload:
    """A chunk made ready to send: ``rows`` of it are counted in the report (-1: every env
    step the report has, a whole rollout)."""

    batch: Batch | None
    rows: int
    version: int = 0  # the weights version the chunk was collected with
    frames: Frames | None = None  # stacked frames sent once each (replay)


class WorkerSender(ABC):
    """The worker's half of a data flow."""

    #: The chunk the worker collects before sending, in vector steps.
    chunk_len: int = 0
    #: Pushes a worker keeps unacknowledged; the next waits for the oldest ack.
    max_in_flight: int = 1
    #: Whether a worker must be granted room before its first chunk.
    initially_throttled: bool = False

    def __init__(self, coordinator: CoordinatorClient) -> None:
        self.coordinator = coordinator
        self.n_envs = 1

    def bind(self, setup: SenderSetup) -> None:
        """At the worker: size what the sender keeps for the worker's envs."""
        self.chunk_len = setup.chunk_steps
        self.max_in_flight = setup.max_pushes_in_flight
        self.n_envs = setup.n_envs

    def register(self, worker_id: int, where: Placement) -> Call[WorkerStart]:
        return self.coordinator.register_worker(worker_id, where)

    # ----- when the worker may collect -----
    @abstractmethod
    def needs_newer(self, version: int) -> bool:
        """Whether the next chunk must wait for weights newer than ``version``."""

    def throttled_after_ack(self, ack: PushAck, throttled: bool) -> bool:
        """Whether the worker is throttled, after an ack of one of its pushes."""
        return ack.throttled

    def throttled_after_wait(self, ack: PushAck, waited_for_weights: bool, throttled: bool) -> bool:
        """Whether the worker is throttled, after a wait for its turn."""
        return ack.throttled

    def throttled_after_send(self, throttled: bool) -> bool:
        """Whether the worker is throttled, right after it sent a chunk."""
        return throttled

    @abstractmethod
    def wait_for_turn(
        self, worker_id: int, known_version: int, need_weights: bool, timeout_s: float
    ) -> Call[PushAck]:
        """Block (up to ``timeout_s``) for newer weights or for room, wherever the flow has it."""

    # ----- sending -----
    @abstractmethod
    def prepare(self, chunk: Batch, version: int) -> Payload:
        """The chunk (made with weights ``version``) as it will travel."""

    @abstractmethod
    def send(
        self, worker_id: int, payload: Payload, report: WorkerReport, known_version: int
    ) -> Call[PushAck]:
        """Send a prepared chunk (or only the report: ``payload.batch`` None) with its report."""

    #: Whether each env outlives its own step errors, its failed steps kept in the chunk
    #: as not learned from (on-policy rollouts; see joyrl_ray.roles.worker.env_guard).
    keeps_failed_steps = False

    def after_env_error(self, chunk: Batch) -> tuple[Batch | None, int]:
        """After an env raised mid-chunk: what to keep of the chunk, and how many env steps
        are dropped (the default: a chunk is whole or nothing)."""
        return None, batch_rows(chunk) * self.n_envs + self.unfinished()

    def unfinished(self) -> int:
        """Env steps collected that will never be sent (dropped at an error or the stop)."""
        return 0
