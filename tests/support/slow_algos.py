"""Learners made slow on purpose, for tests that need one: DQN and APPO whose every update
also sleeps ``learn_sleep_s`` (named by import path: ``tests.support.slow_algos:SLOW_DQN``,
``tests.support.slow_algos:SLOW_APPO``)."""

from __future__ import annotations

import time
from dataclasses import dataclass

from algos.appo.config import APPOConfig
from algos.appo.policy import APPO
from algos.base import LearnResult
from algos.dqn.config import DQNConfig
from algos.dqn.policy import DQN
from algos.registry import AlgoSpec
from joyrl_ray.batch import Batch


class SleepsToLearn:
    """Mixed in before an algorithm: every update first sleeps ``cfg.learn_sleep_s``."""

    def learn(self, batch: Batch) -> LearnResult:
        time.sleep(self.cfg.learn_sleep_s)
        return super().learn(batch)


@dataclass
class SlowDQNConfig(DQNConfig):
    learn_sleep_s: float = 0.01  # added to every update


class SlowDQN(SleepsToLearn, DQN):
    pass


SLOW_DQN = AlgoSpec("SlowDQN", SlowDQNConfig, SlowDQN)


@dataclass
class SlowAPPOConfig(APPOConfig):
    learn_sleep_s: float = 0.2  # added to every update


class SlowAPPO(SleepsToLearn, APPO):
    pass


SLOW_APPO = AlgoSpec("SlowAPPO", SlowAPPOConfig, SlowAPPO)
