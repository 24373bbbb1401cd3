"""The worker actors of a Ray run, as one fleet (RLlib's ``EnvRunnerGroup``).

The fleet owns its actors and their restarts: Ray restarts a dead worker up to its own
budget (``max_worker_restarts``) and retries its loop there (the coordinator counts the
restart when it registers again); past the budget, or when its constructor raised, the
worker is dropped for good, the steps it took are counted as lost, and the run goes on
with the rest until none is left.

Workers come last when the cluster shrinks: a learner group that cannot be placed again
sheds workers, the highest-numbered first, down to ``min_workers`` (:meth:`shed_one`). A
shed worker starts again, as a new process, once the cluster has room for it, and with
``max_workers`` above ``n_workers`` the fleet grows into room that appears, a node that
joins say (:meth:`fill_room`, every ``ROOM_CHECK_S``).
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

from joyrl_ray.backends.node_probe import node_answers
from joyrl_ray.backends.placement import (
    Requests,
    actor_options,
    avoiding,
    enclosing_group,
    fits,
    worker_strategy,
)
from joyrl_ray.backends.planes import RayPlanes
from joyrl_ray.backends.runtime import RoleEvents, RoleResults
from joyrl_ray.config.general import GeneralConfig
from joyrl_ray.roles.worker.client import WorkerClient
from joyrl_ray.roles.worker.config import WorkerConfig
from joyrl_ray.roles.worker.kinds import worker_class
from joyrl_ray.roles.worker.worker import WorkerStats
from joyrl_ray.wire.handles import ANSI_ESCAPES, Call, RayHandle, RayStore, RoleDied, plain_line
from joyrl_ray.wire.where import node_here

DROP_TIMEOUT_S = 30.0
ROOM_CHECK_S = 5.0  # how often the cluster's free resources are checked for more workers


class WorkerFleet:
    """The run's worker actors: ``n_workers`` to start with, each with its own restart
    budget; down to ``min_workers`` when workers are shed, up to ``max_workers`` when room
    appears. Workers past ``n_workers`` are not restarted by Ray: when one dies (its node
    left, say) it counts as shed, and starts again when there is room."""

    def __init__(
        self, general: GeneralConfig, cfg: WorkerConfig, planes: RayPlanes, requests: Requests
    ) -> None:
        import ray

        self.n_workers = general.n_workers
        self.min_workers = general.min_workers or 1
        self.max_workers = general.max_workers or general.n_workers
        if enclosing_group() is not None:  # a trial's placement group holds its whole layout
            self.max_workers = self.n_workers
        self.max_restarts = general.max_worker_restarts
        self.planes, self.cfg, self.request = planes, cfg, requests.worker
        options = {
            **actor_options(requests.worker),
            "max_task_retries": -1,
            "scheduling_strategy": worker_strategy(general),
        }
        self.worker = ray.remote(worker_class(cfg))
        self.options = options
        self.worker_cls = self.worker.options(**options, max_restarts=general.max_worker_restarts)
        self.extra_cls = self.worker.options(**options, max_restarts=0)
        self.actors: dict[int, Any] = {i: self._new_actor(i) for i in range(self.n_workers)}
        self.drop_reasons: dict[int, str] = {}  # workers gone for good: why
        self.replaced: Counter[int] = Counter()  # per worker: new actors after a node cut off
        self.shed: set[int] = set()  # workers stopped to make room, or extra ones gone
        self.room_checked = time.monotonic()

    def _new_actor(self, index: int, avoid_node: str | None = None) -> Any:
        cls = self.worker_cls if index < self.n_workers else self.extra_cls
        if avoid_node is not None:
            cls = self.worker.options(
                **self.options, **avoiding(avoid_node), max_restarts=self._restarts_left(index)
            )
        return cls.remote(index, self.cfg, self.planes.worker_senders(index), RayStore())

    def _restarts_left(self, index: int) -> int:
        """What is left of worker ``index``'s restart budget, for a new actor of it."""
        if index >= self.n_workers:
            return 0
        if self.max_restarts < 0:
            return -1
        return max(self.max_restarts - self.replaced[index], 0)

    def _run(self, index: int) -> Call[WorkerStats]:
        return WorkerClient(RayHandle(f"worker {index}", actor=self.actors[index])).run()

    def run(self) -> list[Call[WorkerStats]]:
        """Start every worker's loop; each worker's call, by worker id."""
        return [self._run(i) for i in sorted(self.actors)]

    def running(self) -> list[int]:
        """The workers neither dropped nor shed, by id."""
        gone = self.shed | set(self.drop_reasons)
        return [i for i in sorted(self.actors) if i not in gone]

    def shed_one(self, room_for: str, events: RoleEvents, results: RoleResults) -> bool:
        """Stop the highest-numbered running worker so that ``room_for`` can be placed; the
        steps it held back are counted as lost. False when ``min_workers`` are left."""
        import ray

        running = self.running()
        if len(running) <= self.min_workers:
            return False
        index = running[-1]
        ray.kill(self.actors[index], no_restart=True)
        self._count_shed(index, results)
        events.log.append(
            f"worker {index} shed to make room for {room_for}; {results.workers_shed[-1]['lost']} "
            f"env steps it held back were lost; the run goes on with {len(running) - 1} "
            f"worker{'s' if len(running) > 2 else ''}"
        )
        return True

    def _count_shed(self, index: int, results: RoleResults) -> None:
        self.shed.add(index)
        lost, ip = self.planes.coordinator.shed_worker(index).result(DROP_TIMEOUT_S)
        results.steps_lost_with_workers += lost
        shed = {"worker": index, "at": round(time.time(), 3), "node": ip, "lost": lost}
        results.workers_shed.append(shed)
        self.planes.data.worker_dropped(index)

    def fill_room(self, events: RoleEvents, results: RoleResults) -> dict[int, Call[WorkerStats]]:
        """Every ``ROOM_CHECK_S``, while the cluster's free resources hold one more worker:
        start shed workers again (lowest-numbered first), then new ones up to
        ``max_workers``; their calls, by worker id."""
        import ray

        wanted = bool(self.shed) or len(self.actors) < self.max_workers
        if not wanted or time.monotonic() - self.room_checked < ROOM_CHECK_S:
            return {}
        self.room_checked = time.monotonic()
        free = dict(ray.available_resources())
        calls: dict[int, Call[WorkerStats]] = {}
        while fits(self.request, free):
            if self.shed:
                index = min(self.shed)
                self.shed.discard(index)
                line = f"worker {index}, shed earlier, starts again: the cluster has room for it"
                results.workers_returned.append({"worker": index, "at": round(time.time(), 3)})
            elif len(self.actors) < self.max_workers:
                index = len(self.actors)
                line = (
                    f"worker {index} starts: the cluster has room for it "
                    f"(general_cfg.max_workers={self.max_workers})"
                )
                results.workers_added.append({"worker": index, "at": round(time.time(), 3)})
            else:
                break
            for key, amount in self.request.items():
                free[key] = free.get(key, 0.0) - amount
            self.planes.coordinator.admit_worker(index).result(DROP_TIMEOUT_S)
            self.planes.data.worker_returned(index)
            self.actors[index] = self._new_actor(index)
            calls[index] = self._run(index)
            events.log.append(line)
        return calls

    def died(self, index: int, error: RoleDied, events: RoleEvents, results: RoleResults) -> None:
        """Worker ``index`` is gone for good (Ray restarts one within its budget by itself)."""
        if index in self.shed:  # stopped on purpose, and counted then
            return
        init_error = _init_error(error)
        if index >= self.n_workers and init_error is None:  # an extra worker: shed, not dropped
            self._count_shed(index, results)
            events.log.append(
                f"worker {index} (past n_workers={self.n_workers}) is gone "
                f"({plain_line(str(error))}); {results.workers_shed[-1]['lost']} env steps it "
                "held back were lost; it starts again when the cluster has room"
            )
            return
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

    def replace_hung(
        self, index: int, silent_s: float, node_id: str | None, results: RoleResults
    ) -> tuple[str, Call[WorkerStats] | None] | None:
        """Replace worker ``index``, which pushed nothing for ``silent_s`` while it waited on
        no call, on node ``node_id``: the log line, and the new actor's call if it has one.

        On a node that answers (an env that stopped answering) its process is killed: Ray
        restarts it within its budget and retries its loop, as after any death of its
        process (the coordinator counts what it held as lost when it registers again). On
        a node cut off (its raylet silent, :mod:`.node_probe`), Ray would restart it only
        once its health checks declare the node dead: the actor is ended and a new one,
        kept off that node, takes its place and its restart budget's next step. None when
        it is not running."""
        import ray

        if index not in self.running():
            return None
        results.workers_hung.append(index)
        said = f"worker {index} pushed nothing for {silent_s:g} s and waits on no call"
        budget_left = self.max_restarts < 0 or self.replaced[index] < self.max_restarts
        if budget_left and node_id is not None and _cut_off(node_id):
            ray.kill(self.actors[index], no_restart=True)
            self.replaced[index] += 1
            self.actors[index] = self._new_actor(index, avoid_node=node_id)
            line = (
                f"{said}, and its node ({node_id[:8]}) does not answer: taken as lost with "
                "that node, a new worker takes its place elsewhere"
            )
            return line, self._run(index)
        ray.kill(self.actors[index], no_restart=False)
        line = f"{said} (an env that stopped answering?): its process is killed, to be restarted"
        return line, None

    def end_unfinished(self, index: int, waited_s: float, results: RoleResults) -> str:
        """Kill worker ``index``, still running ``waited_s`` after the stop (stuck in an env
        call, say); the steps it held back are counted as lost."""
        import ray

        ray.kill(self.actors[index], no_restart=True)
        lost = self.planes.coordinator.drop_worker(index).result(DROP_TIMEOUT_S)
        results.steps_lost_with_workers += lost
        return (
            f"worker {index} still running {waited_s:g} s after the stop (stuck in an env "
            f"call?): ended; {lost} env steps it held back were lost"
        )

    def shutdown(self) -> None:
        import ray

        for actor in self.actors.values():
            ray.kill(actor, no_restart=True)


def _init_error(error: RoleDied) -> str | None:
    """The exception a role's constructor raised (its traceback's last line), if that is
    why it died; None when it died otherwise."""
    died: Any = error.__cause__
    if not getattr(died, "actor_init_failed", False):
        return None
    lines = [line for line in ANSI_ESCAPES.sub("", str(died)).splitlines() if line.strip()]
    return lines[-1].strip() if lines else "its constructor raised"


def _cut_off(node_id: str) -> bool:
    """Whether node ``node_id`` is cut off: not the driver's own (the driver answers for
    it), and its raylet silent."""
    return node_id != node_here()[0] and not node_answers(node_id)
