"""A DQN with a simulated learning cost, for benchmarks only (not a training knob).

``general_cfg.algo_name=benchmarks.slow_learner:SLOW_DQN`` runs plain DQN, except that
every ``learn()`` also sleeps ``algo_cfg.learn_cost_s_per_row`` seconds per row of the
batch it learns from. The rows are this learner's share (``batch_size / n_learners``), so
two data-parallel learners each sleep half as long per update, as two learners computing
half a batch each would: the cost of a large network on a fast env, without the CPU it
would take (a 2-core machine cannot run two real heavy learners beside the workers).
It sleeps before the gradient step, while the other learners sleep too, so the gradient
exchange stays in step.

Every process of the run imports this module by its import path from the project root
(a local Ray's workers start in the driver's working directory).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from algos.base import LearnResult
from algos.dqn.config import DQNConfig
from algos.dqn.policy import DQN
from algos.registry import AlgoSpec
from joyrl_ray.batch import OBS, Batch


@dataclass
class SlowDQNConfig(DQNConfig):
    learn_cost_s_per_row: float = 0.0  # seconds slept per batch row in every update

    def check(self) -> None:
        super().check()
        if self.learn_cost_s_per_row < 0:
            raise ValueError(
                f"algo_cfg.learn_cost_s_per_row={self.learn_cost_s_per_row} is out of range; "
                "allowed: >= 0"
            )


class SlowDQN(DQN):
    """DQN that pays ``learn_cost_s_per_row`` seconds per row it learns from."""

    def learn(self, batch: Batch) -> LearnResult:
        rows = len(batch[OBS])
        cost = float(self.cfg.learn_cost_s_per_row) * rows
        if cost > 0:
            time.sleep(cost)
        return super().learn(batch)


SLOW_DQN = AlgoSpec("SlowDQN", SlowDQNConfig, SlowDQN)
