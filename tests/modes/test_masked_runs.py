"""MaskedChoiceEnv through the runner as ``main.py`` calls it, in one process
(``mp_backend=single``): DQN and PPO train with online evaluation and collect every
episode, then test mode runs from the checkpoint. Every action of every collected episode,
exploring ones included, is legal under the mask its observation held: not one illegal
penalty paid."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from joyrl_ray.run import trajectories
from joyrl_ray.run.runner import RunResult, run
from tests.support.runs import ROOT, make_cfg

QUICK = (
    "general_cfg.mp_backend=single",
    "general_cfg.seed=3",
    "general_cfg.collect_traj=true",
    "general_cfg.online_eval_episode=3",
    "general_cfg.reward_threshold=null",
    "general_cfg.save_fig=false",
)
#: algo -> (config, overrides): a few updates each, an evaluation among them.
RUNS = {
    "DQN": (
        "masked_choice_dqn",
        ("general_cfg.max_env_steps=600", "general_cfg.model_save_fre=100"),
    ),
    "PPO": ("masked_choice_ppo", ("general_cfg.max_env_steps=768", "general_cfg.model_save_fre=1")),
}


def assert_every_action_legal(result: RunResult) -> int:
    """Every collected step's action was legal; returns how many steps there were."""
    steps = 0
    for traj in trajectories.load(result.task_dir):
        masks = traj["obs"]["action_mask"].astype(bool)
        actions = np.asarray(traj["actions"]).astype(np.int64)
        assert masks[np.arange(len(actions)), actions].all(), (actions, masks)
        assert np.all(np.asarray(traj["rewards"]) >= 0.0)  # no illegal penalty
        steps += len(actions)
    return steps


@pytest.mark.parametrize("algo", list(RUNS))
@pytest.mark.timeout(300)
def test_masked_choice_trains_evaluates_and_tests_with_legal_actions_only(
    algo: str, tmp_path: Path
) -> None:
    config, overrides = RUNS[algo]
    yaml_path = str(ROOT / "configs" / f"{config}.yaml")
    trained = run(make_cfg(tmp_path, *QUICK, *overrides, yaml_path=yaml_path))
    assert trained.exit_code == 0, trained.summary.get("error")
    summary = trained.summary
    assert summary["algo"] == algo and summary["updates"] > 0 and summary["eval_history"]
    assert summary["env_errors"] == 0
    assert assert_every_action_legal(trained) == summary["env_steps"]

    tested = run(
        make_cfg(
            tmp_path,
            *QUICK,
            *overrides,
            "general_cfg.mode=test",
            f"general_cfg.load_path={trained.task_dir.name}",
            "general_cfg.max_episode=3",
            yaml_path=yaml_path,
        )
    )
    assert tested.exit_code == 0, tested.summary.get("error")
    assert tested.summary["episodes"] == 3
    assert assert_every_action_legal(tested) == 3 * 8
