"""``general_cfg.max_updates`` stops a run at that many learner updates, exactly: the learner
learns no further and the coordinator stops the run on its report, whatever the env-step
budget, on either backend, and a resume counts on from the checkpoint's updates."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from joyrl_ray.config import ConfigError
from tests.support.cli_runs import TINY_DQN, train_in_process
from tests.support.procs import task_dirs

ENV_STEPS = 100_000  # far past what the updates take: only max_updates can stop the runs


def test_a_dqn_run_in_one_process_stops_at_exactly_max_updates_and_checkpoints_there(
    tmp_path: Path,
) -> None:
    summary = train_in_process(
        tmp_path,
        "cartpole_dqn",
        (
            "general_cfg.mp_backend=single",
            "general_cfg.max_updates=300",
            f"general_cfg.max_env_steps={ENV_STEPS}",
            "general_cfg.online_eval=false",
            *TINY_DQN,
        ),
        None,
    )
    assert summary["stop_reason"] == "max_updates", summary["stop_reason"]
    assert summary["updates"] == 300 and summary["learners"][0]["updates"] == 300
    assert summary["env_steps"] < ENV_STEPS
    (task,) = task_dirs(tmp_path)
    last = torch.load(task / "models" / "last.pt", weights_only=False)
    assert last["counters"]["updates"] == 300


@pytest.mark.timeout(300)
def test_a_ppo_run_on_ray_stops_at_exactly_max_updates_and_a_resume_counts_on(
    tmp_path: Path, ray_session
) -> None:
    common = (f"general_cfg.max_env_steps={ENV_STEPS}", "general_cfg.online_eval=false")
    first = train_in_process(
        tmp_path / "first", "cartpole_ppo", (*common, "general_cfg.max_updates=3"), None
    )
    assert first["backend"] == "ray" and first["stop_reason"] == "max_updates"
    assert first["updates"] == 3 and first["learners"][0]["updates"] == 3
    assert first["env_steps"] < ENV_STEPS
    (first_task,) = task_dirs(tmp_path / "first")
    resume = ("general_cfg.load_checkpoint=true", f"general_cfg.load_path={first_task}")
    with pytest.raises(ConfigError, match=r"max_updates=3 is the total .* already has 3 updates"):
        again = (*common, *resume, "general_cfg.max_updates=3")
        train_in_process(tmp_path / "again", "cartpole_ppo", again, None)
    resumed = train_in_process(
        tmp_path / "resumed",
        "cartpole_ppo",
        (*common, *resume, "general_cfg.max_updates=5"),
        None,
    )
    assert resumed["stop_reason"] == "max_updates" and resumed["updates"] == 5
