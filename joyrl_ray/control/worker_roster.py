"""The coordinator's roster of workers: which are in the run, and which process of each counts.

A worker is *active* from its start until it is dropped or shed, and admitted again when
it returns (or joins, when the fleet grows). Each process after its first (Ray restarts it,
or a shed worker comes back) is a new *incarnation*: a report of an earlier one, still on
its way through a replay shard, comes too late to count (:meth:`WorkerRoster.gone`), and
what that process held back is lost with it (the policies' books say how much, see
:mod:`joyrl_ray.control.transition_books`). Apart from the coordinator because this is
bookkeeping that reads only the workers' starts; the coordinator calls it under its lock.
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Literal

#: How a worker's process starts: the first of a worker the run began with, the first of
#: one the fleet grew by, a shed worker's new process, or one Ray restarted.
StartKind = Literal["first", "joins", "back", "restarted"]


class WorkerRoster:
    """Per worker: in the run or not, its processes, where the newest runs, its last push."""

    def __init__(self, n_workers: int) -> None:
        self.active = set(range(n_workers))
        self.initial = n_workers  # more join when the fleet grows (max_workers)
        self.registered: set[int] = set()
        self.returning: set[int] = set()  # shed workers let back in, not registered yet
        self.ips: dict[int, str] = {}  # where each worker's newest process runs
        self.incarnations: Counter[int] = Counter()  # per worker: Ray's restarts of it
        self.last_push: dict[int, float] = {}

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

    def pushed(self, worker: int) -> None:
        """A report of ``worker``'s current process arrived."""
        self.last_push[worker] = time.monotonic()

    def drop(self, worker_id: int) -> None:
        """``worker_id`` leaves the run."""
        self.active.discard(worker_id)
        self.last_push.pop(worker_id, None)

    def admit(self, worker_id: int) -> None:
        """``worker_id`` is in the run: a new one, or a shed one whose next process is a new
        incarnation."""
        self.active.add(worker_id)
        if worker_id in self.registered:
            self.incarnations[worker_id] += 1
            self.returning.add(worker_id)
