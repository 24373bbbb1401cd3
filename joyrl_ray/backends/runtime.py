"""What the driver asks of a backend, and what a backend tells it back.

Both backends (:mod:`.local`, one process; :mod:`.ray_runtime`, Ray actors) implement
:class:`Runtime`, the one interface the driver loop (:mod:`joyrl_ray.run.driver`) talks
to: the coordinator's client, the run's data plane (its placements, waits, stats and
saved replay: :class:`~joyrl_ray.flows.base.DataPlane`), the evaluator,
``advance(timeout_s)`` (make progress and return what happened to the roles since the
last call), ``finished`` and ``shutdown()``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import gymnasium as gym
import numpy as np

from joyrl_ray.config import RunConfig
from joyrl_ray.control.client import CoordinatorClient
from joyrl_ray.flows.base import DataPlane
from joyrl_ray.roles.evaluator.client import EvaluatorClient
from joyrl_ray.roles.evaluator.config import EvaluatorConfig
from joyrl_ray.roles.evaluator.results import EvalResult
from joyrl_ray.roles.learner.config import LearnerConfig
from joyrl_ray.roles.learner.learner import LearnerResult, LearnerStats
from joyrl_ray.roles.worker.config import WorkerConfig
from joyrl_ray.roles.worker.worker import WorkerStats
from joyrl_ray.wire.handles import Call, ObjectStore

Spaces = tuple[gym.Space, gym.Space]


@dataclass(frozen=True)
class RoleConfigs:
    """Each role's own slice of the run config, built once by the driver: no actor receives
    the whole run config."""

    worker: WorkerConfig
    learner: LearnerConfig
    evaluator: EvaluatorConfig

    @classmethod
    def of(cls, cfg: RunConfig) -> RoleConfigs:
        return cls(WorkerConfig.of(cfg), LearnerConfig.of(cfg), EvaluatorConfig.of(cfg))


@dataclass
class LearnerSetup:
    """What the learner group starts from."""

    spaces: Spaces
    start_state: bytes | None  # a resumed run's checkpoint
    latest_state: Callable[[], bytes | None]  # the driver's newest checkpoint (for restarts)


@dataclass
class RoleEvents:
    """What happened to the roles during one ``advance``."""

    log: list[str] = field(default_factory=list)
    failure: str | None = None  # the run cannot go on: why (one line)
    failure_reason: str | None = None  # stop_reason to record


@dataclass
class RoleResults:
    workers: dict[int, WorkerStats] = field(default_factory=dict)
    learners: dict[int, LearnerResult] = field(default_factory=dict)
    workers_dropped: list[int] = field(default_factory=list)
    # workers stopped to make room for the learner group: worker id, when, node, steps lost
    workers_shed: list[dict[str, Any]] = field(default_factory=list)
    # shed workers started again once there was room: worker id, when
    workers_returned: list[dict[str, Any]] = field(default_factory=list)
    # workers past n_workers started as room appeared (max_workers): worker id, when
    workers_added: list[dict[str, Any]] = field(default_factory=list)
    steps_lost_with_workers: int = 0
    learner_restarts: int = 0

    def learner_stats(self) -> list[LearnerStats]:
        return [r.stats for _, r in sorted(self.learners.items())]


class Runtime(Protocol):
    """What the driver asks of a backend."""

    coordinator: CoordinatorClient
    data: DataPlane
    evaluator: EvaluatorClient | None
    store: ObjectStore
    results: RoleResults

    @property
    def finished(self) -> bool: ...

    def advance(self, timeout_s: float) -> RoleEvents: ...

    def evaluate(
        self,
        weights: dict[str, np.ndarray],
        updates: int,
        env_steps: int,
        normalization: dict[str, Any] | None = None,
    ) -> Call[EvalResult]: ...

    def shutdown(self) -> None: ...


class Evaluations:
    """The driver's evaluations, the same on both backends."""

    evaluator: EvaluatorClient | None

    def evaluate(
        self,
        weights: dict[str, np.ndarray],
        updates: int,
        env_steps: int,
        normalization: dict[str, Any] | None = None,
    ) -> Call[EvalResult]:
        assert self.evaluator is not None
        call = self.evaluator.evaluate(weights, updates, env_steps, normalization)
        self._watch(call)
        return call

    def _watch(self, call: Call[Any]) -> None:
        """The runtime's ``advance`` also wakes when ``call`` answers (Ray only)."""
