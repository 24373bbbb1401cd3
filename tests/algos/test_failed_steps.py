"""A rollout's failed steps are never learned from.

An env that raises inside a rollout leaves its failed step in the ``[time, env]`` grid,
marked ``valid`` False, and the step before it truncated (see
``joyrl_ray.roles.worker.env_guard``). Whatever such a step holds (observation, action,
reward, log-probability, next observation), PPO's, APPO's and a recurrent PPO's update
must come out the same; without the mark, the same garbage changes it.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

from joyrl_ray.batch import ACTIONS, NEXT_OBS, OBS, REWARDS, TERMINATED, TRUNCATED, VALID
from tests.algos.test_recurrent import CPU, OBS_SPACE, ppo_cfg, rollout

CASES = {"ppo": ("PPO", "linear"), "appo": ("APPO", "linear"), "ppo-lstm": ("PPO", "lstm")}


def learner(algo: str, kind: str):
    spec, cfg = ppo_cfg(kind, algo, rollout_len=32, n_epochs=2, n_minibatches=2)
    torch.manual_seed(0)
    algorithm = spec.algorithm_cls(cfg, OBS_SPACE, gym.spaces.Discrete(2), CPU)
    algorithm.seed(0)
    policy = spec.policy_cls(cfg, OBS_SPACE, gym.spaces.Discrete(2), CPU)
    policy.set_weights(algorithm.get_weights())
    policy.seed(4)
    return algorithm, policy


def with_failed_steps(batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """``batch`` with a failed step in the middle of an episode of each env, marked as the
    worker marks it: not valid, truncated, and the step before it truncated."""
    batch = {key: value.copy() for key, value in batch.items()}
    done = batch[TERMINATED] | batch[TRUNCATED]
    valid = np.ones(done.shape, bool)
    for i in range(done.shape[1]):
        t = next(t for t in range(4, len(done) - 1) if not done[t - 1][i] and not done[t][i])
        valid[t, i] = False
        batch[TRUNCATED][t, i] = batch[TRUNCATED][t - 1, i] = True
        batch[NEXT_OBS][t, i] = batch[OBS][t, i]
    batch[VALID] = valid
    return batch


def garbled(batch: dict[str, np.ndarray], seed: int) -> dict[str, np.ndarray]:
    """``batch`` with every field of its failed steps replaced by large random values."""
    rng = np.random.default_rng(seed)
    batch = {key: value.copy() for key, value in batch.items()}
    failed = ~batch[VALID]
    n = int(failed.sum())
    batch[OBS][failed] = rng.normal(0.0, 5.0, (n, *batch[OBS].shape[2:]))
    batch[NEXT_OBS][failed] = rng.normal(0.0, 5.0, (n, *batch[NEXT_OBS].shape[2:]))
    batch[REWARDS][failed] = rng.normal(0.0, 1000.0, n)
    batch[ACTIONS][failed] = 1 - batch[ACTIONS][failed]
    batch["log_prob"][failed] = rng.uniform(-5.0, 0.0, n)
    return batch


def weights_after_one_update(algo: str, kind: str, batch: dict[str, np.ndarray]) -> list:
    algorithm, _ = learner(algo, kind)
    algorithm.learn({key: value.copy() for key, value in batch.items()})
    modules = (algorithm.policy.actor, algorithm.critic)
    return [p.detach().clone() for module in modules for p in module.parameters()]


@pytest.mark.parametrize("case", sorted(CASES))
def test_what_a_failed_step_holds_never_changes_the_update(case: str) -> None:
    algo, kind = CASES[case]
    _, policy = learner(algo, kind)
    batch = with_failed_steps(rollout(policy, 32, 4, seed=2))
    plain = weights_after_one_update(algo, kind, batch)
    for seed in (1, 2):
        other = weights_after_one_update(algo, kind, garbled(batch, seed))
        for a, b in zip(plain, other, strict=True):
            torch.testing.assert_close(a, b, rtol=0, atol=1e-6)
    # The test can tell: without the mark, the same garbage moves the weights.
    unmarked = garbled(batch, 1)
    del unmarked[VALID]
    moved = weights_after_one_update(algo, kind, unmarked)
    assert any(not torch.allclose(a, b, atol=1e-4) for a, b in zip(plain, moved, strict=True))
