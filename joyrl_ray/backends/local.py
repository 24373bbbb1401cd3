"""``mp_backend: single``: every role a plain object, taking turns in this process.

For debugging and CI: the same classes as on Ray, one process, every wait 0 (a call that
would wait returns at once), so a seeded run is reproducible.
"""

from __future__ import annotations

import time

from joyrl_ray.backends.planes import LocalPlanes, PlaneSetup
from joyrl_ray.backends.runtime import (
    Evaluations,
    LearnerSetup,
    RoleConfigs,
    RoleEvents,
    RoleResults,
    Spaces,
)
from joyrl_ray.config.general import GeneralConfig
from joyrl_ray.flows.base import DataPlane
from joyrl_ray.roles.evaluator.client import EvaluatorClient
from joyrl_ray.roles.evaluator.evaluator import OnlineEvaluator
from joyrl_ray.roles.learner.learner import Learner
from joyrl_ray.roles.worker.worker import Worker
from joyrl_ray.wire.handles import LocalHandle, LocalStore, ObjectStore, first_line


class LocalRuntime(Evaluations):
    """``mp_backend: single``: workers, learner and evaluator take turns in this process."""

    def __init__(
        self,
        general: GeneralConfig,
        roles: RoleConfigs,
        setup: PlaneSetup,
        learner: LearnerSetup | None,
        spaces: Spaces,
    ) -> None:
        self.store: ObjectStore = LocalStore()
        self.planes = LocalPlanes(setup, self.store)
        self.data: DataPlane = self.planes.data
        self.coordinator_object = self.planes.coordinator_object
        self.coordinator = self.planes.coordinator
        self.learner = None
        if learner is not None:
            self.learner = Learner(
                roles.learner,
                self.planes.learner_links(self.store),
                learner.spaces,
                start_state=learner.start_state,
            )
            self.learner.start(None)
        self.workers = [
            Worker(i, roles.worker, self.planes.sender(i), self.store)
            for i in range(general.n_workers)
        ]
        for worker in self.workers:
            worker.start()
        self.evaluator: EvaluatorClient | None = None
        self._online_evaluator: OnlineEvaluator | None = None
        if learner is not None and general.online_eval:
            self._online_evaluator = OnlineEvaluator(roles.evaluator, spaces)
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
                self.coordinator_object.request_stop(events.failure_reason, events.failure)
                self._failed = True
                self._finish()
                break
            if not self._stepping and not self._learning:
                self._finish()
            news = self.coordinator_object.news_seq
            if news != self._news_seen:  # a checkpoint or the stop: to the driver
                self._news_seen = news
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
            self.coordinator_object.request_stop("shutdown")
            self._finish()
        if self._online_evaluator is not None:
            self._online_evaluator.close()
