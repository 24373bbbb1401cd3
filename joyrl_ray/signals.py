"""SIGINT and SIGTERM ask a run to stop cleanly; a second signal aborts at once.

The first signal only sets a flag: the driver then asks every role to stop, the learner
hands in its final checkpoint and the summary is written, and the run exits with
``128 + signal`` (130 for Ctrl-C, 143 for SIGTERM), as a shell reports a killed process.
A second signal raises KeyboardInterrupt in the driver, which still tears Ray down.
"""

from __future__ import annotations

import signal
import threading
from typing import Any

HANDLED = (signal.SIGINT, signal.SIGTERM)


class StopSignals:
    def __init__(self) -> None:
        self.received: int | None = None
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is threading.main_thread():
            for sig in HANDLED:
                self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def _handle(self, signum: int, frame: Any) -> None:
        if self.received is not None:
            raise KeyboardInterrupt
        self.received = signum

    @property
    def exit_code(self) -> int | None:
        return None if self.received is None else 128 + self.received

    @property
    def name(self) -> str:
        return signal.Signals(self.received).name if self.received is not None else ""

    def __exit__(self, *exc: Any) -> None:
        for sig, previous in self._previous.items():
            signal.signal(sig, previous)
