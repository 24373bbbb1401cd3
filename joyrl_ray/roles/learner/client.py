"""What the backend asks of a learner actor."""

from __future__ import annotations

from joyrl_ray.roles.learner.learner import Learner, LearnerResult
from joyrl_ray.wire.handles import Call
from joyrl_ray.wire.role_client import RoleClient


class LearnerClient(RoleClient):
    """What the driver asks of a :class:`~joyrl_ray.roles.learner.learner.Learner` actor."""

    def rendezvous(self) -> Call[tuple[str, int]]:
        return self._call(Learner.rendezvous)

    def run(self, group_address: tuple[str, int] | None) -> Call[LearnerResult]:
        return self._call(Learner.run, group_address)

    # ----- lockstep: the driver gives the learner its turns -----
    def start(self, group_address: tuple[str, int] | None) -> Call[None]:
        return self._call(Learner.start, group_address)

    def train_step(self, wait_s: float) -> Call[str]:
        return self._call(Learner.train_step, wait_s)

    def finish(self) -> Call[LearnerResult]:
        return self._call(Learner.finish)
