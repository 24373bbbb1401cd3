"""A multi-agent run's data planes, one per policy, as the driver sees them: one.

Each policy's flow builds its own data plane (its replay shards or rollout queue) through a
:class:`PolicyFactory`: its actors are named by the policy, and they forward their workers'
reports to the coordinator naming the policy. :class:`JoinedPlanes` answers the driver's and
the backends' calls for all of them (placements, waits, reports still held, a worker
dropped or returned, an actor lost); their closing figures stay each policy's own
(:meth:`JoinedPlanes.stats_by_policy`).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from joyrl_ray.control.client import CoordinatorClient
from joyrl_ray.data.report_forwarder import ReportSink
from joyrl_ray.flows.base import ActorFactory, DataPlane, DataPlaneStats
from joyrl_ray.roles.learner.source import LearnerSource
from joyrl_ray.roles.worker.sender import WorkerSender
from joyrl_ray.wire.handles import Handle
from joyrl_ray.wire.messages import Placement, WaitState


class PolicyFactory:
    """A backend's actor factory for one policy's data plane."""

    def __init__(self, factory: ActorFactory, policy: str, sink: CoordinatorClient) -> None:
        self.factory, self.policy = factory, policy
        self.report_sink: ReportSink | None = sink if factory.report_sink is not None else None
        self.forward_every_s = factory.forward_every_s

    def start(
        self,
        cls: type,
        role: str,
        name: str,
        kwargs: dict[str, Any],
        *,
        callers: int,
        restartable: bool,
    ) -> Handle:
        return self.factory.start(
            cls,
            f"{role} of {self.policy}",
            f"{self.policy}-{name}",
            kwargs,
            callers=callers,
            restartable=restartable,
        )


class JoinedPlanes(DataPlane):
    """Several policies' data planes, answering as one."""

    def __init__(self, planes: dict[str, DataPlane]) -> None:
        super().__init__([client for plane in planes.values() for client in plane.clients])
        self.planes = planes

    def worker_sender(self, worker_id: int, coordinator: CoordinatorClient) -> WorkerSender:
        raise TypeError("a multi-agent run's worker has one sender per policy (senders)")

    def learner_source(self) -> LearnerSource:
        raise TypeError("a multi-agent run's learners each read their own policy's plane")

    def placements(self) -> list[Placement]:
        return [place for plane in self.planes.values() for place in plane.placements()]

    def waits(self) -> dict[str, WaitState]:
        waits: dict[str, WaitState] = {}
        for plane in self.planes.values():
            waits.update(plane.waits())
        return waits

    def flush_reports(self) -> None:
        for plane in self.planes.values():
            plane.flush_reports()

    def stats(self) -> DataPlaneStats:
        """The policies' figures summed (each one's: :meth:`stats_by_policy`)."""
        return join_stats(list(self.stats_by_policy().values()))

    def stats_by_policy(self) -> dict[str, DataPlaneStats]:
        return {policy: plane.stats() for policy, plane in self.planes.items()}

    def worker_dropped(self, worker_id: int) -> None:
        for plane in self.planes.values():
            plane.worker_dropped(worker_id)

    def worker_returned(self, worker_id: int) -> None:
        for plane in self.planes.values():
            plane.worker_returned(worker_id)

    def lost(self) -> str | None:
        for policy, plane in self.planes.items():
            lost = plane.lost()
            if lost is not None:
                return f"{lost} (policy {policy})"
        return None


def join_stats(stats: list[DataPlaneStats]) -> DataPlaneStats:
    """Several data planes' closing figures as one."""
    dropped: Counter[str] = Counter()
    for s in stats:
        dropped.update(s.transitions_dropped)
    return DataPlaneStats(
        transitions_stored=sum(s.transitions_stored for s in stats),
        transitions_dropped=dict(dropped),
        priorities_applied=sum(s.priorities_applied for s in stats),
        buffer={},
        busy_s=round(sum(s.busy_s for s in stats), 3),
        shards=[shard for s in stats for shard in s.shards],
    )
