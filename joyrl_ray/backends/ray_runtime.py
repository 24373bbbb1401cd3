"""``mp_backend: ray``: every role an actor, each running its own loop.

The runtime starts the coordinator and the data plane (:class:`~.planes.RayPlanes`), the
learner group (:class:`~.learner_group.LearnerGroup`, reserved first) and the worker fleet
(:class:`~.worker_fleet.WorkerFleet`), which keep their own actors healthy; Ray restarts a
replay shard that died, empty. ``advance`` waits for whichever comes first: a role's loop
ending, the evaluation running answering, or news for the driver (a checkpoint, the stop).
"""

from __future__ import annotations

import contextlib
from concurrent import futures
from typing import Any

from joyrl_ray.backends.learner_group import LearnerGroup
from joyrl_ray.backends.placement import Requests
from joyrl_ray.backends.planes import PlaneSetup, RayPlanes
from joyrl_ray.backends.runtime import (
    Evaluations,
    LearnerSetups,
    RoleConfigs,
    RoleEvents,
    RoleResults,
    Spaces,
)
from joyrl_ray.backends.worker_fleet import WorkerFleet
from joyrl_ray.config.general import GeneralConfig
from joyrl_ray.flows.base import DataPlane
from joyrl_ray.policies import DEFAULT_POLICY
from joyrl_ray.roles.evaluator.client import EvaluatorClient
from joyrl_ray.roles.evaluator.online import online_evaluator
from joyrl_ray.wire.handles import (
    Call,
    ObjectStore,
    RayCall,
    RayStore,
    RoleDied,
    RoleError,
    RoleFailed,
    ThreadCall,
    ThreadHandle,
)

RESULT_TIMEOUT_S = 30.0


class RayRuntime(Evaluations):
    """Every role an actor; the driver's view of them."""

    def __init__(
        self,
        general: GeneralConfig,
        roles: RoleConfigs,
        setup: PlaneSetup,
        learners: LearnerSetups,
        spaces: Spaces | None,
        requests: Requests,
    ) -> None:
        import ray

        self.ray = ray
        self.store: ObjectStore = RayStore()
        self.results = RoleResults()
        # call -> (role, index, policy): a worker's index is its id, a learner's its rank
        self.runs: dict[Any, tuple[str, int, str]] = {}
        self.learner_groups: dict[str, LearnerGroup] = {}
        # The online evaluator lives in the driver's process, on a thread of its own: torch
        # is imported there already, the checkpoints' weights arrive there, and no extra
        # process competes with the workers and learners while they start.
        self.evaluator: EvaluatorClient | None = None
        self._evaluator_thread: ThreadHandle | None = None
        self._evaluator_setup: tuple[Any, Spaces | None] = (None, None)  # to start one again
        self._evaluating: Call[Any] | None = None
        # The coordinator's answer once a checkpoint or the stop comes (see advance).
        self._news: Call[int] | None = None
        self._news_seen = 0
        self._news_ok = True
        self.finished = False
        # A start that fails (the learners' placement group not placed in time, a learner
        # that never meets the others) stops what it started: on a Ray that outlives the run
        # (one it attached to, or borrowed) its actors and placement groups would otherwise
        # hold their CPUs for every later run there.
        with contextlib.ExitStack() as started:
            self.planes = RayPlanes.of(general, setup)
            started.callback(self.planes.kill)
            self.data: DataPlane = self.planes.data
            self.coordinator = self.planes.coordinator
            for policy, learner in learners.items():
                # Created before the workers, so that they get the processes Ray prestarts:
                # on-policy workers wait for the learners' first weights, and a learner has
                # more to start (its optimizer imports torch's compiler: about a CPU-second).
                links = self.planes.learner_links(policy)
                group = LearnerGroup(roles.learners[policy], general, links, learner, requests)
                self.learner_groups[policy] = group
                started.callback(group.shutdown)
                group.create(learner.start_state)
            self.fleet = WorkerFleet(general, roles.worker, self.planes, requests)
            started.callback(self.fleet.shutdown)
            self._submit("worker", self.fleet.run())
            for policy, group in self.learner_groups.items():  # beside the workers
                self._submit("learner", group.run(), policy)
            if learners and general.online_eval:
                self._evaluator_setup = (roles.evaluator, spaces)
                self._new_evaluator()
            started.pop_all()  # started: shutdown() stops it all from now on

    def _new_evaluator(self) -> None:
        evaluator = online_evaluator(*self._evaluator_setup)
        self._evaluator_thread = ThreadHandle(evaluator, "Evaluator")
        self.evaluator = EvaluatorClient(self._evaluator_thread)

    def replace_evaluator(self) -> bool:
        # The stuck thread is a daemon: it ends with the process, its envs unclosed.
        if self._evaluator_thread is None:
            return False
        self._evaluating = None
        self._new_evaluator()
        return True

    def _watch(self, call: Call[Any]) -> None:
        self._evaluating = call

    def _submit(self, role: str, calls: list[Call[Any]], policy: str = DEFAULT_POLICY) -> None:
        for index, call in enumerate(calls):
            self.runs[call] = (role, index, policy)

    def _learner_died(self, policy: str, rank: int, why: str, events: RoleEvents) -> None:
        group = self.learner_groups[policy]
        for call, (role, _, of) in list(self.runs.items()):
            if role == "learner" and of == policy:
                del self.runs[call]

        def make_room() -> bool:  # the learners come first, the workers last
            return self.fleet.shed_one("the learner group", events, self.results)

        self._submit("learner", group.restart(why, events, make_room, rank), policy)
        for call, (role, index, _) in list(self.runs.items()):
            if role == "worker" and index in self.fleet.shed:  # killed: a new call if it returns
                del self.runs[call]
        self.results.learner_restarts = sum(g.restarts for g in self.learner_groups.values())

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
            role, index, policy = self.runs.pop(call)
            try:
                result = call.result(timeout_s=RESULT_TIMEOUT_S)
            except RoleDied as exc:
                if role == "worker":
                    self.fleet.died(index, exc, events, self.results)
                else:
                    self._learner_died(policy, index, f"learner died ({exc})", events)
                continue
            except RoleFailed as exc:
                # A role fails when a data-plane actor it needs died: the run stops, named so.
                lost = self.data.lost()
                events.failure = lost or str(exc)
                events.failure_reason = "data_server_failed" if lost else f"{role}_error"
                continue
            if role == "worker":
                self.results.workers[index] = result
            else:
                self.results.learners[(policy, index)] = result
                if result.data_server_lost is not None:
                    self._learner_lost_its_data(events)
        for index, call in self.fleet.fill_room(events, self.results).items():
            self.runs[call] = ("worker", index, DEFAULT_POLICY)
        self.finished = not self.runs
        return events

    def _learner_lost_its_data(self, events: RoleEvents) -> None:
        """A learner ended early because a data-plane actor it reads from died (the rollout
        queue). No worker may notice: in a synchronous flow each waits for the learner's
        next weights once its rollout is in, and those never come. The run stops, named so.
        A learner that ended because the coordinator died is the driver's to see."""
        lost = self.data.lost()
        if lost is not None and events.failure is None:
            events.failure, events.failure_reason = lost, "data_server_failed"

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

    def replace_hung_worker(self, index: int, silent_s: float, node_id: str | None) -> str | None:
        for call, (role, of, _) in list(self.runs.items()):
            if role == "worker" and of == index:
                replaced = self.fleet.replace_hung(index, silent_s, node_id, self.results)
                if replaced is None:
                    return None
                line, new_call = replaced
                if new_call is not None:  # a new actor: the old one's call ends as it dies
                    del self.runs[call]
                    self.runs[new_call] = ("worker", index, DEFAULT_POLICY)
                return line
        return None

    def replace_silent_learner(self, policy: str, rank: int, silent_s: float) -> RoleEvents:
        events = RoleEvents()
        if any(role == "learner" and of == policy for role, _, of in self.runs.values()):
            role = self.learner_groups[policy].cfg.role(rank)
            self._learner_died(policy, rank, f"{role} reported nothing for {silent_s:g} s", events)
        return events

    def end_unfinished_workers(self, waited_s: float) -> list[str]:
        lines = []
        for call, (role, index, _) in list(self.runs.items()):
            if role == "worker":
                del self.runs[call]
                lines.append(self.fleet.end_unfinished(index, waited_s, self.results))
        self.finished = not self.runs
        return lines

    def shutdown(self) -> None:
        self.fleet.shutdown()
        for group in self.learner_groups.values():
            group.shutdown()
        self.planes.kill()
        if self._evaluator_thread is not None:  # its envs close after the evaluation running
            self._evaluator_thread.close(last="close", interrupt="interrupt", join_s=10.0)
