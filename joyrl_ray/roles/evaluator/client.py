"""What the driver asks of the online evaluator: a checkpoint's evaluation, beside learning."""

from __future__ import annotations

from typing import Any

import numpy as np

from joyrl_ray.roles.evaluator.evaluator import OnlineEvaluator
from joyrl_ray.roles.evaluator.games import GameEvaluator
from joyrl_ray.roles.evaluator.results import EvalResult
from joyrl_ray.wire.handles import Call
from joyrl_ray.wire.role_client import RoleClient


class EvaluatorClient(RoleClient):
    """Checkpoint evaluations, beside learning."""

    def evaluate(
        self,
        weights: dict[str, np.ndarray],
        updates: int,
        env_steps: int,
        normalization: dict[str, Any] | None = None,
    ) -> Call[EvalResult]:
        return self._call(OnlineEvaluator.evaluate, weights, updates, env_steps, normalization)

    def evaluate_policy(
        self,
        policy: str,
        weights: dict[str, np.ndarray],
        updates: int,
        env_steps: int,
        others: dict[str, dict[str, np.ndarray]] | None = None,
    ) -> Call[EvalResult]:
        return self._call(
            GameEvaluator.evaluate_policy, policy, weights, updates, env_steps, others
        )
