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
from joyrl_ray.multi_agent_plan import MultiAgentPlan
from joyrl_ray.policies import DEFAULT_POLICY
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
    the whole run config. ``learners``: each learning policy's (a single-agent run's one
    policy is ``DEFAULT_POLICY``)."""

    worker: WorkerConfig
    learners: dict[str, LearnerConfig]
    evaluator: EvaluatorConfig

    @classmethod
    def of(cls, cfg: RunConfig, plan: MultiAgentPlan | None = None) -> RoleConfigs:
        if plan is None:
            learners = {DEFAULT_POLICY: LearnerConfig.of(cfg)}
        else:
            learners = {p: LearnerConfig.of(cfg, plan.policies[p]) for p in plan.trained}
        return cls(WorkerConfig.of(cfg, plan), learners, EvaluatorConfig.of(cfg, plan))

    @property
    def learner(self) -> LearnerConfig:
        """The learners' config of a single-agent run (its one policy)."""
        return self.learners[DEFAULT_POLICY]


@dataclass
class LearnerSetup:
    """What a policy's learner group starts from."""

    spaces: Spaces
    start_state: bytes | None  # a resumed run's checkpoint
    latest_state: Callable[[], bytes | None]  # the driver's newest checkpoint (for restarts)


#: Each learning policy's learner setup, by policy (none in test mode).
LearnerSetups = dict[str, LearnerSetup]


@dataclass
class RoleEvents:
    """What happened to the roles during one ``advance``."""

    log: list[str] = field(default_factory=list)
    failure: str | None = None  # the run cannot go on: why (one line)
    failure_reason: str | None = None  # stop_reason to record


@dataclass
class RoleResults:
    workers: dict[int, WorkerStats] = field(default_factory=dict)
    learners: dict[tuple[str, int], LearnerResult] = field(default_factory=dict)  # policy, rank
    workers_dropped: list[int] = field(default_factory=list)
    # workers stopped to make room for the learner group: worker id, when, node, steps lost
    workers_shed: list[dict[str, Any]] = field(default_factory=list)
    # shed workers started again once there was room: worker id, when
    workers_returned: list[dict[str, Any]] = field(default_factory=list)
    # workers past n_workers started as room appeared (max_workers): worker id, when
    workers_added: list[dict[str, Any]] = field(default_factory=list)
    steps_lost_with_workers: int = 0
    learner_restarts: int = 0
    workers_hung: list[int] = field(default_factory=list)  # killed as hung, to be restarted

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
        policy: str = DEFAULT_POLICY,
        others: dict[str, dict[str, np.ndarray]] | None = None,
    ) -> Call[EvalResult]: ...

    def replace_hung_worker(self, index: int, silent_s: float, node_id: str | None) -> str | None:
        """Restart worker ``index``, silent for ``silent_s`` while waiting on no call, on
        node ``node_id`` (where known): away from that node if it is cut off; the log line,
        or None where the backend cannot (one process)."""
        ...

    def replace_silent_learner(self, policy: str, rank: int, silent_s: float) -> RoleEvents:
        """Restart ``policy``'s learner group, whose rank ``rank`` reported nothing for
        ``silent_s``: away from its node if that node is cut off (nothing where the
        backend cannot)."""
        ...

    def end_unfinished_workers(self, waited_s: float) -> list[str]:
        """After the stop: end the workers still running ``waited_s`` later; a log line
        each."""
        ...

    def replace_evaluator(self) -> bool:
        """Leave the online evaluator, stuck in an evaluation, to itself and start a new
        one for the next; False where the backend cannot (it evaluates in the driver)."""
        ...

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
        policy: str = DEFAULT_POLICY,
        others: dict[str, dict[str, np.ndarray]] | None = None,
    ) -> Call[EvalResult]:
        """Evaluate ``policy``'s checkpoint ``weights`` (a multi-agent run's other learning
        policies acting with ``others``, their newest checkpoints' weights)."""
        assert self.evaluator is not None
        if policy == DEFAULT_POLICY:
            call = self.evaluator.evaluate(weights, updates, env_steps, normalization)
        else:
            call = self.evaluator.evaluate_policy(policy, weights, updates, env_steps, others)
        self._watch(call)
        return call

    def _watch(self, call: Call[Any]) -> None:
        """The runtime's ``advance`` also wakes when ``call`` answers (Ray only)."""
