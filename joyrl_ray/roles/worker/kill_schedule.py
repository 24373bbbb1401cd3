"""Worker kills caused on purpose (``general_cfg.fault_injection``), to test restarts."""

from __future__ import annotations

import os
import signal

from joyrl_ray.config.general import FaultInjectionConfig


class KillSchedule:
    """The global env-step counts at which a worker SIGKILLs its own process."""

    def __init__(self) -> None:
        self.due: list[int] = []

    def arm(self, faults: FaultInjectionConfig, worker_id: int, global_env_steps: int) -> None:
        if worker_id in faults.kill_worker_ids:
            self.due = sorted(s for s in faults.kill_at_env_steps if s > global_env_steps)

    def strike(self, global_env_steps: int) -> None:
        if self.due and global_env_steps >= self.due[0]:
            os.kill(os.getpid(), signal.SIGKILL)
