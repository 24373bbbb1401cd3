"""``mp_backend: single``: every role a plain object, taking turns in this process.

For debugging and CI: the same classes as on Ray, one process, taking turns (see
:mod:`.turns`; every wait 0), so a seeded run is reproducible.
"""

from __future__ import annotations

from joyrl_ray.backends.planes import LocalPlanes, PlaneSetup
from joyrl_ray.backends.runtime import (
    Evaluations,
    LearnerSetup,
    RoleConfigs,
    RoleEvents,
    Spaces,
)
from joyrl_ray.backends.turns import Turns
from joyrl_ray.config.general import GeneralConfig
from joyrl_ray.flows.base import DataPlane
from joyrl_ray.roles.evaluator.client import EvaluatorClient
from joyrl_ray.roles.evaluator.evaluator import OnlineEvaluator
from joyrl_ray.roles.learner.learner import Learner
from joyrl_ray.roles.worker.worker import Worker
from joyrl_ray.wire.handles import LocalHandle, LocalStore, ObjectStore


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
        self.turns = Turns(list(self.workers), self.learner, self.coordinator)
        self.results = self.turns.results

    @property
    def finished(self) -> bool:
        return self.turns.finished

    def advance(self, timeout_s: float) -> RoleEvents:
        """Give every role turns for ``timeout_s``; a role that raises ends the run, as on Ray."""
        return self.turns.advance(timeout_s)

    def shutdown(self) -> None:
        self.turns.stop()
        if self._online_evaluator is not None:
            self._online_evaluator.close()
