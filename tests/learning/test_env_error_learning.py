"""On-policy runs on Ray whose workers' envs raise on 1% of their steps still learn.

A synchronous rollout of 4 envs x 128 steps meets an error with probability
1 - 0.99^512 = 99.4%: were a rollout dropped whole at any error, PPO would barely update.
Each rollout keeps its good steps instead (see ``joyrl_ray.roles.worker.env_guard``): only
the failed step is lost, counted in ``transitions_dropped.env_error``, one per error. The
env is the test's own, by import path (``WorkerFlakyEnv``: CartPole raising in the run's
Worker actors only, so the evaluator's envs stay healthy); the recurrent case uses the
built-in ``fault_injection.env_error_rate`` on CartPole without velocities.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli_runs import assert_accounting, config_path, main_in_process, summary_of
from tests.support.procs import task_dirs


def run_to_the_solve(tmp_path: Path, capsys, config: str, *overrides: str) -> dict:
    code = main_in_process(
        (
            "--yaml",
            config_path(config),
            "general_cfg.n_workers=2",
            "general_cfg.progress=false",
            "general_cfg.save_fig=false",
            "general_cfg.reward_threshold=475",
            f"general_cfg.tasks_dir={tmp_path}",
            *overrides,
        )
    )
    assert code == 0, capsys.readouterr().err[-3000:]
    (task,) = task_dirs(tmp_path)
    return summary_of(task)


def assert_each_error_lost_one_step(summary: dict) -> None:
    steps, errors = summary["env_steps"], summary["env_errors"]
    assert 0.005 * steps < errors < 0.02 * steps, (errors, steps)
    assert summary["transitions_dropped"].get("env_error", 0) == errors
    assert_accounting(summary)


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize("config", ["cartpole_ppo", "cartpole_appo"])
def test_on_policy_cartpole_whose_worker_envs_raise_on_1_percent_of_steps_reaches_475(
    config: str, tmp_path: Path, ray_session, capsys
) -> None:
    summary = run_to_the_solve(
        tmp_path,
        capsys,
        config,
        "general_cfg.seed=1",
        "env_cfg.id=tests.support.faulty_envs:WorkerFlakyEnv",
        "env_cfg.kwargs={rate: 0.01}",
        "general_cfg.max_step=500",  # CartPole's time limit (a class by path has none)
        "general_cfg.max_env_steps=200000",
    )
    assert summary["stop_reason"] == "reward_threshold", summary["eval_history"][-3:]
    assert_each_error_lost_one_step(summary)
    assert "contact solver did not converge" in summary["first_env_error"]


@pytest.mark.release
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_lstm_ppo_on_cartpole_without_velocities_with_1_percent_of_worker_steps_raising_solves(
    tmp_path: Path, ray_session, capsys
) -> None:
    summary = run_to_the_solve(
        tmp_path,
        capsys,
        "cartpole_novel_ppo_lstm",
        "general_cfg.seed=3",
        "general_cfg.fault_injection.env_error_rate=0.01",
        "general_cfg.max_env_steps=200000",
    )
    assert summary["stop_reason"] == "reward_threshold", summary["eval_history"][-3:]
    assert_each_error_lost_one_step(summary)
