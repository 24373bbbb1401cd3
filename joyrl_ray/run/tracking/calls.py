"""Calls to one tracker from a thread of its own, through a bounded queue.

A tracker's call can take long (a server far away, one that is down and retried, a big
artifact); the driver loop must not wait for it. So the driver only queues calls and the
tracker's thread makes them in order. The queue is bounded: a tracker that falls that far
behind loses the rows that do not fit, counted and said at the end, and never fills the
driver's memory. The first call that raises ends the tracker's part in the run with one
warning line; the calls after it are dropped unmade. At the end the driver waits at most
:data:`FINISH_WAIT_S` for the artifacts and the run's close, then goes on without them.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable

from joyrl_ray.run.tracking.tracker import Tracker

QUEUE_CALLS = 2000  # a quarter of an hour of progress rows (two a second) behind a tracker
FINISH_WAIT_S = 60.0  # the most the end of a run waits for its trackers, all together
FINISHED, FAILED, KILLED = "FINISHED", "FAILED", "KILLED"
SIGNAL_EXIT_CODES = (130, 143)  # SIGINT, SIGTERM

Warn = Callable[[str], None]
Call = Callable[[], object]


def status_of(exit_code: int) -> str:
    """The tracked run's end for the run's exit code."""
    if exit_code == 0:
        return FINISHED
    return KILLED if exit_code in SIGNAL_EXIT_CODES else FAILED


def one_line(exc: BaseException, limit: int = 300) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    text = f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."


class TrackerCalls:
    """One tracker's calls, made in order by its own thread."""

    def __init__(self, tracker: Tracker, warn: Warn) -> None:
        self.tracker = tracker
        self.warn = warn
        self.queue: queue.Queue[Call | None] = queue.Queue(maxsize=QUEUE_CALLS)
        self.failed = False
        self.dropped = 0
        self.thread = threading.Thread(
            target=self._serve, name=f"tracking-{tracker.name}", daemon=True
        )
        self.thread.start()

    def submit(self, call: Call) -> None:
        """Queue ``call`` without waiting; dropped and counted when the queue is full."""
        if self.failed:
            return
        try:
            self.queue.put_nowait(call)
        except queue.Full:
            self.dropped += 1

    def end(self, final: list[Call], deadline: float) -> None:
        """Queue the ``final`` calls and the end of the thread, waiting for room in the
        queue until ``deadline`` (monotonic) at the most."""
        for call in [*final, None]:
            if self.failed and call is not None:
                continue
            try:
                self.queue.put(call, timeout=max(deadline - time.monotonic(), 0.001))
            except queue.Full:
                return

    def wait(self, deadline: float) -> None:
        """Wait for the thread until ``deadline``; what is not done by then is not waited for."""
        self.thread.join(max(deadline - time.monotonic(), 0.0))
        name = self.tracker.name
        if self.thread.is_alive():
            self.warn(
                f"tracking: {name} was still busy {FINISH_WAIT_S:g} s after the run's end; "
                "not waited for (its last calls are lost)"
            )
        if self.dropped and not self.failed:
            self.warn(
                f"tracking: {name} fell behind; {self.dropped} metric rows did not fit its "
                f"queue ({QUEUE_CALLS} calls) and were dropped"
            )

    def _serve(self) -> None:
        while True:
            call = self.queue.get()
            if call is None:
                return
            if self.failed:
                continue
            try:
                call()
            except Exception as exc:  # the tracker's library or its server: never the run
                self.failed = True
                self.warn(
                    f"tracking: {self.tracker.name} failed ({one_line(exc)}); "
                    "the run goes on without it"
                )
