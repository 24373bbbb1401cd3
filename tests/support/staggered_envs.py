"""A CartPole whose second worker process starts late, for the reproducibility tests
(``env_cfg.id=tests.support.staggered_envs:LateSecondWorkerEnv``).

On a loaded machine one worker actor may take seconds longer to start than another: the
first then collects, pushes and reports a rollout before the second has even registered.
This env makes that happen every time, in the run's real Ray worker processes: the first
worker process to build it goes on at once, and the other one's build waits until the
first has stepped a whole rollout (``rollout_steps``, over all its envs) and a little
more. Outside a Ray worker actor (one process, the driver's spaces check, the evaluator)
it is plain CartPole.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from gymnasium.envs.classic_control import CartPoleEnv

from tests.support.faulty_envs import _in_ray_worker_actor, claim_file

LATE_BY_S = 2.0  # after the first worker's rollout: time for its push and report
WAIT_LIMIT_S = 60.0

_waited = False  # per process: only the late process's first env waits
_steps = 0  # per process: steps of all its envs


class LateSecondWorkerEnv(CartPoleEnv):
    def __init__(self, marks: str = "", rollout_steps: int = 256, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.counting, self.rollout_steps = False, rollout_steps
        self.stepped = Path(marks) / "stepped"
        if not marks or not _in_ray_worker_actor():
            return
        if claim_file(Path(marks) / "first"):  # the first worker process to get here
            self.counting = True
        else:
            _wait_for(self.stepped)

    def step(self, action: Any) -> Any:
        global _steps
        if self.counting:
            _steps += 1
            if _steps == self.rollout_steps:
                self.stepped.write_text(str(time.time()))
        return super().step(action)


def _wait_for(path: Path) -> None:
    global _waited
    if _waited:
        return
    _waited = True
    deadline = time.monotonic() + WAIT_LIMIT_S
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(LATE_BY_S)
