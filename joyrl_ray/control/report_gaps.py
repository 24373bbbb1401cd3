"""What workers' reports lost with a replay shard held, from the totals of their later ones.

A worker's report travels with its rows to its shard, which forwards it a little later; a
shard that dies takes the reports it had not forwarded yet with it, as it does their rows.
Each report carries what the worker's reports since its (re)start sum to, so the
coordinator knows, from any later report, what the lost ones held: their env steps were
collected, their rows sent to the shard (then lost with it) and their drops made.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from joyrl_ray.wire.messages import ReportTotals, WorkerReport

Start = tuple[int, int]  # (worker, incarnation)


class ReportGaps:
    """Per worker start: what its counted reports sum to, and what their totals say."""

    def __init__(self) -> None:
        self.counted: dict[Start, ReportTotals] = {}
        self.latest: dict[Start, ReportTotals] = {}
        self.shard: dict[int, int] = {}  # per worker: the replay shard that forwards its reports

    def record(self, report: WorkerReport, rows: int, shard: int) -> None:
        if report.totals is None:
            return
        start = (report.worker_id, report.incarnation)
        counted = self.counted.get(start, ReportTotals())
        self.counted[start] = counted.add(report.collected, rows, report.dropped)
        latest, new = self.latest.get(start, ReportTotals()), report.totals
        dropped = Counter(latest.dropped) | Counter(new.dropped)  # totals only grow
        self.latest[start] = ReportTotals(
            max(latest.transitions, new.transitions), max(latest.rows, new.rows), dict(dropped)
        )
        if shard >= 0:
            self.shard[report.worker_id] = shard

    def missing(self) -> list[tuple[Start, ReportTotals]]:
        """Per worker start, what reports that never came held (none: not listed)."""
        gaps = []
        for start, latest in self.latest.items():
            counted = self.counted[start]
            dropped = Counter(latest.dropped)
            dropped.subtract(counted.dropped)
            gap = ReportTotals(
                latest.transitions - counted.transitions,
                latest.rows - counted.rows,
                {k: v for k, v in dropped.items() if v > 0},
            )
            if gap.transitions or gap.rows or gap.dropped:
                gaps.append((start, gap))
        return gaps

    def account(self, gone: Callable[[int, int], bool]) -> tuple[int, Counter[str], Counter[int]]:
        """What the missing reports add: transitions collected, drops by reason (what a worker
        start that is ``gone`` held back: lost with it) and rows sent, by shard."""
        steps, dropped, rows = 0, Counter[str](), Counter[int]()
        for (worker, incarnation), gap in self.missing():
            steps += gap.transitions
            dropped.update(gap.dropped)
            rows[self.shard.get(worker, -1)] += gap.rows
            if gone(worker, incarnation):
                held = gap.transitions - gap.rows - sum(gap.dropped.values())
                dropped["lost_with_worker"] += held
        return steps, dropped, rows
