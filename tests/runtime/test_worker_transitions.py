"""What a worker pushes is the envs' own experience, whatever the chunk boundaries.

A real Worker steps a vector of real envs and pushes into a real replay shard and
coordinator, in this process (the ``mp_backend: single`` arrangement). The env counts its
steps in its observation, so every stored transition can be checked against the env
itself: each ``next_obs`` follows its ``obs``, an ended episode's ``next_obs`` is its true
last observation (never the observation of the reset that followed), and the reported
episode returns and lengths are the env's. Chunks of 7 steps over episodes of 5 make episodes
cross chunk boundaries and end in every row of a chunk.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from algos import get_algorithm
from joyrl_ray.backends.planes import LocalPlanes, PlaneSetup
from joyrl_ray.batch import (
    ACTIONS,
    DISCOUNTS,
    MEMORY,
    NEXT_OBS,
    OBS,
    REWARDS,
    TERMINATED,
    TRUNCATED,
)
from joyrl_ray.config import RunConfig, load_config
from joyrl_ray.control.coordinator import StopRule
from joyrl_ray.roles.worker.config import WorkerConfig
from joyrl_ray.roles.worker.worker import Worker
from joyrl_ray.wire.handles import LocalStore

GOAL, N_ENVS, CHUNK, STEPS = 5, 3, 7, 420  # STEPS: 20 chunks of 7 vector steps of 3 envs


class StepCountEnv(gym.Env):
    """Observation = steps taken so far; reward = that count; ends after ``GOAL`` steps."""

    observation_space = gym.spaces.Box(0.0, 100.0, shape=(1,), dtype=np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed: int | None = None, options: Any = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(1, dtype=np.float32), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        self.t += 1
        return np.array([self.t], dtype=np.float32), float(self.t), self.t >= GOAL, False, {}


def started_worker(overrides: list[str], max_env_steps: int) -> tuple[Worker, LocalPlanes]:
    """Worker 0 of the run ``overrides`` configure, started on its coordinator and data plane,
    all in this process (as ``mp_backend: single`` has them)."""
    cfg = RunConfig.from_omegaconf(load_config(None, ["general_cfg.mp_backend=single", *overrides]))
    setup = PlaneSetup(
        stop_rule=StopRule(max_env_steps=max_env_steps),
        needs=get_algorithm(cfg.general.algo_name).policy_cls.data_needs(cfg.algo),
        n_workers=1,
        learner_lag_tolerance=-1,
    )
    store = LocalStore()
    planes = LocalPlanes(setup, store)
    worker = Worker(0, WorkerConfig.of(cfg), planes.sender(0), store)
    worker.start()
    return worker, planes


def collect(*overrides: str) -> tuple[dict[str, np.ndarray], list[Any]]:
    """Every transition the worker pushed (in order), and the episodes it reported."""
    worker, planes = started_worker(
        [
            f"env_cfg.id={__name__}:StepCountEnv",
            f"general_cfg.n_envs_per_worker={N_ENVS}",
            f"general_cfg.worker_chunk_steps={CHUNK}",
            f"general_cfg.max_env_steps={STEPS}",
            "algo_cfg.learn_start=100000",  # collection only
            *overrides,
        ],
        STEPS,
    )
    while worker.step(0.0):
        pass
    worker.finish()
    buffer = planes.objects[0].buffer
    stored = {key: column[: len(buffer)] for key, column in buffer.columns.items()}
    return stored, planes.coordinator_object.drain_reports().episodes


@pytest.fixture(scope="module")
def collected() -> tuple[dict[str, np.ndarray], list[Any]]:
    return collect()


def test_every_transition_steps_the_count_by_one(collected) -> None:
    stored, _ = collected
    assert len(stored[OBS]) == STEPS
    np.testing.assert_array_equal(stored[NEXT_OBS], stored[OBS] + 1)
    np.testing.assert_array_equal(stored[REWARDS], stored[NEXT_OBS][:, 0])
    assert set(np.unique(stored[ACTIONS])) <= {0, 1}


def test_ended_episodes_keep_their_true_last_observation(collected) -> None:
    stored, _ = collected
    ended = stored[DISCOUNTS] == 0  # terminated: no bootstrap
    assert ended.sum() == STEPS // GOAL
    np.testing.assert_array_equal(stored[NEXT_OBS][ended, 0], GOAL)  # not the reset's 0
    assert (stored[OBS][:, 0] < GOAL).all()  # a terminal observation is never acted on


def test_reported_episodes_are_the_envs_returns_and_lengths(collected) -> None:
    _, episodes = collected
    assert len(episodes) == STEPS // GOAL
    assert {(e.ret, e.length) for e in episodes} == {(GOAL * (GOAL + 1) / 2, GOAL)}
    ends = [e.env_steps for e in episodes]
    assert ends == sorted(ends)  # reported in the order they ended
    # With 3 envs in lockstep, episodes end together every GOAL vector steps.
    assert ends[::N_ENVS] == [N_ENVS * (GOAL * k - 1) for k in range(1, len(ends) // N_ENVS + 1)]


def test_a_time_limit_truncation_keeps_its_last_observation_and_bootstraps() -> None:
    """``max_step`` cuts every episode after LIMIT steps, before the env ends it itself."""
    limit, gamma = 3, 0.9
    stored, episodes = collect(f"general_cfg.max_step={limit}", f"algo_cfg.gamma={gamma}")
    np.testing.assert_array_equal(stored[NEXT_OBS], stored[OBS] + 1)  # never the reset's obs
    cut = stored[NEXT_OBS][:, 0] == limit
    assert cut.sum() == N_ENVS * (STEPS // N_ENVS // limit)  # every finished episode
    # Truncated, not terminated: the value of the last observation is bootstrapped.
    np.testing.assert_allclose(stored[DISCOUNTS][cut], gamma)
    np.testing.assert_allclose(stored[DISCOUNTS][~cut], gamma)
    assert {(e.ret, e.length) for e in episodes} == {(limit * (limit + 1) / 2, limit)}


def test_a_recurrent_policy_acts_every_episodes_first_step_from_a_zero_memory() -> None:
    """PPO with an LSTM on CartPole: the rollout's ``memory`` column holds the memory each
    step was acted from; where an episode starts (the first step, and each step after an
    end) it must be zeros, elsewhere it is what the episode has seen."""
    rollout_len, n_envs = 96, 2
    worker, planes = started_worker(
        [
            "general_cfg.algo_name=PPO",
            "env_cfg.id=CartPole-v1",
            "general_cfg.seed=1",
            f"general_cfg.n_envs_per_worker={n_envs}",
            f"algo_cfg.rollout_len={rollout_len}",
            "algo_cfg.actor_layers=[{layer_type: lstm, layer_dim: [8], activation: none}]",
            "algo_cfg.critic_layers=[{layer_type: linear, layer_dim: [8]}]",
        ],
        rollout_len * n_envs,
    )
    # A rollout is acted with the learner's weights: publish the worker's own as its first.
    assert planes.coordinator_object.publish_weights(worker.policy.get_weights(), version=1)
    worker.step(0.0)  # one rollout, into the rollout queue
    worker.close()
    (rollout,) = [queued.batch for queued in planes.objects[0].rollouts]
    memory = rollout[MEMORY]  # [T, envs, k, H]
    ended = rollout[TERMINATED] | rollout[TRUNCATED]
    first = np.zeros_like(ended)
    first[0], first[1:] = True, ended[:-1]
    assert ended.sum() >= 2 * n_envs  # CartPole with an untrained policy: short episodes
    assert np.all(memory[first] == 0)
    assert np.all(np.abs(memory[~first]).sum(axis=(-2, -1)) > 0)
