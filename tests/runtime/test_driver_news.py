"""A waiting driver hears of a checkpoint, and of the stop, when it comes.

On Ray the driver waits on the coordinator's ``wait_for_news`` beside its roles, so that a
checkpoint is written and evaluated when the learner hands it in, not at the driver's next
periodic drain. Here a real thread waits as the driver does, on a real coordinator, with a
deadline far past the test's own patience: a checkpoint must end the wait, then a stop
must end the next one, and a wait for news already seen must not end early.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future

import pytest

from joyrl_ray.control.coordinator import Coordinator, StopRule
from joyrl_ray.wire.handles import LocalStore
from joyrl_ray.wire.messages import CheckpointRef

NEVER_S = 600.0  # the waiter's own deadline: reached only if the news never woke it
PATIENCE_S = 30.0  # how long the test waits for the waiter to answer
STILL_WAITING_S = 1.0  # how long a waiter with nothing new must keep waiting


def _wait_in_thread(server: Coordinator, seen: int) -> Future[int]:
    answer: Future[int] = Future()

    def wait() -> None:
        answer.set_result(server.wait_for_news(seen, NEVER_S))

    threading.Thread(target=wait, daemon=True).start()
    return answer


def _checkpoint(updates: int) -> CheckpointRef:
    return CheckpointRef(updates, LocalStore().put(b"state"), True)


def test_a_waiting_driver_is_woken_by_a_checkpoint_and_then_by_the_stop() -> None:
    server = Coordinator(stop_rule=StopRule(), n_workers=1, learning=True, store=LocalStore())
    assert server.wait_for_news(0, 0.0) == 0  # nothing yet: the wait runs out

    first = _wait_in_thread(server, seen=0)
    server.submit_checkpoint(_checkpoint(2))
    seen = first.result(timeout=PATIENCE_S)
    assert seen == 1
    assert [c.updates for c in server.drain_reports().checkpoints] == [2]

    # News already seen does not end a wait; the stop does.
    second = _wait_in_thread(server, seen=seen)
    with pytest.raises(TimeoutError):  # still waiting a while later: nothing new came
        second.result(timeout=STILL_WAITING_S)
    server.request_stop("max_env_steps")
    assert second.result(timeout=PATIENCE_S) == seen + 1
    assert server.drain_reports().stop_reason == "max_env_steps"
