"""PPO improves quickly in one process with a fixed seed and a bounded budget.

The run uses the shipped yaml (the same hyperparameters a user runs) on the single
backend, so the result is reproducible. The solving runs of PPO, SAC and TD3 are in
``tests/learning/`` (slow).
"""

from __future__ import annotations

from pathlib import Path

from joyrl_ray.run.runner import run
from tests.support.runs import ROOT, make_cfg


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
