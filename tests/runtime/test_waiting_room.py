"""Who waits for what, as a stall report reads it from a role's waiting room.

A caller whose wait times out (the roles' loops wait 1 s at a time) asks again at once; a
report taken between its two calls must still name it, or a stalled run's message loses
"learner 0 waits for data" whenever the report lands in that gap.
"""

from __future__ import annotations

import threading
import time

import pytest

from joyrl_ray.wire import waiting
from joyrl_ray.wire.waiting import WaitingRoom


class Shard(WaitingRoom):
    def __init__(self) -> None:
        super().__init__()
        self.rows = 0

    def take(self, who: str, timeout_s: float) -> bool:
        with self._cond:
            return self._wait(who, "data", lambda: self.rows > 0, timeout_s)

    def put(self) -> None:
        with self._cond:
            self.rows += 1
            self._cond.notify_all()


def test_a_caller_between_two_timed_out_waits_is_still_reported_waiting() -> None:
    shard = Shard()
    assert shard.take("learner 0", 0.05) is False  # timed out: its loop would ask again
    assert list(shard.waiting_roles()) == ["learner 0"]
    assert shard.waiting_roles()["learner 0"].what == "data"


def test_a_caller_waiting_now_is_reported_and_one_served_is_not() -> None:
    shard = Shard()
    taker = threading.Thread(target=shard.take, args=("learner 0", 30.0))
    taker.start()
    deadline = time.monotonic() + 10
    while "learner 0" not in shard.waiting_roles() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert "learner 0" in shard.waiting_roles()
    shard.put()
    taker.join(10)
    assert not taker.is_alive()
    assert shard.waiting_roles() == {}


def test_the_wait_keeps_its_start_across_timed_out_calls() -> None:
    shard = Shard()
    shard.take("learner 0", 0.05)
    first = shard.waiting_roles()["learner 0"].since
    shard.take("learner 0", 0.05)
    assert shard.waiting_roles()["learner 0"].since == first


def test_a_caller_that_never_asks_again_drops_out_after_the_grace(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(waiting, "REWAIT_GRACE_S", 0.1)
    shard = Shard()
    shard.take("learner 0", 0.05)
    first = shard.waiting["learner 0"].since
    time.sleep(0.3)
    assert shard.waiting_roles() == {}
    shard.take("learner 0", 0.05)  # back after the grace: a new wait, from now
    assert shard.waiting_roles()["learner 0"].since > first
