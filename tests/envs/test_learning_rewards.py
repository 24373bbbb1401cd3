"""Rewards are clipped for learning only; episode returns stay the real score."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from envs import EnvConfig, learning_rewards
from tests.support.extra_envs import BIG_REWARDS
from tests.support.runs import run_main


def test_off_by_default_and_then_untouched() -> None:
    rewards = np.array([5.0, -3.0, 0.5], dtype=np.float32)
    assert EnvConfig().clip_rewards is False
    assert learning_rewards(rewards, EnvConfig()) is rewards


def test_clipped_to_unit_range_keeping_dtype() -> None:
    cfg = EnvConfig(clip_rewards=True)
    rewards = np.array([5.0, -3.0, 0.5, -0.25, 0.0, 1.0], dtype=np.float32)
    clipped = learning_rewards(rewards, cfg)
    np.testing.assert_array_equal(clipped, [1.0, -1.0, 0.5, -0.25, 0.0, 1.0])
    assert clipped.dtype == np.float32
    assert rewards[0] == 5.0  # the caller's rewards (which episode returns use) are unchanged


def test_atari_integer_rewards_become_their_sign() -> None:
    rewards = np.array([-21.0, -1.0, 0.0, 4.0, 200.0])
    np.testing.assert_array_equal(
        learning_rewards(rewards, EnvConfig(clip_rewards=True)), np.sign(rewards)
    )


@pytest.mark.slow
def test_episode_returns_are_the_unclipped_score(tmp_path: Path) -> None:
    result = run_main(
        "env_cfg.id=tests.support.extra_envs:BigRewardEnv",
        "env_cfg.clip_rewards=true",
        "general_cfg.mp_backend=single",
        "general_cfg.max_env_steps=200",
        "general_cfg.online_eval=false",
        "general_cfg.save_fig=false",
        "general_cfg.progress=false",
        f"general_cfg.tasks_dir={tmp_path}",
        "algo_cfg.learn_start=32",
        "algo_cfg.batch_size=16",
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    (task,) = list(tmp_path.iterdir())
    with open(task / "results" / "episodes.csv") as f:
        returns = [float(row["return"]) for row in csv.DictReader(f)]
    assert len(returns) >= 40
    assert returns == [pytest.approx(sum(BIG_REWARDS))] * len(returns)
