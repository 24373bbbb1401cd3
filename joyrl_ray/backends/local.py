"""``mp_backend: single``: every role a plain object, taking turns in this process.

For debugging and CI: the same classes as on Ray, one process, taking turns (see
:mod:`.turns`; every wait 0), so a seeded run is reproducible.
"""

from __future__ import annotations

from joyrl_ray.backends.planes import LocalPlanes, PlaneSetup
from joyrl_ray.backends.runtime import LearnerSetup, RoleConfigs, Spaces
from joyrl_ray.backends.turns import Turns, TurnTakingRuntime
from joyrl_ray.config.general import GeneralConfig
from joyrl_ray.flows.base import DataPlane
from joyrl_ray.roles.learner.learner import Learner
from joyrl_ray.roles.worker.worker import Worker
from joyrl_ray.wire.handles import LocalStore, ObjectStore


class LocalRuntime(TurnTakingRuntime):
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
        turns = Turns(list(self.workers), self.learner, self.coordinator)
        self.take_turns(general, roles, spaces, turns)

    def shutdown(self) -> None:
        self.turns.stop()
        self.close_evaluator()
