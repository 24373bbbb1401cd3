"""The DataServer of an on-policy run: the synchronous rollout queue.

Each worker pushes one rollout per weights version; the learner takes, per iteration, one
fresh rollout from every active worker, joined in worker order (a seeded run learns from
the same joined rollout on either backend, however the pushes raced), and split by env
columns among the learners. A rollout made with other weights than the learner's current
version is dropped and counted. The queue learns the current version from the learner's
request, and the stop and lost workers from the coordinator and the runtime.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import NamedTuple

from joyrl_ray.batch import Batch, concat, real_steps, take_envs
from joyrl_ray.data.report_forwarder import CALL_TIMEOUT_S as REPORT_TIMEOUT_S
from joyrl_ray.data.report_forwarder import ReportSink
from joyrl_ray.data.role import DataPlaneRole
from joyrl_ray.heap import freeze_startup_heap
from joyrl_ray.wire.messages import (
    InsertAck,
    Placement,
    PushAck,
    RolloutGrant,
    TakenReport,
    WorkerReport,
)


class _Rollout(NamedTuple):
    version: int  # the weights version it was collected with
    steps: int  # env steps in it
    worker_id: int
    batch: Batch


@dataclass
class _Round:
    stop: bool = False
    shares: list[Batch | None] = field(default_factory=list)  # per rank
    served: set[int] = field(default_factory=set)
    env_steps: int = 0  # in its rollouts


@dataclass
class QueueStats:
    transitions_stored: int
    transitions_dropped: dict[str, int]
    busy_s: float
    buffer: dict[str, float] = field(default_factory=dict)  # the queue's depth figures


class RolloutQueue(DataPlaneRole):
    """Rollouts, queued until every active worker has sent one for the current version."""

    def __init__(
        self, *, n_workers: int, n_learners: int = 1, coordinator: ReportSink | None = None
    ) -> None:
        """``coordinator``: where each rollout's report goes (:meth:`push_and_report`)."""
        super().__init__("data server")
        self.coordinator = coordinator
        self.n_learners = n_learners
        self.active_workers = set(range(n_workers))
        self.rollouts: list[_Rollout] = []
        self.rounds: dict[int, _Round] = {}
        self.generation = 0
        self.stored = 0
        self.dropped: Counter[str] = Counter()
        self.busy_s = 0.0
        freeze_startup_heap()

    def push_rollout(self, worker_id: int, version: int, rollout: Batch) -> InsertAck:
        t0 = time.monotonic()
        with self._cond:
            steps = real_steps(rollout)  # an env's failed steps were dropped by its worker
            queued = 0
            if self.stop_reason is not None:
                self.dropped["after_stop"] += steps
            else:
                self.rollouts.append(_Rollout(version, steps, worker_id, rollout))
                queued = steps
            self._cond.notify_all()
        self.busy_s += time.monotonic() - t0
        return InsertAck(0, queued, False)

    def push_and_report(
        self, worker_id: int, version: int, rollout: Batch, report: WorkerReport, known_version: int
    ) -> PushAck:
        """Queue a rollout, then hand its worker's report to the coordinator, and answer with
        the coordinator's ack: one call of the worker's, so a worker killed as it pushes
        cannot leave steps here whose report never reaches the coordinator's books. The
        rollout is queued first: one whose report stops the run is in before the stop."""
        assert self.coordinator is not None, "a rollout queue that reports needs its coordinator"
        queued = self.push_rollout(worker_id, version, rollout)
        taken = TakenReport(report, real_steps(rollout), stored=queued.rows > 0)
        return self.coordinator.take_reports(-1, [taken], known_version).result(REPORT_TIMEOUT_S)

    def learner_started(self, generation: int) -> Placement:
        with self._cond:
            if generation > self.generation:
                self.generation = generation
                self.rounds.clear()
            return self.placement

    def take_rollouts(
        self, rank: int, round_id: int, version: int, timeout_s: float
    ) -> RolloutGrant:
        """Learner ``rank``'s env columns of this iteration's rollouts made with ``version``.

        Rank 0 (which alone publishes, so knows the current version) decides the round once
        a rollout of ``version`` from every active worker is in (also after the stop: the
        rollouts were made before it), or that learning is over; the other ranks wait for
        its decision. A round not decided by the deadline is not recorded: every rank asks
        for it again. Env columns that do not divide evenly among the learners are dropped
        and counted.
        """
        with self._cond:

            def ready() -> bool:
                if round_id in self.rounds:
                    return True
                stop = self.stop_reason is not None
                if rank == 0:
                    return self._complete(version) or stop
                return stop and not self._complete(version)  # else: rank 0 decides

            self._wait(f"learner {rank}", self.waits_for, ready, timeout_s)
            decided = self.rounds.get(round_id)
            if decided is None:
                if rank != 0 or not ready():
                    return RolloutGrant(None, rank != 0 and ready())
                decided = self._make_round(version)
                self.rounds[round_id] = decided
            share = decided.shares[rank] if decided.shares else None
            decided.served.add(rank)
            if len(decided.served) >= self.n_learners:
                self.rounds.pop(round_id, None)
            return RolloutGrant(share, decided.stop, decided.env_steps)

    waits_for = "rollouts from every worker"

    def _complete(self, version: int) -> bool:
        """A round of ``version`` can be made: one fresh rollout from every active worker."""
        fresh = sum(1 for r in self.rollouts if r.version == version)
        return fresh >= len(self.active_workers) > 0

    def _make_round(self, version: int) -> _Round:
        for stale in (r for r in self.rollouts if r.version != version):
            self.dropped["stale_rollout"] += stale.steps
        self.rollouts = sorted(
            (r for r in self.rollouts if r.version == version), key=lambda r: r.worker_id
        )
        count = len(self.active_workers)
        if len(self.rollouts) < count or not count:  # the run stopped first
            return _Round(stop=True)
        taken, self.rollouts = self.rollouts[:count], self.rollouts[count:]
        decided = self._split(taken)
        decided.env_steps = sum(r.steps for r in taken)
        return decided

    def _split(self, taken: list[_Rollout]) -> _Round:
        """``taken`` joined along the env axis, in equal env slices, one per learner."""
        joined = concat([r.batch for r in taken], axis=1)
        n_envs = joined["rewards"].shape[1]
        per_rank = n_envs // self.n_learners
        shares: list[Batch | None] = [
            take_envs(joined, r * per_rank, (r + 1) * per_rank) for r in range(self.n_learners)
        ]
        learned = sum(real_steps(share) for share in shares if share is not None)
        self.stored += learned
        uneven = real_steps(joined) - learned
        if uneven:
            self.dropped["uneven_learner_split"] += uneven
        return _Round(shares=shares)

    def add_worker(self, worker_id: int) -> None:
        """A worker joins (back from being shed, or new): iterations expect its rollouts."""
        with self._cond:
            self.active_workers.add(worker_id)
            self._cond.notify_all()

    def drop_worker(self, worker_id: int) -> None:
        """A worker is gone for good: iterations expect one rollout fewer."""
        with self._cond:
            self.active_workers.discard(worker_id)
            self._cond.notify_all()

    def finish(self) -> None:
        """At the end of a run: queued rollouts nobody learned from are dropped, counted."""
        with self._cond:
            for unused in self.rollouts:
                self.dropped["unused_at_stop"] += unused.steps
            self.rollouts = []

    def stats(self) -> QueueStats:
        with self._cond:
            return QueueStats(
                transitions_stored=self.stored,
                transitions_dropped={k: v for k, v in self.dropped.items() if v},
                busy_s=round(self.busy_s, 3),
                buffer=self._depth(),
            )

    def _depth(self) -> dict[str, float]:
        return {}
