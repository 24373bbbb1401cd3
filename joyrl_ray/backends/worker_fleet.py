"""The worker actors of a Ray run, as one fleet (RLlib's ``EnvRunnerGroup``).

The fleet owns its actors and their restarts: Ray restarts a dead worker up to its own
budget (``max_worker_restarts``) and retries its loop there (the coordinator counts the
restart when it registers again); past the budget, or when its constructor raised, the
worker is dropped for good, the steps it took are counted as lost, and the run goes on
with the rest until none is left.

Workers come last when the cluster shrinks: a learner group that cannot be placed again
sheds workers, the highest-numbered first and never the last one (:meth:`shed_one`). A shed
worker starts again, as a new process, once the cluster has room for it
(:meth:`bring_back`, checked every ``ROOM_CHECK_S``).
"""

from __future__ import annotations

import time
from typing import Any

from joyrl_ray.backends.placement import Requests, actor_options, fits, worker_strategy
from joyrl_ray.backends.planes import RayPlanes
from joyrl_ray.backends.runtime import RoleEvents, RoleResults
from joyrl_ray.general_config import GeneralConfig
from joyrl_ray.roles.worker.client import WorkerClient
from joyrl_ray.roles.worker.config import WorkerConfig
from joyrl_ray.roles.worker.worker import Worker, WorkerStats
from joyrl_ray.wire.handles import ANSI_ESCAPES, Call, RayHandle, RayStore, RoleDied, plain_line

DROP_TIMEOUT_S = 30.0
ROOM_CHECK_S = 5.0  # how often the cluster's free resources are checked for a shed worker


class WorkerFleet:
    """``n_workers`` worker actors, each with its own restart budget."""

    def __init__(
        self, general: GeneralConfig, cfg: WorkerConfig, planes: RayPlanes, requests: Requests
    ) -> None:
        import ray

        self.n_workers = general.n_workers
        self.max_restarts = general.max_worker_restarts
        self.planes, self.cfg, self.request = planes, cfg, requests.worker
        self.worker_cls = worker_cls = ray.remote(Worker).options(
            **actor_options(requests.worker),
            max_restarts=general.max_worker_restarts,
            max_task_retries=-1,
            scheduling_strategy=worker_strategy(general),
        )
        self.actors = [
            worker_cls.remote(i, cfg, planes.sender(i), RayStore()) for i in range(self.n_workers)
        ]
        self.drop_reasons: dict[int, str] = {}  # workers gone for good: why
        self.shed: set[int] = set()  # workers stopped to make room for the learner group
        self.room_checked = time.monotonic()

    def run(self) -> list[Call[WorkerStats]]:
        """Start every worker's loop; each worker's call, by worker id."""
        return [
            WorkerClient(RayHandle(f"worker {i}", actor=actor)).run()
            for i, actor in enumerate(self.actors)
        ]

    def running(self) -> list[int]:
        """The workers neither dropped nor shed, by id."""
        gone = self.shed | set(self.drop_reasons)
        return [i for i in range(self.n_workers) if i not in gone]

    def shed_one(self, room_for: str, events: RoleEvents, results: RoleResults) -> bool:
        """Stop the highest-numbered running worker so that ``room_for`` can be placed; the
        steps it held back are counted as lost. False when one worker or none is left
        (the run needs one)."""
        import ray

        running = self.running()
        if len(running) <= 1:
            return False
        index = running[-1]
        self.shed.add(index)
        ray.kill(self.actors[index], no_restart=True)
        lost, ip = self.planes.coordinator.shed_worker(index).result(DROP_TIMEOUT_S)
        results.steps_lost_with_workers += lost
        shed = {"worker": index, "at": round(time.time(), 3), "node": ip, "lost": lost}
        results.workers_shed.append(shed)
        self.planes.data.worker_dropped(index)
        events.log.append(
            f"worker {index} shed to make room for {room_for}; {lost} env steps it held back "
            f"were lost; the run goes on with {len(running) - 1} "
            f"worker{'s' if len(running) > 2 else ''}"
        )
        return True

    def bring_back(self, events: RoleEvents, results: RoleResults) -> dict[int, Call[WorkerStats]]:
        """Start shed workers again, lowest-numbered first, while the cluster's free
        resources hold one more (every ``ROOM_CHECK_S``); their calls, by worker id."""
        import ray

        if not self.shed or time.monotonic() - self.room_checked < ROOM_CHECK_S:
            return {}
        self.room_checked = time.monotonic()
        free = dict(ray.available_resources())
        calls: dict[int, Call[WorkerStats]] = {}
        for index in sorted(self.shed):
            if not fits(self.request, free):
                break
            for key, amount in self.request.items():
                free[key] = free.get(key, 0.0) - amount
            self.shed.discard(index)
            self.planes.coordinator.readmit_worker(index).result(DROP_TIMEOUT_S)
            self.planes.data.worker_returned(index)
            sender = self.planes.sender(index)
            self.actors[index] = self.worker_cls.remote(index, self.cfg, sender, RayStore())
            calls[index] = WorkerClient(
                RayHandle(f"worker {index}", actor=self.actors[index])
            ).run()
            results.workers_returned.append({"worker": index, "at": round(time.time(), 3)})
            events.log.append(
                f"worker {index}, shed earlier, starts again: the cluster has room for it"
            )
        return calls

    def died(self, index: int, error: RoleDied, events: RoleEvents, results: RoleResults) -> None:
        """Worker ``index`` is gone for good (Ray restarts one within its budget by itself)."""
        if index in self.shed:  # stopped on purpose, and counted then
            return
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
        if not self.running():
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
