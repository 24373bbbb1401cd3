"""The two backends: the same roles as plain objects in one process, or as Ray actors.

Both implement :class:`Runtime`, the one interface the driver loop (:mod:`joyrl_ray.driver`)
talks to: the coordinator's client, the data plane's placements, waits, replay contents
and stats, ``advance(timeout_s)`` (make progress and return what happened to the roles
since the last call), ``finished`` and ``shutdown()``.

On Ray, the runtime is also where roles are kept healthy (as RLlib's actor manager does):
each worker has its own restart budget (Ray restarts the process, the runtime resubmits
its loop; past the budget it is dropped and the run goes on without it), the learner
group is restarted as a whole, from the driver's last checkpoint, when any learner dies,
and Ray restarts a replay shard that died, empty.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from concurrent import futures
from dataclasses import dataclass, field
from typing import Any, Protocol

import gymnasium as gym
import numpy as np

from joyrl_ray.clients import EvaluatorClient, LearnerClient, WorkerClient
from joyrl_ray.config import RunConfig
from joyrl_ray.evaluator import EvalResult, OnlineEvaluator
from joyrl_ray.handles import (
    Call,
    LocalHandle,
    LocalStore,
    ObjectStore,
    RayCall,
    RayHandle,
    RayStore,
    RoleDied,
    RoleError,
    RoleFailed,
    ThreadCall,
    ThreadHandle,
    first_line,
)
from joyrl_ray.learner import Learner, LearnerResult, LearnerStats
from joyrl_ray.messages import Placement, WaitState
from joyrl_ray.placement import (
    Requests,
    actor_options,
    data_server_options,
    learner_group,
    wait_for_death,
    worker_strategy,
)
from joyrl_ray.plane_clients import (
    CoordinatorClient,
    DataPlaneClient,
    DataServerClient,
    LearnerLinks,
    RolloutQueueClient,
)
from joyrl_ray.planes import LocalPlanes, PlaneSetup, RayPlanes
from joyrl_ray.worker import Worker, WorkerStats

Spaces = tuple[gym.Space, gym.Space]
PLACEMENT_TIMEOUT_S = 60.0
NODE_DEATH_WAIT_S = 90.0  # Ray's node health checks: 5 misses, 3 s apart, 10 s timeouts
CALL_TIMEOUT_S = 60.0


@dataclass
class LearnerSetup:
    """What the learner group starts from."""

    spaces: Spaces
    start_state: bytes | None  # a resumed run's checkpoint
    latest_state: Callable[[], bytes | None]  # the driver's newest checkpoint (for restarts)


@dataclass
class RoleEvents:
    """What happened to the roles during one ``advance``."""

    log: list[str] = field(default_factory=list)
    failure: str | None = None  # the run cannot go on: why (one line)
    failure_reason: str | None = None  # stop_reason to record


@dataclass
class RoleResults:
    workers: dict[int, WorkerStats] = field(default_factory=dict)
    learners: dict[int, LearnerResult] = field(default_factory=dict)
    workers_dropped: list[int] = field(default_factory=list)
    steps_lost_with_workers: int = 0
    learner_restarts: int = 0

    def learner_stats(self) -> list[LearnerStats]:
        return [r.stats for _, r in sorted(self.learners.items())]


@dataclass
class DataPlaneStats:
    """The data plane's closing figures, summed over its actors (and each shard's)."""

    transitions_stored: int
    transitions_dropped: dict[str, int]
    priorities_applied: int
    buffer: dict[str, float]
    busy_s: float
    shards: list[dict[str, Any]]


class Runtime(Protocol):
    """What the driver asks of a backend."""

    coordinator: CoordinatorClient
    data_plane: list[DataPlaneClient]
    evaluator: EvaluatorClient | None
    store: ObjectStore
    results: RoleResults
    finished: bool

    def advance(self, timeout_s: float) -> RoleEvents: ...

    def evaluate(
        self, weights: dict[str, np.ndarray], updates: int, env_steps: int
    ) -> Call[EvalResult]: ...

    def data_plane_placements(self) -> list[Placement]: ...

    def data_plane_waits(self) -> dict[str, WaitState]: ...

    def buffer_states(self) -> list[dict[str, np.ndarray]]: ...

    def data_plane_stats(self) -> DataPlaneStats: ...

    def flush_reports(self) -> None: ...

    def shutdown(self) -> None: ...


class _DataPlaneCalls:
    """The driver's calls into the data plane and the evaluator, the same on both backends."""

    data_plane: list[DataPlaneClient]
    evaluator: EvaluatorClient | None

    def evaluate(
        self, weights: dict[str, np.ndarray], updates: int, env_steps: int
    ) -> Call[EvalResult]:
        assert self.evaluator is not None
        call = self.evaluator.evaluate(weights, updates, env_steps)
        self._watch(call)
        return call

    def _watch(self, call: Call[Any]) -> None:
        """The runtime's ``advance`` also wakes when ``call`` answers (Ray only)."""

    def data_plane_placements(self) -> list[Placement]:
        """Where the data plane's actors run (those that answer)."""
        placements = []
        for call in [actor.where() for actor in self.data_plane]:
            try:
                placements.append(call.result(CALL_TIMEOUT_S))
            except RoleError:
                continue
        return placements

    def data_plane_waits(self) -> dict[str, WaitState]:
        waits: dict[str, WaitState] = {}
        for actor in self.data_plane:
            try:
                waits.update(actor.waiting_roles().result(CALL_TIMEOUT_S))
            except RoleError:  # a shard being restarted waits for nothing
                continue
        return waits

    def buffer_states(self) -> list[dict[str, np.ndarray]]:
        """Every replay shard's contents (a dead shard raises: its replay is gone)."""
        calls = [a.buffer_state() for a in self.data_plane if isinstance(a, DataServerClient)]
        return [call.result(CALL_TIMEOUT_S) for call in calls]

    def flush_reports(self) -> None:
        """The workers' reports still in replay shards, to the coordinator (before the
        driver's last drain). A shard that died took its reports with it."""
        shards = [a for a in self.data_plane if isinstance(a, DataServerClient)]
        calls = [shard.flush_reports(CALL_TIMEOUT_S) for shard in shards]
        for call in calls:
            try:
                call.result(CALL_TIMEOUT_S + 5)
            except RoleError:
                continue

    def data_plane_stats(self) -> DataPlaneStats:
        stored, priorities, busy = 0, 0, 0.0
        dropped: dict[str, int] = {}
        buffer: dict[str, float] = {}
        shards: list[dict[str, Any]] = []
        for actor in self.data_plane:
            if isinstance(actor, RolloutQueueClient):
                actor.finish().result(CALL_TIMEOUT_S)
                q = actor.stats().result(CALL_TIMEOUT_S)
                stored, busy = stored + q.transitions_stored, busy + q.busy_s
                for k, v in q.transitions_dropped.items():
                    dropped[k] = dropped.get(k, 0) + v
                buffer.update(q.buffer)
                continue
            s = actor.stats().result(CALL_TIMEOUT_S)
            stored, busy = stored + s.transitions_stored, busy + s.busy_s
            priorities += s.priorities_applied
            for k, v in s.transitions_dropped.items():
                dropped[k] = dropped.get(k, 0) + v
            for k, x in s.buffer.items():
                buffer[k] = buffer.get(k, 0.0) + x
            shards.append(
                {
                    "shard": s.shard,
                    "stored": s.transitions_stored,
                    "dropped": sum(s.transitions_dropped.values()),
                    "priorities_applied": s.priorities_applied,
                    "busy_s": s.busy_s,
                }
            )
        return DataPlaneStats(stored, dropped, priorities, buffer, round(busy, 3), shards)


class LocalRuntime(_DataPlaneCalls):
    """``mp_backend: single``: workers, learner and evaluator take turns in this process."""

    def __init__(
        self,
        cfg: RunConfig,
        setup: PlaneSetup,
        learner: LearnerSetup | None,
        spaces: Spaces,
    ) -> None:
        general = cfg.general
        self.store: ObjectStore = LocalStore()
        self.planes = LocalPlanes(setup, self.store)
        self.data_plane = self.planes.data_plane
        self.server = self.planes.server
        self.coordinator = self.planes.coordinator
        shards, queue = self.planes.shards, self.planes.queue
        self.learner = None
        if learner is not None:
            links = LearnerLinks(self.coordinator, shards, queue, self.store)
            self.learner = Learner(
                cfg,
                links,
                learner.spaces,
                start_state=learner.start_state,
                threads=max(1, int(general.learner_num_cpus)),
            )
            self.learner.start(None)
        self.workers = [
            Worker(i, cfg, self.planes.link(i), self.store)
            for i in range(general.n_workers)
        ]
        for worker in self.workers:
            worker.start()
        self.evaluator: EvaluatorClient | None = None
        self._online_evaluator: OnlineEvaluator | None = None
        if learner is not None and general.online_eval:
            self._online_evaluator = OnlineEvaluator(cfg, spaces)
            self.evaluator = EvaluatorClient(LocalHandle(self._online_evaluator, "Evaluator"))
        self.results = RoleResults()
        self.finished = False
        self._stepping = list(self.workers)
        self._learning = self.learner is not None
        self._failed = False  # a role raised: its state is not to be trusted
        self._news_seen = 0

    def advance(self, timeout_s: float) -> RoleEvents:
        """Give every role turns for ``timeout_s``; a role that raises ends the run, as on Ray."""
        events = RoleEvents()
        deadline = time.monotonic() + timeout_s
        while not self.finished and time.monotonic() < deadline:
            role = "worker"
            try:
                self._stepping = [w for w in self._stepping if w.step(0.0)]
                role = "learner"
                learner = self.learner
                while learner is not None and self._learning:
                    status = learner.train_step(0.0)
                    if status != "learned":
                        self._learning = status != "stopped"
                        break
            except Exception as exc:  # the run stops with the error named, nothing lost
                events.failure = f"{role} failed: {first_line(exc)}"
                events.failure_reason = f"{role}_error"
                self.server.request_stop(events.failure_reason, events.failure)
                self._failed = True
                self._finish()
                break
            if not self._stepping and not self._learning:
                self._finish()
            if self.server.news_seq != self._news_seen:  # a checkpoint or the stop: to the driver
                self._news_seen = self.server.news_seq
                break
        return events

    def _finish(self) -> None:
        for worker in self.workers:
            if not self._failed:
                self.results.workers[worker.worker_id] = worker.finish()
            worker.close()
        if self.learner is not None and not self._failed:
            self.results.learners[0] = self.learner.finish()
        self.finished = True

    def shutdown(self) -> None:
        if not self.finished:
            self.server.request_stop("shutdown")
            self._finish()
        if self._online_evaluator is not None:
            self._online_evaluator.close()


class RayRuntime(_DataPlaneCalls):
    """``mp_backend: ray``: every role an actor, each running its own loop."""

    def __init__(
        self,
        cfg: RunConfig,
        setup: PlaneSetup,
        learner: LearnerSetup | None,
        spaces: Spaces,
        requests: Requests,
    ) -> None:
        import ray

        self.ray = ray
        self.cfg = cfg
        general = cfg.general
        self.store: ObjectStore = RayStore()
        self.planes = RayPlanes(
            setup,
            max_pushes_in_flight=general.max_pushes_in_flight,
            options=data_server_options(general),
        )
        self.plane_actors = self.planes.actors
        self.data_plane = self.planes.data_plane
        self.coordinator_actor = self.planes.coordinator_actor
        self.coordinator = self.planes.coordinator
        self.links = self.planes.learner_links()
        self.requests = requests
        self.learner_setup = learner
        self.results = RoleResults()
        self.drop_reasons: dict[int, str] = {}  # workers gone for good: why
        self.runs: dict[Any, tuple[str, int]] = {}  # call -> (role, index)
        self.learners: list[Any] = []
        self.learner_generation = 0
        self.group: Any = None
        if learner is not None:  # reserved first, so that workers cannot take its resources
            self.group = learner_group(general, requests.learner or {})
            # Created before the workers, so that it gets one of the processes Ray prestarts:
            # on-policy workers wait for the learner's first weights, and the learner has
            # more to start (its optimizer imports torch's compiler: about a CPU-second).
            self._create_learners(learner.start_state)
        # Ray restarts a dead worker (up to its own budget) and runs its loop again there.
        worker_cls = ray.remote(Worker).options(
            **actor_options(requests.worker),
            max_restarts=general.max_worker_restarts,
            max_task_retries=-1,
            scheduling_strategy=worker_strategy(general),
        )
        self.workers = [
            worker_cls.remote(i, cfg, self.planes.link(i), RayStore())
            for i in range(general.n_workers)
        ]
        for i, actor in enumerate(self.workers):
            self._submit(WorkerClient(RayHandle(f"worker {i}", actor=actor)).run(), "worker", i)
        if learner is not None:  # workers and learners start side by side, neither waits
            self._run_learners()
        # The online evaluator lives in the driver's process, on a thread of its own: torch
        # is imported there already, the checkpoints' weights arrive there, and no extra
        # process competes with the workers and learners while they start.
        self.evaluator: EvaluatorClient | None = None
        self._evaluator_thread: ThreadHandle | None = None
        self._evaluating: Call[Any] | None = None
        # The coordinator's answer once a checkpoint or the stop comes (see advance).
        self._news: Call[int] | None = None
        self._news_seen = 0
        self._news_ok = True
        if learner is not None and general.online_eval:
            self._evaluator_thread = ThreadHandle(OnlineEvaluator(cfg, spaces), "Evaluator")
            self.evaluator = EvaluatorClient(self._evaluator_thread)
        self.finished = False

    def _watch(self, call: Call[Any]) -> None:
        self._evaluating = call

    # ----- roles -----
    def _submit(self, call: Call[Any], role: str, index: int) -> None:
        self.runs[call] = (role, index)

    def _start_learners(self, start_state: bytes | None) -> None:
        """Create the learner group in its placement group and start every rank's loop."""
        self._create_learners(start_state)
        self._run_learners()

    def _create_learners(self, start_state: bytes | None) -> None:
        """The learner actors, in the group's placement group (RoleDied if it cannot be placed)."""
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        general = self.cfg.general
        assert self.learner_setup is not None
        self.learner_generation += 1
        ready, _ = self.ray.wait([self.group.ready()], timeout=PLACEMENT_TIMEOUT_S)
        if not ready:
            raise RoleDied(
                f"the learners' placement group ({general.n_learners} x "
                f"{self.requests.learner}) could not be placed within {PLACEMENT_TIMEOUT_S:g} s"
            )
        state_ref = self.ray.put(start_state) if start_state is not None else None
        options = actor_options(self.requests.learner or {})
        world = general.n_learners
        self.learners = [
            self.ray.remote(Learner)
            .options(
                **options,
                max_restarts=0,
                scheduling_strategy=PlacementGroupSchedulingStrategy(
                    placement_group=self.group, placement_group_bundle_index=rank
                ),
            )
            .remote(
                self.cfg,
                self.links,
                self.learner_setup.spaces,
                rank=rank,
                world_size=world,
                generation=self.learner_generation,
                start_state=state_ref,
                threads=max(1, int(general.learner_num_cpus)),
            )
            for rank in range(world)
        ]

    def _run_learners(self) -> None:
        """Start every rank's loop (rank 0 first names the address the group meets at)."""
        clients = [
            LearnerClient(RayHandle(f"learner {rank}", actor=a))
            for rank, a in enumerate(self.learners)
        ]
        address = clients[0].rendezvous().result(timeout_s=120) if len(clients) > 1 else None
        for rank, client in enumerate(clients):
            self._submit(client.run(address), "learner", rank)

    def _restart_learners(self, why: str, events: RoleEvents) -> None:
        general = self.cfg.general
        for call, (role, _) in list(self.runs.items()):
            if role == "learner":
                del self.runs[call]
        wait_for_death(self.learners, NODE_DEATH_WAIT_S)  # a lost node: until Ray knows it
        for actor in self.learners:
            self.ray.kill(actor, no_restart=True)
        if self.results.learner_restarts >= general.max_learner_restarts:
            events.failure = (
                f"the learner group failed {self.results.learner_restarts + 1} times "
                f"(general_cfg.max_learner_restarts={general.max_learner_restarts}); last: {why}"
            )
            events.failure_reason = "learner_failed"
            return
        self.results.learner_restarts += 1
        assert self.learner_setup is not None
        state = self.learner_setup.latest_state() or self.learner_setup.start_state
        events.log.append(
            f"learner died ({why}); restarting the learner group from "
            f"{'its last checkpoint' if state else 'scratch (no checkpoint yet)'} "
            f"(restart {self.results.learner_restarts} of {general.max_learner_restarts})"
        )
        try:
            self._start_learners(state)
        except RoleDied as exc:  # e.g. its pinned node was lost and no other node can hold it
            events.failure = f"the learner group could not be restarted: {exc}"
            events.failure_reason = "learner_failed"

    def _worker_died(self, index: int, error: RoleDied, events: RoleEvents) -> None:
        """Ray restarts a dead worker and retries its loop by itself (the coordinator counts
        the restart when it registers again); this error means it is gone for good."""
        init_error = _init_error(error)
        if init_error is not None:  # Ray does not restart an actor whose constructor raised
            why = f"could not start: {init_error}"
        else:
            budget = self.cfg.general.max_worker_restarts
            why = f"died past its restart budget ({budget}): {_plain(str(error))}"
        events.log.append(f"worker {index} {why}; the run goes on without it")
        self.drop_reasons[index] = why
        self.results.workers_dropped.append(index)
        self.results.steps_lost_with_workers += self.coordinator.drop_worker(index).result(30)
        for actor in self.data_plane:
            if isinstance(actor, RolloutQueueClient):
                actor.drop_worker(index).result(30)
        if len(self.drop_reasons) == self.cfg.general.n_workers:
            # One line for the run's end: what became of the workers, alike reasons merged.
            by_reason: dict[str, list[str]] = {}
            for worker, reason in sorted(self.drop_reasons.items()):
                by_reason.setdefault(reason, []).append(str(worker))
            events.failure = "no worker left: " + "; ".join(
                f"worker{'s' if len(ids) > 1 else ''} {', '.join(ids)} {reason}"
                for reason, ids in by_reason.items()
            )
            events.failure_reason = "no_workers_left"

    def advance(self, timeout_s: float) -> RoleEvents:
        """Wait up to ``timeout_s`` for a role to end, for the evaluation running to answer
        or for news for the driver (a checkpoint, the stop); handle what ended."""
        events = RoleEvents()
        if not self.runs:
            self.finished = True
            return events
        refs = {call.ref: call for call in self.runs}
        watched = [call.completion for call in self.runs]
        if self._evaluating is not None and self._evaluating.done():
            self._evaluating = None
        for call in (self._evaluating, self._news_call(timeout_s)):
            if isinstance(call, RayCall | ThreadCall):
                watched.append(call.completion)
        futures.wait(watched, timeout=timeout_s, return_when=futures.FIRST_COMPLETED)
        ready, _ = self.ray.wait(list(refs), num_returns=len(refs), timeout=0)
        for ref in ready:
            call = refs[ref]
            role, index = self.runs.pop(call)
            try:
                result = call.result(timeout_s=30)
            except RoleDied as exc:
                if role == "worker":
                    self._worker_died(index, exc, events)
                else:
                    self._restart_learners(str(exc), events)
                continue
            except RoleFailed as exc:
                if not self._data_server_lost(events):  # a role fails when its queue died
                    events.failure = str(exc)
                    events.failure_reason = f"{role}_error"
                continue
            if role == "worker":
                self.results.workers[index] = result
            else:
                self.results.learners[index] = result
        self.finished = not self.runs
        return events

    def _data_server_lost(self, events: RoleEvents) -> bool:
        """Whether the rollout queue died (Ray does not restart it: the run stops, named so)."""
        for actor in self.data_plane:
            if not isinstance(actor, RolloutQueueClient):
                continue  # a replay shard that dies is restarted by Ray
            try:
                actor.where().result(CALL_TIMEOUT_S)
            except RoleDied as exc:
                events.failure = f"the data server (rollout queue) is gone: {_plain(str(exc))}"
                events.failure_reason = "data_server_failed"
                return True
        return False

    def _news_call(self, timeout_s: float) -> Call[int] | None:
        """The pending ``wait_for_news`` call to the coordinator, asked again once answered."""
        if self._news is not None and self._news.done():
            try:
                self._news_seen = self._news.result(timeout_s=0)
            except RoleError:  # the coordinator is gone: the driver's next drain says so
                self._news_ok = False
            self._news = None
        if self._news is None and self._news_ok:
            self._news = self.coordinator.wait_for_news(self._news_seen, timeout_s)
        return self._news

    def shutdown(self) -> None:
        for actor in [*self.workers, *self.learners, self.coordinator_actor, *self.plane_actors]:
            self.ray.kill(actor, no_restart=True)
        if self._evaluator_thread is not None:  # its envs close after the evaluation running
            self._evaluator_thread.close(last="close", interrupt="interrupt", join_s=10.0)
        if self.group is not None:
            from ray.util.placement_group import remove_placement_group

            remove_placement_group(self.group)


ANSI_ESCAPES = re.compile(r"\x1b\[[0-9;]*m")


def _plain(text: str) -> str:
    """Ray's first line of an error, without its terminal colours."""
    lines = ANSI_ESCAPES.sub("", text).strip().splitlines()
    return lines[0] if lines else ""


def _init_error(error: RoleDied) -> str | None:
    """The exception a role's constructor raised (its traceback's last line), if that is
    why it died; None when it died otherwise."""
    died = error.__cause__
    if not getattr(died, "actor_init_failed", False):
        return None
    lines = [line for line in ANSI_ESCAPES.sub("", str(died)).splitlines() if line.strip()]
    return lines[-1].strip() if lines else "its constructor raised"
