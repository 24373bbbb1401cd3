"""DQN learns CartPole in one process with a fixed seed and a bounded budget."""

from __future__ import annotations

from pathlib import Path

import pytest

from joyrl_ray.runner import run
from tests.conftest import ROOT, make_cfg

CARTPOLE_DQN = str(ROOT / "configs" / "cartpole_dqn.yaml")


def test_dqn_improves_quickly(tmp_path: Path) -> None:
    cfg = make_cfg(
        tmp_path,
        "general_cfg.mp_backend=single",
        "general_cfg.seed=1",
        "general_cfg.max_env_steps=12000",
        "general_cfg.reward_threshold=150",
        yaml_path=CARTPOLE_DQN,
    )
    result = run(cfg)
    best = max(e["return_mean"] for e in result.summary["eval_history"])
    assert best >= 150, result.summary["eval_history"]


@pytest.mark.slow
def test_dqn_solves_cartpole(tmp_path: Path) -> None:
    cfg = make_cfg(
        tmp_path,
        "general_cfg.mp_backend=single",
        "general_cfg.seed=1",
        "general_cfg.max_env_steps=60000",
        "general_cfg.reward_threshold=475",
        yaml_path=CARTPOLE_DQN,
    )
    result = run(cfg)
    assert result.summary["solved"], result.summary["eval_history"]
    assert result.summary["stop_reason"] == "reward_threshold"


@pytest.mark.slow
@pytest.mark.parametrize(
    "overrides",
    [
        ("algo_cfg.buffer_type=PER",),
        ("general_cfg.algo_name=DoubleDQN", "algo_cfg.n_step=3"),
        ("general_cfg.algo_name=DuelingDQN", "algo_cfg.buffer_type=PER", "algo_cfg.n_step=3"),
    ],
    ids=["per", "double-nstep", "dueling-per-nstep"],
)
def test_dqn_variants_learn(tmp_path: Path, overrides: tuple[str, ...]) -> None:
    cfg = make_cfg(
        tmp_path,
        "general_cfg.mp_backend=single",
        "general_cfg.seed=2",
        "general_cfg.max_env_steps=20000",
        "general_cfg.reward_threshold=200",
        *overrides,
        yaml_path=CARTPOLE_DQN,
    )
    result = run(cfg)
    assert result.summary["solved"], result.summary["eval_history"]
