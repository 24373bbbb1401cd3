"""SIGINT and SIGTERM: stop cleanly, whenever they come, and exit with ``128 + signal``.

The command line installs one handler for the whole run (:func:`handling_signals`), and
what a signal does depends on where the run is:

- starting (checks, Ray starting, roles being created): nothing to save yet, so the
  handler raises :class:`Interrupted` and the run unwinds, closing what it opened; the
  command line prints one line and exits 130 (Ctrl-C) or 143 (SIGTERM), no traceback.
- running (the driver loop): the first signal only sets a flag; the driver then asks every
  role to stop, the learner hands in its final checkpoint and the summary is written. A
  second signal stops the waiting for the roles: they are ended at once (the last
  checkpoint written is kept).
- finishing (summary, figures, Ray's teardown): signals are noted and otherwise ignored,
  so that the teardown is not cut short and leaves no process behind.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

HANDLED = (signal.SIGINT, signal.SIGTERM)
STARTING, RUNNING, FINISHING = "starting", "running", "finishing"


class Interrupted(BaseException):
    """A signal while the run was starting (a BaseException, as KeyboardInterrupt is, so
    that no ``except Exception`` on the way swallows it)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


class StopSignals:
    """Handlers for SIGINT and SIGTERM while it is entered (main thread only)."""

    def __init__(self, phase: str = STARTING) -> None:
        self.phase = phase
        self.received: int | None = None  # the first signal
        self.count = 0
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is threading.main_thread():
            for sig in HANDLED:
                self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def reinstall(self) -> None:
        """Take the signals back from a handler set below Python since: Ray's core worker
        installs one for SIGTERM in ``ray.init`` that aborts the process (exit -6)."""
        if self._previous and threading.current_thread() is threading.main_thread():
            for sig in HANDLED:
                signal.signal(sig, self._handle)

    def _handle(self, signum: int, frame: Any) -> None:
        self.count += 1
        if self.received is None:
            self.received = signum
        if self.phase == STARTING:
            raise Interrupted(signum)

    @property
    def urgent(self) -> bool:
        """A second signal came: stop waiting for anything."""
        return self.count > 1

    @property
    def exit_code(self) -> int | None:
        return None if self.received is None else 128 + self.received

    @property
    def name(self) -> str:
        return signal.Signals(self.received).name if self.received is not None else ""

    def __exit__(self, *exc: Any) -> None:
        for sig, previous in self._previous.items():
            signal.signal(sig, previous)


_active: StopSignals | None = None


@contextmanager
def handling_signals() -> Iterator[StopSignals]:
    """The command line's handlers, for one whole run (see the module docstring)."""
    global _active
    with StopSignals(STARTING) as signals:
        _active, outer = signals, _active
        try:
            yield signals
        finally:
            _active = outer


def reinstall() -> None:
    """After Ray started: the command line's handlers again (see StopSignals.reinstall)."""
    if _active is not None:
        _active.reinstall()


@contextmanager
def running() -> Iterator[StopSignals]:
    """The driver loop's phase: the command line's handlers switched to running, or handlers
    of its own when the run did not come from the command line (tests, the Python API)."""
    if _active is None:
        with StopSignals(RUNNING) as signals:
            yield signals
        return
    _active.reinstall()
    _active.phase = RUNNING
    try:
        yield _active
    finally:
        _active.phase = FINISHING
