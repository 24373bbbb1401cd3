"""PPO, SAC and TD3 learn in one process with a fixed seed and a bounded budget.

Each run uses the shipped yaml (the same hyperparameters a user runs) on the single
backend, so the result is reproducible; the budgets are a few times what seed 1 needs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from joyrl_ray.runner import run
from tests.conftest import ROOT, make_cfg


def yaml_path(name: str) -> str:
    return str(ROOT / "configs" / f"{name}.yaml")


def train(tmp_path: Path, name: str, *overrides: str) -> dict:
    cfg = make_cfg(
        tmp_path,
        "general_cfg.mp_backend=single",
        "general_cfg.seed=1",
        "general_cfg.save_fig=false",
        *overrides,
        yaml_path=yaml_path(name),
    )
    return run(cfg).summary


def best_return(summary: dict) -> float:
    return max(e["return_mean"] for e in summary["eval_history"])


def test_ppo_improves_on_cartpole_quickly(tmp_path: Path) -> None:
    summary = train(
        tmp_path,
        "cartpole_ppo",
        "general_cfg.n_workers=1",
        "general_cfg.max_env_steps=6000",
        "general_cfg.reward_threshold=150",
        "general_cfg.online_eval_episode=5",
    )
    assert best_return(summary) >= 150, summary["eval_history"]


@pytest.mark.slow
def test_ppo_solves_cartpole(tmp_path: Path) -> None:
    summary = train(tmp_path, "cartpole_ppo", "general_cfg.max_env_steps=50000")
    assert summary["solved"] and best_return(summary) >= 475, summary["eval_history"]


@pytest.mark.slow
def test_ppo_gaussian_learns_pendulum(tmp_path: Path) -> None:
    summary = train(tmp_path, "pendulum_ppo", "general_cfg.max_env_steps=100000")
    assert summary["solved"] and best_return(summary) >= -300, summary["eval_history"]


@pytest.mark.slow
def test_sac_learns_pendulum(tmp_path: Path) -> None:
    summary = train(tmp_path, "pendulum_sac", "general_cfg.max_env_steps=12000")
    assert summary["solved"] and best_return(summary) >= -200, summary["eval_history"]


@pytest.mark.slow
def test_td3_learns_pendulum(tmp_path: Path) -> None:
    summary = train(tmp_path, "pendulum_td3", "general_cfg.max_env_steps=20000")
    assert summary["solved"] and best_return(summary) >= -200, summary["eval_history"]
