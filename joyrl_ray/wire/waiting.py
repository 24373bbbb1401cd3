"""Waiting inside a role's call: who waits for what, for the stall report.

A role's caller that must wait (a throttled worker, a learner ahead of the data, the
driver waiting for news) blocks on the role's condition until the wait is over or the
call's deadline passes; meanwhile the role records who waits for what, which the stall
report names. On Ray the roles are threaded actors, so a waiting call does not block the
others; in one process every deadline is 0 and a call that would wait returns at once.
A call whose deadline passed is made again by its caller's loop: in between, for up to
``REWAIT_GRACE_S``, the caller still counts as waiting, so that a report taken in that gap
(a busy machine can stretch it) names it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from joyrl_ray.wire.messages import WaitState

REWAIT_GRACE_S = 10.0  # a caller whose wait timed out counts as waiting this long after


class WaitingRoom:
    """A condition to wait on, and who waits on it for what."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self.waiting: dict[str, WaitState] = {}
        self._timed_out_at: dict[str, float] = {}  # callers between a timed-out wait and the next

    def _wait(self, who: str, what: str, ready: Callable[[], bool], timeout_s: float) -> bool:
        """Wait (the lock released meanwhile) until ``ready()`` or the deadline passes."""
        if ready():
            self._done_waiting(who)
            return True
        if timeout_s <= 0:
            return False
        now = time.monotonic()
        since = now
        earlier, timed_out_at = self.waiting.get(who), self._timed_out_at.get(who)
        if earlier is not None and earlier.what == what and timed_out_at is not None:
            if now - timed_out_at <= REWAIT_GRACE_S:  # the same wait, asked again
                since = earlier.since
        self.waiting[who] = WaitState(what, since)
        self._timed_out_at.pop(who, None)
        satisfied = False
        try:
            satisfied = self._cond.wait_for(ready, timeout=timeout_s)
        finally:
            if satisfied:
                self._done_waiting(who)
            else:
                self._timed_out_at[who] = time.monotonic()
        return satisfied

    def _done_waiting(self, who: str) -> None:
        self.waiting.pop(who, None)
        self._timed_out_at.pop(who, None)

    def waiting_roles(self) -> dict[str, WaitState]:
        """Who waits now, or timed out waiting less than ``REWAIT_GRACE_S`` ago."""
        with self._cond:
            now = time.monotonic()
            return {
                who: state
                for who, state in self.waiting.items()
                if now - self._timed_out_at.get(who, now) <= REWAIT_GRACE_S
            }
