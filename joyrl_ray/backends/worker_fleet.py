"""The worker actors of a Ray run, as one fleet (RLlib's ``EnvRunnerGroup``).

The fleet owns its actors and their restarts: Ray restarts a dead worker up to its own
budget (``max_worker_restarts``) and retries its loop there (the coordinator counts the
restart when it registers again); past the budget, or when its constructor raised, the
worker is dropped for good, the steps it took are counted as lost, and the run goes on
with the rest until none is left.
"""

from __future__ import annotations

from typing import Any

from joyrl_ray.backends.placement import Requests, actor_options, worker_strategy
from joyrl_ray.backends.planes import RayPlanes
from joyrl_ray.backends.runtime import RoleEvents, RoleResults
from joyrl_ray.general_config import GeneralConfig
from joyrl_ray.roles.worker.client import WorkerClient
from joyrl_ray.roles.worker.config import WorkerConfig
from joyrl_ray.roles.worker.worker import Worker, WorkerStats
from joyrl_ray.wire.handles import ANSI_ESCAPES, Call, RayHandle, RayStore, RoleDied, plain_line

DROP_TIMEOUT_S = 30.0


class WorkerFleet:
    """``n_workers`` worker actors, each with its own restart budget."""

    def __init__(
        self, general: GeneralConfig, cfg: WorkerConfig, planes: RayPlanes, requests: Requests
    ) -> None:
        import ray

        self.n_workers = general.n_workers
        self.max_restarts = general.max_worker_restarts
        self.planes = planes
        worker_cls = ray.remote(Worker).options(
            **actor_options(requests.worker),
            max_restarts=general.max_worker_restarts,
            max_task_retries=-1,
            scheduling_strategy=worker_strategy(general),
        )
        self.actors = [
            worker_cls.remote(i, cfg, planes.sender(i), RayStore()) for i in range(self.n_workers)
        ]
        self.drop_reasons: dict[int, str] = {}  # workers gone for good: why

    def run(self) -> list[Call[WorkerStats]]:
        """Start every worker's loop; each worker's call, by worker id."""
        return [
            WorkerClient(RayHandle(f"worker {i}", actor=actor)).run()
            for i, actor in enumerate(self.actors)
        ]

    def died(self, index: int, error: RoleDied, events: RoleEvents, results: RoleResults) -> None:
        """Worker ``index`` is gone for good (Ray restarts one within its budget by itself)."""
        init_error = _init_error(error)
        if init_error is not None:  # Ray does not restart an actor whose constructor raised
            why = f"could not start: {init_error}"
        else:
            why = f"died past its restart budget ({self.max_restarts}): {plain_line(str(error))}"
        events.log.append(f"worker {index} {why}; the run goes on without it")
        self.drop_reasons[index] = why
        results.workers_dropped.append(index)
        lost = self.planes.coordinator.drop_worker(index).result(DROP_TIMEOUT_S)
        results.steps_lost_with_workers += lost
        self.planes.data.worker_dropped(index)
        if len(self.drop_reasons) == self.n_workers:
            # One line for the run's end: what became of the workers, alike reasons merged.
            by_reason: dict[str, list[str]] = {}
            for worker, reason in sorted(self.drop_reasons.items()):
                by_reason.setdefault(reason, []).append(str(worker))
            events.failure = "no worker left: " + "; ".join(
                f"worker{'s' if len(ids) > 1 else ''} {', '.join(ids)} {reason}"
                for reason, ids in by_reason.items()
            )
            events.failure_reason = "no_workers_left"

    def shutdown(self) -> None:
        import ray

        for actor in self.actors:
            ray.kill(actor, no_restart=True)


def _init_error(error: RoleDied) -> str | None:
    """The exception a role's constructor raised (its traceback's last line), if that is
    why it died; None when it died otherwise."""
    died: Any = error.__cause__
    if not getattr(died, "actor_init_failed", False):
        return None
    lines = [line for line in ANSI_ESCAPES.sub("", str(died)).splitlines() if line.strip()]
    return lines[-1].strip() if lines else "its constructor raised"
