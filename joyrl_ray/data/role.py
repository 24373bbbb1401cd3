"""What every data-plane actor shares (a replay shard, a rollout queue): its callers wait
inside its calls (:class:`~joyrl_ray.wire.waiting.WaitingRoom`), the coordinator tells it
of the run's stop, and it says where it runs."""

from __future__ import annotations

from joyrl_ray.wire.messages import Placement
from joyrl_ray.wire.waiting import WaitingRoom


class DataPlaneRole(WaitingRoom):
    """A data-plane actor: told of the run's stop by the coordinator, placed somewhere."""

    def __init__(self, role: str) -> None:
        super().__init__()
        self.stop_reason: str | None = None
        self.placement = Placement.here(role)

    def request_stop(self, reason: str) -> None:
        """The run stopped (the coordinator says so): waiting callers wake."""
        with self._cond:
            if self.stop_reason is None:
                self.stop_reason = reason
            self._cond.notify_all()

    def where(self) -> Placement:
        return self.placement
