"""The evaluator's episodes under ``env_cfg.vector_mode: async`` (one subprocess per
episode) are the episodes of ``sync``: same seeds, same greedy actions, same returns; an
interrupted evaluation stops, and the next one runs on fresh envs.

An env that raises during an evaluation does not fail it: the episode is dropped, the env
rebuilt and a fresh episode run in its place, counted; past as many env errors as the
evaluation has episodes, the evaluation reports that it failed, and raises nothing.
"""

from __future__ import annotations

import threading
from typing import Any

import gymnasium as gym
import pytest
import torch
from omegaconf import OmegaConf

from algos import get_algorithm
from envs.config import EnvConfig
from joyrl_ray.roles.evaluator.config import EvaluatorConfig
from joyrl_ray.roles.evaluator.evaluator import (
    EvaluationInterrupted,
    Evaluator,
    OnlineEvaluator,
)

SPACES = (gym.spaces.Box(-5, 5, (4,)), gym.spaces.Discrete(2))


def evaluator(mode: str, env_id: str = "CartPole-v1", **kwargs: Any) -> Evaluator:
    env_cfg = OmegaConf.structured(EnvConfig(id=env_id))
    spec = get_algorithm("PPO")
    torch.manual_seed(3)  # the same (untrained, stochastic-looking) net for both modes
    policy = spec.policy_cls(OmegaConf.structured(spec.config_cls()), *SPACES, torch.device("cpu"))
    return Evaluator(env_cfg, policy, seed=1, vector_mode=mode, **kwargs)


def test_async_evaluation_plays_the_episodes_of_sync() -> None:
    sync, async_ = evaluator("sync"), evaluator("async")
    try:
        for _ in range(2):  # the second evaluation's seeds follow on from the first's
            a, b = sync.evaluate(10).summary(), async_.evaluate(10).summary()
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
        assert ev.evaluate(10).summary()["episodes"] == 10
    finally:
        ev.close()


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_episodes_whose_env_step_raises_are_replaced_and_counted(mode: str) -> None:
    # 1% of steps raise (injected, seeded): episodes of ~30 steps, so some of 10 fail.
    ev = evaluator(mode, env_error_rate=0.01)
    try:
        episodes = ev.evaluate(10)
    finally:
        ev.close()
    assert episodes.error is None, episodes.error
    assert len(episodes.returns) == 10  # every episode asked for, replacements included
    assert 1 <= episodes.env_errors <= 10
    assert episodes.failed >= episodes.env_errors  # async: all running in the vector env
    assert episodes.last_error.startswith("evaluator: env step raised InjectedEnvError: ")


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_episodes_whose_env_reset_raises_are_replaced_and_counted(mode: str) -> None:
    ev = evaluator(mode, env_id="tests.support.faulty_envs:FlakyResetEnv")
    try:
        episodes = [ev.evaluate(10) for _ in range(3)]
    finally:
        ev.close()
    assert all(e.error is None and len(e.returns) == 10 for e in episodes), episodes
    errors = sum(e.env_errors for e in episodes)
    assert errors >= 1  # one seed in 13 fails to load
    last = next(e.last_error for e in episodes if e.env_errors)
    assert last.startswith("evaluator: env reset raised RuntimeError: scene "), last


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_past_its_error_budget_an_evaluation_fails_without_raising(mode: str) -> None:
    ev = evaluator(mode, env_id="tests.support.faulty_envs:BrokenStepEnv")
    try:
        for _ in range(2):  # and the next one runs (and fails) the same way
            episodes = ev.evaluate(10)
            assert episodes.returns == [] and episodes.env_errors == 11
            assert episodes.error is not None
            assert episodes.error.startswith(
                "11 env errors, more than the 10 an evaluation of 10 episodes tolerates "
                "(0 episodes finished, "
            ), episodes.error
            assert episodes.error.endswith(
                "the last: evaluator: env step raised RuntimeError: simulator crashed: "
                "segment 7 out of bounds"
            ), episodes.error
    finally:
        ev.close()


def test_the_online_evaluator_reports_a_failed_evaluation_as_its_result() -> None:
    spec = get_algorithm("PPO")
    cfg = EvaluatorConfig(
        algo_name="PPO",
        algo=OmegaConf.structured(spec.config_cls()),
        env=OmegaConf.structured(EnvConfig(id="CartPole-v1")),
        seed=1,
        episodes=10,
        max_step=-1,
        env_error_rate=0.5,  # every episode fails within a few steps
    )
    online = OnlineEvaluator(cfg, SPACES)
    try:
        result = online.evaluate(online.policy.get_weights(), updates=7, env_steps=700)
    finally:
        online.close()
    assert result.error is not None and result.env_errors == 11
    assert "InjectedEnvError: injected env error (fault_injection.eval_env_error_rate=0.5)" in (
        result.error
    )
    assert result.episodes_failed >= 11 and (result.updates, result.env_steps) == (7, 700)
