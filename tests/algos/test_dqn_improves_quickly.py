"""DQN learns CartPole in one process with a fixed seed and a bounded budget.

The solving runs of every algorithm are in ``tests/learning/`` (slow).
"""

from __future__ import annotations

from pathlib import Path

from joyrl_ray.run.runner import run
from tests.support.runs import ROOT, make_cfg

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
