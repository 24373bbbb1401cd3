"""Roles taking turns: the single backend's schedule, and the Ray backend's in lockstep.

A turn: every worker still stepping collects and pushes one chunk (a rollout, on-policy),
in worker order; then the learner learns round after round until it has no data left to
learn (or the run stopped). Every wait is 0: a call that would wait returns at once. With
roles whose calls are answered before the caller goes on (plain objects in one process, or
Ray actors in lockstep), everything happens in one order, so a seeded run is reproducible.
"""

from __future__ import annotations

import time
from typing import Protocol

from joyrl_ray.backends.runtime import Evaluations, RoleConfigs, RoleEvents, RoleResults, Spaces
from joyrl_ray.config.general import GeneralConfig
from joyrl_ray.control.client import CoordinatorClient
from joyrl_ray.roles.evaluator.client import EvaluatorClient
from joyrl_ray.roles.evaluator.evaluator import OnlineEvaluator
from joyrl_ray.roles.evaluator.games import GameEvaluator
from joyrl_ray.roles.evaluator.online import online_evaluator
from joyrl_ray.roles.learner.learner import LearnerResult
from joyrl_ray.roles.learner.source import LEARNED, STOPPED
from joyrl_ray.roles.worker.worker import WorkerStats
from joyrl_ray.wire.handles import CallTimeout, LocalHandle, RoleError, first_line

CALL_TIMEOUT_S = 60.0


class TurnWorker(Protocol):
    """A worker as the turns see it (a :class:`~joyrl_ray.roles.worker.worker.Worker`, or
    an actor's stand-in)."""

    worker_id: int

    def step(self, wait_s: float) -> bool: ...

    def finish(self) -> WorkerStats: ...

    def close(self) -> None: ...


class TurnLearner(Protocol):
    """A learner as the turns see it."""

    def train_step(self, wait_s: float) -> str: ...

    def finish(self) -> LearnerResult: ...


class Turns:
    """Gives the roles their turns until the run is over; what they ended with.

    ``learners``: each learning policy's learner (a single-agent run's one), taking turns in
    the order given."""

    def __init__(
        self,
        workers: list[TurnWorker],
        learners: dict[str, TurnLearner],
        coordinator: CoordinatorClient,
    ) -> None:
        self.workers, self.learners, self.coordinator = workers, learners, coordinator
        self.results = RoleResults()
        self.finished = False
        self._stepping = list(workers)
        self._learning = set(learners)
        self._failed: str | None = None  # the role that raised: its state is not to be trusted
        self._news_seen = 0

    def advance(self, timeout_s: float) -> RoleEvents:
        """Give every role turns for ``timeout_s``, or until there is news for the driver (a
        checkpoint, the stop); a role that raises ends the run, named."""
        events = RoleEvents()
        deadline = time.monotonic() + timeout_s
        while not self.finished and time.monotonic() < deadline:
            role = "worker"
            try:
                self._stepping = [w for w in self._stepping if w.step(0.0)]
                role = "learner"
                for policy, learner in self.learners.items():
                    while policy in self._learning:
                        status = learner.train_step(0.0)
                        if status == STOPPED:
                            self._learning.discard(policy)
                        if status != LEARNED:
                            break
            except CallTimeout as exc:  # an actor's turn past its deadline (lockstep on Ray)
                events.failure = f"{role} stalled: {exc} (general_cfg.stall_timeout_s)"
                events.failure_reason = "stalled"
                self._stop_after_failure(role, events)
                break
            except Exception as exc:  # the run stops with the error named, nothing lost
                # An actor's error already names its role and call (lockstep on Ray).
                why = str(exc).splitlines()[0] if isinstance(exc, RoleError) else first_line(exc)
                events.failure = f"{role} failed: {why}"
                events.failure_reason = f"{role}_error"
                self._stop_after_failure(role, events)
                break
            if not self._stepping and not self._learning:
                self.finish()
            try:
                news = self.coordinator.wait_for_news(self._news_seen, 0.0).result(CALL_TIMEOUT_S)
            except RoleError:  # the coordinator is gone: the driver's next drain says so
                break
            if news != self._news_seen:  # a checkpoint or the stop: to the driver
                self._news_seen = news
                break
        return events

    def _stop_after_failure(self, role: str, events: RoleEvents) -> None:
        self._failed = role
        try:
            reason = events.failure_reason or f"{role}_error"
            self.coordinator.request_stop(reason, events.failure).result(CALL_TIMEOUT_S)
            self.finish()
        except RoleError:  # the coordinator is gone too: the driver's drain says so
            self.finished = True

    def finish(self) -> None:
        """Each role's last call. After a failure the workers only close (what they hold is
        not to be trusted), and the learner, unless it failed, makes its final checkpoint:
        nothing it learned is lost."""
        for worker in self.workers:
            if self._failed is None:
                self.results.workers[worker.worker_id] = worker.finish()
            worker.close()
        if self._failed != "learner":
            for policy, learner in self.learners.items():
                self.results.learners[(policy, 0)] = learner.finish()
        self.finished = True

    def stop(self) -> None:
        """The driver ends the run early (an interrupt, say): the roles finish where they are."""
        if not self.finished:
            self.coordinator.request_stop("shutdown").result(CALL_TIMEOUT_S)
            self.finish()


class TurnTakingRuntime(Evaluations):
    """A backend whose roles take turns (the single backend; Ray in lockstep): the driver's
    ``advance`` gives them turns, and the online evaluator runs in the driver between
    turns, so even the stop at ``reward_threshold`` comes at the same turn every run."""

    turns: Turns
    results: RoleResults
    evaluator: EvaluatorClient | None = None
    online_evaluator: OnlineEvaluator | GameEvaluator | None = None

    def take_turns(
        self,
        general: GeneralConfig,
        roles: RoleConfigs,
        spaces: Spaces | None,
        turns: Turns,
    ) -> None:
        """Start the online evaluator (a learning run's), and give ``turns`` the driver."""
        if turns.learners and general.online_eval:
            self.online_evaluator = online_evaluator(roles.evaluator, spaces)
            self.evaluator = EvaluatorClient(LocalHandle(self.online_evaluator, "Evaluator"))
        self.turns = turns
        self.results = turns.results

    @property
    def finished(self) -> bool:
        return self.turns.finished

    def advance(self, timeout_s: float) -> RoleEvents:
        """Give every role turns for ``timeout_s``; one that raises (or dies) ends the run."""
        return self.turns.advance(timeout_s)

    def replace_hung_worker(self, index: int, silent_s: float, node_id: str | None) -> str | None:
        return None  # the roles take turns in the driver: a hung env hangs the driver

    def replace_silent_learner(self, policy: str, rank: int, silent_s: float) -> RoleEvents:
        return RoleEvents()  # a learner's turn that never ends hangs the driver too

    def end_unfinished_workers(self, waited_s: float) -> list[str]:
        return []

    def replace_evaluator(self) -> bool:
        return False  # it evaluates in the driver's turn: a stuck evaluation stalls the run

    def close_evaluator(self) -> None:
        if self.online_evaluator is not None:
            self.online_evaluator.close()
