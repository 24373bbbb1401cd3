"""Calls whose answer nobody waits for at once, still read: an error is never lost.

A role that sends a call without waiting (publish weights, write priorities back, hand in
a checkpoint) keeps it here. :meth:`PendingCalls.check` raises the first error among the
calls that have answered; it runs before every round of work, so a failing call stops the
role within one round, on both backends. At most ``limit`` calls stay unanswered: the
next one waits for the oldest, so nothing piles up.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from joyrl_ray.wire.handles import Call

DEFAULT_LIMIT = 16


class PendingCalls:
    def __init__(self, limit: int = DEFAULT_LIMIT) -> None:
        self.limit = limit
        self.calls: deque[Call[Any]] = deque()

    def add(self, call: Call[Any]) -> None:
        self.calls.append(call)
        while len(self.calls) > self.limit:
            self.calls.popleft().result(timeout_s=60)

    def check(self) -> None:
        """Raise the error of the first answered call that failed; forget answered ones."""
        while self.calls and self.calls[0].done():
            self.calls.popleft().result()

    def drain(self, timeout_s: float) -> None:
        """Wait for every call; raise the first error."""
        while self.calls:
            self.calls.popleft().result(timeout_s=timeout_s)

    def __len__(self) -> int:
        return len(self.calls)
