"""What the backend asks of a worker actor."""

from __future__ import annotations

from joyrl_ray.roles.worker.worker import Worker, WorkerStats
from joyrl_ray.wire.handles import Call
from joyrl_ray.wire.role_client import RoleClient


class WorkerClient(RoleClient):
    """What the driver asks of a :class:`~joyrl_ray.roles.worker.worker.Worker` actor."""

    def run(self) -> Call[WorkerStats]:
        return self._call(Worker.run)

    # ----- lockstep: the driver gives the worker its turns -----
    def start(self) -> Call[None]:
        return self._call(Worker.start)

    def step(self, wait_s: float) -> Call[bool]:
        return self._call(Worker.step, wait_s)

    def finish(self) -> Call[WorkerStats]:
        return self._call(Worker.finish)

    def close(self) -> Call[None]:
        return self._call(Worker.close)
