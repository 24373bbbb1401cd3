"""``mp_backend: single``: every role a plain object, taking turns in this process.

For debugging and CI: the same classes as on Ray, one process, taking turns (see
:mod:`.turns`; every wait 0), so a seeded run is reproducible.
"""

from __future__ import annotations

from joyrl_ray.backends.planes import LocalPlanes, PlaneSetup
from joyrl_ray.backends.runtime import LearnerSetups, RoleConfigs, Spaces
from joyrl_ray.backends.turns import TurnLearner, Turns, TurnTakingRuntime
from joyrl_ray.config.general import GeneralConfig
from joyrl_ray.flows.base import DataPlane
from joyrl_ray.roles.learner.learner import Learner
from joyrl_ray.roles.worker.kinds import worker_class
from joyrl_ray.wire.handles import LocalStore, ObjectStore


class LocalRuntime(TurnTakingRuntime):
    """``mp_backend: single``: workers, learner and evaluator take turns in this process."""

    def __init__(
        self,
        general: GeneralConfig,
        roles: RoleConfigs,
        setup: PlaneSetup,
        learners: LearnerSetups,
        spaces: Spaces | None,
    ) -> None:
        self.store: ObjectStore = LocalStore()
        self.planes = LocalPlanes(setup, self.store)
        self.data: DataPlane = self.planes.data
        self.coordinator_object = self.planes.coordinator_object
        self.coordinator = self.planes.coordinator
        self.learners: dict[str, Learner] = {}
        for policy, learner in learners.items():
            self.learners[policy] = Learner(
                roles.learners[policy],
                self.planes.learner_links(self.store, policy),
                learner.spaces,
                start_state=learner.start_state,
            )
            self.learners[policy].start(None)
        cls = worker_class(roles.worker)
        self.workers = [
            cls(i, roles.worker, self.planes.worker_senders(i), self.store)  # type: ignore[arg-type]
            for i in range(general.n_workers)
        ]
        for worker in self.workers:
            worker.start()
        in_turn: dict[str, TurnLearner] = dict(self.learners)
        turns = Turns(list(self.workers), in_turn, self.coordinator)
        self.take_turns(general, roles, spaces, turns)

    @property
    def learner(self) -> Learner | None:
        """A single-agent run's learner (its one policy's)."""
        return next(iter(self.learners.values()), None)

    def shutdown(self) -> None:
        self.turns.stop()
        self.close_evaluator()
