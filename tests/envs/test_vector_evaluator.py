"""The evaluator's episodes under ``env_cfg.vector_mode: async`` (one subprocess per
episode) are the episodes of ``sync``: same seeds, same greedy actions, same returns; an
interrupted evaluation stops, and the next one runs on fresh envs."""

from __future__ import annotations

import threading

import gymnasium as gym
import pytest
import torch
from omegaconf import OmegaConf

from algos import get_algorithm
from envs.config import EnvConfig
from joyrl_ray.roles.evaluator.evaluator import EvaluationInterrupted, Evaluator


def evaluator(mode: str) -> Evaluator:
    env_cfg = OmegaConf.structured(EnvConfig(id="CartPole-v1"))
    spec = get_algorithm("PPO")
    torch.manual_seed(3)  # the same (untrained, stochastic-looking) net for both modes
    policy = spec.policy_cls(
        OmegaConf.structured(spec.config_cls()),
        gym.spaces.Box(-5, 5, (4,)),
        gym.spaces.Discrete(2),
        torch.device("cpu"),
    )
    return Evaluator(env_cfg, policy, seed=1, vector_mode=mode)


def test_async_evaluation_plays_the_episodes_of_sync() -> None:
    sync, async_ = evaluator("sync"), evaluator("async")
    try:
        for _ in range(2):  # the second evaluation's seeds follow on from the first's
            a, b = sync.evaluate(10), async_.evaluate(10)
            assert a == b
            assert a["episodes"] == 10 and a["length_min"] < a["length_max"]
    finally:
        sync.close()
        async_.close()


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_interrupted_evaluation_stops_and_the_next_one_runs(mode: str) -> None:
    ev = evaluator(mode)
    try:
        interrupted = threading.Event()
        interrupted.set()
        with pytest.raises(EvaluationInterrupted):
            ev.evaluate(10, interrupted)
        assert ev.evaluate(10)["episodes"] == 10
    finally:
        ev.close()
