"""The coordinator's books on workers: which are in the run, which process of each counts,
and where every env step they report went.

A worker is *active* from its start until it is dropped or shed, and admitted again when
it returns (or joins, when the fleet grows). Each process after its first (Ray restarts it,
or a shed worker comes back) is a new *incarnation*: a report of an earlier one, still on
its way through a replay shard, comes too late to count (:meth:`WorkerLedger.gone`), and
what that process held back is lost with it. Every env step a worker reports is
*collected*; the data plane counts what it stored and dropped, the ledger what was lost
with workers or never sent. Apart from the coordinator because this is bookkeeping that
reads only the workers' reports; the coordinator calls it under its lock, and keeps the
run's counters, its stop and the mailboxes itself.
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Literal

from joyrl_ray.control.report_gaps import ReportGaps
from joyrl_ray.wire.messages import WorkerReport

#: How a worker's process starts: the first of a worker the run began with, the first of
#: one the fleet grew by, a shed worker's new process, or one Ray restarted.
StartKind = Literal["first", "joins", "back", "restarted"]


class WorkerLedger:
    """Per worker: in the run or not, its processes, where the newest runs, its last push
    and the env steps it holds back; for the run: env steps collected, dropped by reason,
    and rows sent by replay shard."""

    def __init__(self, n_workers: int, learning: bool) -> None:
        self.learning = learning  # False in test mode: nothing is stored
        self.active = set(range(n_workers))
        self.initial = n_workers  # more join when the fleet grows (max_workers)
        self.registered: set[int] = set()
        self.returning: set[int] = set()  # shed workers let back in, not registered yet
        self.ips: dict[int, str] = {}  # where each worker's newest process runs
        self.incarnations: Counter[int] = Counter()  # per worker: Ray's restarts of it
        self.last_push: dict[int, float] = {}
        self.collected = 0
        self.dropped: Counter[str] = Counter()
        # By replay shard: rows its workers sent and it acknowledged or still holds; at the
        # end, what a shard does not hold was lost with an earlier incarnation of it.
        self.rows_sent: Counter[int] = Counter()
        # Per worker: env steps counted but not yet delivered as rows or drops (the n-step
        # steps a worker holds back). Lost with the worker if it dies.
        self.owed: Counter[int] = Counter()
        self.gaps = ReportGaps()

    def start(self, worker_id: int, ip: str) -> StartKind:
        """A process of ``worker_id`` registers from ``ip``: which kind of start it is. A
        restarted one is a new incarnation (``admit`` made a returning one's)."""
        self.ips[worker_id] = ip
        self.last_push[worker_id] = time.monotonic()
        kind: StartKind
        if worker_id in self.returning:  # a shed worker's new process
            self.returning.discard(worker_id)
            kind = "back"
        elif worker_id in self.registered:
            self.incarnations[worker_id] += 1
            kind = "restarted"
        else:
            kind = "joins" if worker_id >= self.initial else "first"
        self.registered.add(worker_id)
        return kind

    def gone(self, worker: int, incarnation: int) -> bool:
        """Whether that process of ``worker`` no longer counts (replaced, or out of the run)."""
        return incarnation < self.incarnations[worker] or worker not in self.active

    def count(self, report: WorkerReport, rows: int, shard: int) -> bool:
        """Count a report's env steps: ``rows`` of them went to replay shard ``shard`` (-1:
        none, or the rollout queue), its drops are the worker's own and the rest it holds
        back. Returns whether the process that sent it is gone."""
        worker = report.worker_id
        # A report that reaches the coordinator after its worker was restarted or dropped
        # (it waited in a shard): what the worker held back died with that process.
        gone = self.gone(worker, report.incarnation)
        self.gaps.record(report, rows, shard)
        self.collected += report.env_steps
        self.dropped.update(report.dropped)
        if shard >= 0:
            self.rows_sent[shard] += rows
        if not gone:
            self.last_push[worker] = time.monotonic()
        held = report.env_steps - rows - sum(report.dropped.values())
        if not self.learning:
            self.dropped["not_learned_in_test_mode"] += report.env_steps
        elif gone:
            self.dropped["lost_with_worker"] += held
        else:
            self.owed[worker] += held
        return gone

    def lose_steps(self, worker_id: int) -> int:
        """The env steps ``worker_id`` held back, counted as lost with its process."""
        lost = self.owed.pop(worker_id, 0)
        if lost:
            self.dropped["lost_with_worker"] += lost
        return lost

    def drop(self, worker_id: int) -> int:
        """``worker_id`` leaves the run; returns the env steps lost with it."""
        lost = self.lose_steps(worker_id)
        self.active.discard(worker_id)
        self.last_push.pop(worker_id, None)
        return lost

    def admit(self, worker_id: int) -> None:
        """``worker_id`` is in the run: a new one, or a shed one whose next process is a new
        incarnation."""
        self.active.add(worker_id)
        if worker_id in self.registered:
            self.incarnations[worker_id] += 1
            self.returning.add(worker_id)

    def lose_with_shard(self, shard: int, rows: int) -> None:
        """Rows replay shard ``shard`` lost in flight (it died during their insert)."""
        self.dropped["lost_with_shard"] += rows
        self.rows_sent[shard] -= rows

    def totals(self) -> tuple[int, dict[str, int], dict[int, int]]:
        """Env steps collected, dropped by reason (none listed at 0) and rows sent by shard,
        with what reports lost with shards held."""
        steps, dropped, sent = self.gaps.account(self.gone)  # reports lost with shards
        dropped.update(self.dropped)
        sent.update(self.rows_sent)
        return self.collected + steps, {k: v for k, v in dropped.items() if v}, dict(sent)
