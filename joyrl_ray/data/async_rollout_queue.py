"""The DataServer of an asynchronous on-policy run (APPO, IMPALA): a bounded rollout queue.

Workers never wait for the learner to finish an iteration: each reserves a place in the
queue before it collects a rollout (:meth:`AsyncRolloutQueue.wait_for_room`), then pushes
it with the weights version it acted with. Rollouts queued plus places reserved never
exceed ``capacity``: a worker that would overfill the queue waits for room (blocking in
its call on Ray, its turn passing in one process), so nothing is dropped for lack of room.
Learner rank 0 takes the ``batch_rollouts`` oldest rollouts per update, joined along the
env axis and split by env columns among the learners as the synchronous queue does. A
rollout more than ``max_policy_lag`` versions behind the learner's current version is
dropped and counted (``stale``); the learner corrects the lag of the others (V-trace).
"""

from __future__ import annotations

import time

from joyrl_ray.batch import Batch, real_steps
from joyrl_ray.data.report_forwarder import ReportSink
from joyrl_ray.data.rollout_queue import RolloutQueue, _Rollout, _Round
from joyrl_ray.wire.messages import InsertAck


class AsyncRolloutQueue(RolloutQueue):
    """Rollouts of any recent weights version, first in first out, at most ``capacity``."""

    waits_for = "queued rollouts"

    def __init__(
        self,
        *,
        n_workers: int,
        n_learners: int = 1,
        batch_rollouts: int,
        max_policy_lag: int,
        capacity: int,
        coordinator: ReportSink | None = None,
    ) -> None:
        if capacity < batch_rollouts:  # the config refuses it first; a learner would wait forever
            raise ValueError(f"capacity={capacity} < batch_rollouts={batch_rollouts}")
        super().__init__(n_workers=n_workers, n_learners=n_learners, coordinator=coordinator)
        self.batch_rollouts = batch_rollouts
        self.max_policy_lag = max_policy_lag
        self.capacity = capacity
        self.reserved: set[int] = set()  # workers holding a place for the rollout they collect
        self.learner_version = 0  # the newest version a learner asked with
        self.peak = 0  # the most rollouts queued plus places reserved, ever
        self.lags: list[int] = []  # of the rollouts learned from, in versions

    def _room(self) -> bool:
        return len(self.rollouts) + len(self.reserved) < self.capacity

    def wait_for_room(self, worker_id: int, timeout_s: float) -> InsertAck:
        """Reserve a place for ``worker_id``'s next rollout, waiting up to ``timeout_s`` for
        one; ``throttled`` when none came (the worker asks again before collecting)."""
        with self._cond:
            if worker_id not in self.reserved:  # a restarted worker keeps its place

                def ready() -> bool:
                    return self._room() or self.stop_reason is not None

                self._wait(f"worker {worker_id}", "room in the rollout queue", ready, timeout_s)
                if not self._room():
                    return InsertAck(-1, 0, True)
                self.reserved.add(worker_id)
                self.peak = max(self.peak, len(self.rollouts) + len(self.reserved))
            return InsertAck(-1, 0, False)

    def push_rollout(self, worker_id: int, version: int, rollout: Batch) -> InsertAck:
        """Queue a rollout in the place its worker reserved (a push without one waits for
        room first: the queue never holds more than ``capacity``)."""
        t0 = time.monotonic()
        steps = real_steps(rollout)  # an env's failed steps were dropped by its worker
        queued = 0
        with self._cond:
            if worker_id not in self.reserved and self.stop_reason is None:
                self.wait_for_room(worker_id, timeout_s=60.0)
            if self.stop_reason is not None:
                self.dropped["after_stop"] += steps
            elif worker_id not in self.reserved:
                self.dropped["no_room"] += steps  # never in the protocol; counted if it happens
            elif self._lag(version) > self.max_policy_lag:
                self.dropped["stale"] += steps
            else:
                self.rollouts.append(_Rollout(version, steps, worker_id, rollout))
                queued = steps
            self.reserved.discard(worker_id)
            self._cond.notify_all()
        self.busy_s += time.monotonic() - t0
        return InsertAck(0, queued, False)

    def _lag(self, version: int) -> int:
        return self.learner_version - version

    def _drop_stale(self) -> None:
        kept = []
        for r in self.rollouts:
            if self._lag(r.version) > self.max_policy_lag:
                self.dropped["stale"] += r.steps
            else:
                kept.append(r)
        if len(kept) < len(self.rollouts):
            self.rollouts = kept
            self._cond.notify_all()  # room for the workers waiting

    def _complete(self, version: int) -> bool:
        """Enough rollouts within the lag bound of ``version`` for one update."""
        self.learner_version = max(self.learner_version, version)
        self._drop_stale()
        return len(self.rollouts) >= self.batch_rollouts

    def _make_round(self, version: int) -> _Round:
        if not self._complete(version):  # the run stopped first
            return _Round(stop=True)
        count = self.batch_rollouts
        taken, self.rollouts = self.rollouts[:count], self.rollouts[count:]
        self.lags.extend(self._lag(r.version) for r in taken)
        self._cond.notify_all()
        return self._split(taken)

    def drop_worker(self, worker_id: int) -> None:
        """A worker is gone for good: its place is free again."""
        with self._cond:
            self.reserved.discard(worker_id)
            self.active_workers.discard(worker_id)
            self._cond.notify_all()

    def _depth(self) -> dict[str, float]:
        lags = self.lags or [0]
        return {
            "rollout_queue_peak": self.peak,
            "rollout_queue_capacity": self.capacity,
            "rollout_lag_mean": round(sum(lags) / len(lags), 3),
            "rollout_lag_max": max(lags),
        }
