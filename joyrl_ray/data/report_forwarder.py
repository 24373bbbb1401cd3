"""A replay shard's workers' reports, forwarded to the coordinator a few times a second.

A worker's report (env steps, episodes, drops, errors) travels with its rows in one insert
call; the shard gathers the reports of its workers and forwards them in one call at most
every ``interval_s`` (0: at once, inside the insert: the one-process backend), so the
coordinator takes a few calls per second per shard instead of one per worker chunk. Its
answer (the stop, the global env steps, the newest weights) is what the shard's insert
acks hand to the workers until the next answer.

A report that ends a run (an env that failed on every try) is forwarded at once; the
runtime flushes what is left at the end (``flush``), before the driver's last drain, so
the accounting is exact. The reports of a shard that dies before forwarding them die with
it, as its rows do; the coordinator counts what they held from the totals each worker's
later reports carry (see :mod:`joyrl_ray.control.report_gaps`).
"""

from __future__ import annotations

import threading
import time
from typing import Protocol

from joyrl_ray.wire.handles import Call, RoleError
from joyrl_ray.wire.messages import PushAck, TakenReport, WorkerReport

FORWARD_EVERY_S = 0.1
CALL_TIMEOUT_S = 60.0


class ReportSink(Protocol):
    """Where a shard's reports go: the coordinator's client, seen from the data plane as this
    one call only (the data plane knows nothing else of control)."""

    def take_reports(
        self, shard: int, reports: list[TakenReport], known_version: int
    ) -> Call[PushAck]: ...


class ReportForwarder:
    """Reports waiting for the next forward, and the coordinator's latest answer."""

    def __init__(self, shard: int, coordinator: ReportSink | None, interval_s: float) -> None:
        self.shard = shard
        self.coordinator = coordinator  # None: a shard alone (tests); reports stay here
        self.interval_s = interval_s
        self._cond = threading.Condition()
        self.pending: list[TakenReport] = []
        self.sending = 0  # reports in the forward under way
        self.urgent = False
        self.asked = False  # a throttled worker wants an answer newer than interval_s
        self.answered_at = 0.0  # monotonic s
        self.answer = PushAck(stop=False, throttled=False, env_steps=0)
        self.known_version = 0
        self.failure: str | None = None  # the coordinator stopped answering: why
        self.last_forward = 0.0  # monotonic s
        if interval_s > 0 and coordinator is not None:
            threading.Thread(target=self._serve, name=f"forward {shard}", daemon=True).start()

    def add(self, report: WorkerReport, rows: int, stored: bool) -> None:
        """A worker's report, ``rows`` of its transitions stored here (``stored``) or dropped
        here."""
        with self._cond:
            self.pending.append(TakenReport(report, rows, stored))
            if report.fatal_env_error:
                self.urgent = True
            self._cond.notify_all()
        if self.interval_s <= 0:
            self._forward()

    def latest(self) -> PushAck:
        """The coordinator's latest answer (the weights are the newest the shard knows); once
        the coordinator stopped answering, the stop: the run cannot go on without it."""
        with self._cond:
            a = self.answer
            stop = a.stop or self.failure is not None
            return PushAck(stop, False, a.env_steps, a.weights, a.normalization)

    def fresh(self, timeout_s: float) -> PushAck:
        """The coordinator's answer, asked again if it is older than ``interval_s`` (for a
        worker that waited while no report came: weights published meanwhile)."""
        if self.interval_s <= 0 or self.coordinator is None:
            self._forward(empty_too=True)
            return self.latest()
        with self._cond:
            if time.monotonic() - self.answered_at > self.interval_s:
                self.asked = True
                self._cond.notify_all()
                self._cond.wait_for(lambda: not self.asked, timeout=timeout_s)
        return self.latest()

    def flush(self, timeout_s: float) -> bool:
        """Forward what waits now, and wait until it is answered; False past the deadline."""
        if self.interval_s <= 0:
            self._forward()
            return True
        with self._cond:
            self.urgent = True
            self._cond.notify_all()
            return self._cond.wait_for(
                lambda: (not self.pending and not self.sending) or self.failure is not None,
                timeout=timeout_s,
            )

    def _serve(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: bool(self.pending) or self.asked)
                # At most one forward per interval_s, unless a report is urgent.
                due = self.last_forward + self.interval_s - time.monotonic()
                if due > 0:
                    self._cond.wait_for(lambda: self.urgent, timeout=due)
                self.last_forward = time.monotonic()
            self._forward(empty_too=True)

    def _forward(self, empty_too: bool = False) -> None:
        with self._cond:
            if self.coordinator is None or self.failure is not None:
                self.pending, self.asked = [] if self.failure else self.pending, False
                self._cond.notify_all()
                return
            if not self.pending and not empty_too:
                return
            reports, self.pending = self.pending, []
            self.sending, self.urgent = len(reports), False
            known = self.known_version
        try:
            call = self.coordinator.take_reports(self.shard, reports, known)
            answer: PushAck | None = call.result(CALL_TIMEOUT_S)
        except RoleError as exc:  # the coordinator is gone: the run stops without it
            answer, failure = None, str(exc)
        with self._cond:
            if answer is None:
                self.failure = failure
            else:
                if answer.weights is None:  # nothing newer: the newest stays the one known
                    answer.weights = self.answer.weights
                else:
                    self.known_version = answer.weights.version
                self.answer = answer
                self.answered_at = time.monotonic()
            self.sending, self.asked = 0, False
            self._cond.notify_all()
