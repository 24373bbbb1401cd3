"""SIGINT and SIGTERM during a sweep: Tune stops it in order, and the sweep can go on.

Ray Tune's own SIGINT handler stops the trials and saves the experiment's state, but
lets ``Tuner.fit`` return as if the sweep had ended, and leaves SIGTERM alone. Here both
signals are turned into the stop Tune offers on SIGUSR1 (the same handler), and noted,
so the command line writes what the trials have so far, prints the command that resumes
the sweep and exits ``128 + signal``. A second signal aborts at once.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from joyrl_ray.run.signals import RUNNING, Interrupted, StopSignals


class SweepSignals(StopSignals):
    """The command line's handlers, with the first signal handed to Tune as its stop."""

    def _handle(self, signum: int, frame: Any) -> None:
        if self.received is not None or not _tune_listens():
            raise Interrupted(signum)  # a second signal, or Tune is not running yet
        self.count += 1
        self.received = signum
        signal.raise_signal(signal.SIGUSR1)


def _tune_listens() -> bool:
    """Whether Tune's stop handler is in place (SIGUSR1's default would end the process)."""
    return signal.getsignal(signal.SIGUSR1) not in (signal.SIG_DFL, signal.SIG_IGN, None)


@contextmanager
def stopping_tune_on_signals() -> Iterator[SweepSignals]:
    """Around ``Tuner.fit``: a signal stops the sweep in order (see the module docstring)."""
    os.environ["TUNE_DISABLE_SIGINT_HANDLER"] = "1"  # it would replace ours during fit
    signals = SweepSignals(RUNNING)
    with signals:
        yield signals
