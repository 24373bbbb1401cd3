"""One policy's books on its transitions: where every one its workers collected went.

Every transition a worker reports is *collected* here; the data plane counts what it
stored and dropped, these books what was lost with workers or never sent, so that
``collected == stored + sum(dropped)`` per policy, over the books and the policy's
data-plane actors. A single-agent run has one set of books (its transitions are its env
steps); a multi-agent run one per trained policy (its agents' steps).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from joyrl_ray.control.report_gaps import ReportGaps
from joyrl_ray.wire.messages import WorkerReport


class TransitionBooks:
    """Transitions collected, dropped by reason, and rows sent by replay shard."""

    def __init__(self, learning: bool) -> None:
        self.learning = learning  # False in test mode: nothing is stored
        self.collected = 0
        self.dropped: Counter[str] = Counter()
        # By replay shard: rows its workers sent and it acknowledged or still holds; at the
        # end, what a shard does not hold was lost with an earlier incarnation of it.
        self.rows_sent: Counter[int] = Counter()
        # Per worker: transitions counted but not yet delivered as rows or drops (the n-step
        # steps a worker holds back). Lost with the worker if it dies.
        self.owed: Counter[int] = Counter()
        self.gaps = ReportGaps()

    def count(self, report: WorkerReport, rows: int, shard: int, gone: bool) -> None:
        """Count a report's transitions: ``rows`` of them went to replay shard ``shard`` (-1:
        none, or the rollout queue), its drops are the worker's own and the rest it holds
        back; ``gone``: the process that sent it no longer counts, so what it held back is
        lost with it."""
        collected = report.collected
        self.gaps.record(report, rows, shard)
        self.collected += collected
        self.dropped.update(report.dropped)
        if shard >= 0:
            self.rows_sent[shard] += rows
        held = collected - rows - sum(report.dropped.values())
        if not self.learning:
            self.dropped["not_learned_in_test_mode"] += collected
        elif gone:
            self.dropped["lost_with_worker"] += held
        else:
            self.owed[report.worker_id] += held

    def lose_steps(self, worker_id: int) -> int:
        """The transitions ``worker_id`` held back, counted as lost with its process."""
        lost = self.owed.pop(worker_id, 0)
        if lost:
            self.dropped["lost_with_worker"] += lost
        return lost

    def lose_with_shard(self, shard: int, rows: int) -> None:
        """Rows replay shard ``shard`` lost in flight (it died during their insert)."""
        self.dropped["lost_with_shard"] += rows
        self.rows_sent[shard] -= rows

    def totals(
        self, gone: Callable[[int, int], bool]
    ) -> tuple[int, dict[str, int], dict[int, int]]:
        """Transitions collected, dropped by reason (none listed at 0) and rows sent by shard,
        with what reports lost with shards held."""
        steps, dropped, sent = self.gaps.account(gone)  # reports lost with shards
        dropped.update(self.dropped)
        sent.update(self.rows_sent)
        return self.collected + steps, {k: v for k, v in dropped.items() if v}, dict(sent)
