"""APPO and IMPALA: V-trace-corrected targets from stale rollouts, and learning a bandit."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from algos.appo.config import APPOConfig, IMPALAConfig
from algos.appo.policy import APPO, IMPALA
from algos.base import to_tensor
from tests.algos.test_ppo_learn_step import (
    OBS,
    SPACES,
    assert_learned,
    greedy_return,
    rollout,
)
from tests.algos.test_vtrace import reference_vtrace


def make(cls: type[APPO], space_kind: str, **overrides: object) -> APPO:
    torch.manual_seed(0)
    config = IMPALAConfig if cls is IMPALA else APPOConfig
    algo = cls(config(**overrides), OBS, SPACES[space_kind], torch.device("cpu"))
    algo.seed(0)
    algo.policy.seed(0)
    return algo


def targets(algo: APPO, batch: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    steps, envs = batch["rewards"].shape
    obs = to_tensor(batch["obs"], algo.device).flatten(0, 1)
    values = algo._values(obs).reshape(steps, envs)
    actions = algo._flat_actions(batch["actions"], steps * envs)
    advantages, vs, _ = algo._targets(batch, obs, actions, values, torch.zeros_like(values))
    return advantages.numpy(), (values.reshape(-1) + 0).numpy()


def test_appo_weighs_a_stale_rollout_by_the_clipped_importance_ratio() -> None:
    """One-step episodes: the advantage is ``rho * (r - V)`` with ``rho = min(1, pi/mu)``."""
    algo = make(APPO, "discrete")
    batch = rollout(algo.policy, "discrete", np.random.default_rng(0))
    fresh, values = targets(algo, batch)
    np.testing.assert_allclose(fresh, batch["rewards"].reshape(-1) - values, rtol=1e-5, atol=1e-6)

    # The behaviour policy found these actions twice as likely as the learner does now.
    half = {**batch, "log_prob": batch["log_prob"] + np.log(2.0)}
    np.testing.assert_allclose(targets(algo, half)[0], 0.5 * fresh, rtol=1e-5, atol=1e-6)
    # Far less likely: the ratio is clipped at rho_bar = 1, as for fresh data.
    clipped = {**batch, "log_prob": batch["log_prob"] - 5.0}
    np.testing.assert_allclose(targets(algo, clipped)[0], fresh, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("cls", [APPO, IMPALA], ids=["APPO", "IMPALA"])
@pytest.mark.parametrize("kind", ["discrete", "gaussian"])
def test_learns_a_bandit(cls: type[APPO], kind: str) -> None:
    algo = make(cls, kind, lr=3e-3, log_std_init=-1.0)
    rng = np.random.default_rng(0)
    obs = rng.uniform(-1, 1, (512, 2)).astype(np.float32)
    before = greedy_return(algo.policy, kind, obs)
    stale = None
    for _ in range(60):
        fresh = rollout(algo.policy, kind, rng)
        # Learn from the rollout acted out one update ago, as an asynchronous learner would.
        result = algo.learn(stale if stale is not None else fresh)
        stale = fresh
    after = greedy_return(algo.policy, kind, obs)
    assert all(np.isfinite(v) for v in result.metrics.values()), result.metrics
    assert_learned(kind, before, after)


@pytest.mark.parametrize("cls", [APPO, IMPALA], ids=["APPO", "IMPALA"])
def test_targets_follow_the_configured_vtrace_lambda_rho_bar_and_c_bar(cls: type[APPO]) -> None:
    """Episodes of several steps and ratios on both sides of each threshold: the learner's
    advantages and value targets are the paper's V-trace with the config's own settings."""
    clipping = {"rho_bar": 1.5, "c_bar": 0.6, "vtrace_lambda": 0.9}
    algo = make(cls, "discrete", gamma=0.97, **clipping)
    rng = np.random.default_rng(0)
    batch = rollout(algo.policy, "discrete", rng)
    steps, envs = batch["rewards"].shape
    batch["terminated"] = rng.random((steps, envs)) < 0.1
    batch["truncated"] = (rng.random((steps, envs)) < 0.1) & ~batch["terminated"]
    batch["log_prob"] = batch["log_prob"] + rng.uniform(-1.5, 1.5, (steps, envs))
    obs = to_tensor(batch["obs"], algo.device).flatten(0, 1)
    values = algo._values(obs).reshape(steps, envs)
    next_values = torch.as_tensor(rng.normal(size=(steps, envs)), dtype=torch.float32)
    actions = algo._flat_actions(batch["actions"], steps * envs)

    advantages, vs, log_pi = algo._targets(batch, obs, actions, values, next_values)

    ratios = np.exp(log_pi.numpy().reshape(steps, envs) - batch["log_prob"])
    assert ratios.min() < 0.6 and 0.6 < np.median(ratios) < 1.5 and ratios.max() > 1.5
    expected_vs, expected_advantages = reference_vtrace(
        ratios,
        batch["rewards"],
        values.numpy(),
        next_values.numpy(),
        batch["terminated"],
        batch["truncated"],
        gamma=0.97,
        rho_bar=1.5,
        c_bar=0.6,
        lam=0.9,
    )
    np.testing.assert_allclose(vs.numpy().reshape(steps, envs), expected_vs, atol=1e-5)
    np.testing.assert_allclose(
        advantages.numpy().reshape(steps, envs), expected_advantages, atol=1e-5
    )
