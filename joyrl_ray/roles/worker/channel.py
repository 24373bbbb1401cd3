"""One policy's traffic from a worker: its sends in flight, their acks, the weights they bring.

A worker acts for one policy (a single-agent run) or for several (a multi-agent run, one per
group of agents). For each policy it sends the rows that policy's agents collected through
that policy's sender (its flow's: into its replay shard or rollout queue), keeps at most
``sender.max_in_flight`` sends unacknowledged, and loads the policy's newer weights when an
ack brings them. What the acks say of the run (the stop, the global env steps, the merged
normalization statistics) is the worker's, whichever policy's ack said it
(:class:`ChannelOwner`).
"""

from __future__ import annotations

import time
from collections import deque
from typing import Protocol

from algos.base import Policy
from joyrl_ray.roles.worker.acting_weights import ActingWeights
from joyrl_ray.roles.worker.kill_schedule import KillSchedule
from joyrl_ray.roles.worker.normalizer import WorkerNormalizer
from joyrl_ray.roles.worker.sender import Payload, WorkerSender
from joyrl_ray.wire.handles import Call, ObjectStore
from joyrl_ray.wire.messages import PushAck, ReportTotals, WorkerReport, WorkerTimes

ACK_TIMEOUT_S = 60.0


class ChannelOwner(Protocol):
    """What a worker's channels share: the worker's view of the run."""

    stop: bool
    global_env_steps: int
    times: WorkerTimes
    norm: WorkerNormalizer | None
    kills: KillSchedule


class PolicyChannel:
    """A worker's sends for one policy, and that policy's acting weights."""

    def __init__(
        self,
        worker_id: int,
        policy: Policy,
        sender: WorkerSender,
        store: ObjectStore,
        owner: ChannelOwner,
        *,
        lockstep: bool,
    ) -> None:
        self.worker_id = worker_id
        self.policy = policy
        self.sender = sender
        self.owner = owner
        self.weights = ActingWeights(store, policy, ACK_TIMEOUT_S, always_wait=lockstep)
        self.in_flight: deque[Call[PushAck]] = deque()
        self.throttled = sender.initially_throttled
        self.report = WorkerReport(worker_id, 0)  # what the next send reports
        self.sent = ReportTotals()  # what this incarnation's reports sum to

    # ----- acknowledgements -----
    def _heard(self, ack: PushAck) -> None:
        """What an ack says of the run, for the worker."""
        owner = self.owner
        owner.stop = owner.stop or ack.stop
        owner.global_env_steps = max(owner.global_env_steps, ack.env_steps)
        if owner.norm is not None:
            owner.norm.take_shared(ack.normalization)

    def take_ack(self, ack: PushAck) -> None:
        self._heard(ack)
        self.throttled = self.sender.throttled_after_ack(ack, self.throttled)
        self.owner.times.weights_wait_s += self.weights.take(ack.weights, now=False)
        self.owner.kills.strike(self.owner.global_env_steps)

    def wait_for_acks(self, keep: int) -> None:
        t0 = time.monotonic()
        while len(self.in_flight) > keep:
            self.take_ack(self.in_flight.popleft().result(timeout_s=ACK_TIMEOUT_S))
        self.owner.times.push_wait_s += time.monotonic() - t0

    def wait_for_turn(self, wait_s: float) -> bool:
        """Block until the worker may collect for this policy; False if it still may not
        (deadline, stop)."""
        need_weights = self.sender.needs_newer(self.weights.version)
        if not (need_weights or self.throttled):
            return True
        t0 = time.monotonic()
        self.wait_for_acks(0)
        known = self.weights.version
        ack = self.sender.wait_for_turn(self.worker_id, known, need_weights, wait_s).result(
            timeout_s=wait_s + ACK_TIMEOUT_S
        )
        self._heard(ack)
        self.throttled = self.sender.throttled_after_wait(ack, need_weights, self.throttled)
        times = self.owner.times
        if need_weights:
            times.weights_wait_s += time.monotonic() - t0
        else:
            times.push_wait_s += time.monotonic() - t0
        # Take the weights the learner published while this worker waited (throttled, it
        # would otherwise act with those of its last push, a whole wait behind); the wait
        # was long, the fetch is short (and counted as weights_wait_s).
        times.weights_wait_s += self.weights.take(ack.weights, now=True)
        newer = self.sender.needs_newer(self.weights.version)
        return not (self.owner.stop or newer or self.throttled)

    # ----- sending -----
    def take_report(self, rows: int, transitions: int | None = None) -> WorkerReport:
        """The report to send with ``rows`` rows (-1: a rollout, all its steps), counted
        into this incarnation's totals (``transitions``: a multi-agent run's, of this
        policy); the next report starts empty."""
        report = self.report
        collected = report.env_steps if transitions is None else transitions
        rows = collected if rows < 0 else rows
        self.sent = self.sent.add(collected, rows, report.dropped)
        report.totals = self.sent
        report.transitions = transitions
        self.report = WorkerReport(self.worker_id, 0, incarnation=report.incarnation)
        return report

    def send(self, payload: Payload, report: WorkerReport, *, collected: bool) -> None:
        """Send ``payload`` with ``report`` (``collected``: rows were collected for it, not
        only a report); wait for the oldest ack when more sends than
        ``sender.max_in_flight`` are out."""
        call = self.sender.send(self.worker_id, payload, report, self.weights.version)
        if collected:
            self.throttled = self.sender.throttled_after_send(self.throttled)
        self.in_flight.append(call)
        self.wait_for_acks(self.sender.max_in_flight - 1)
