"""The env-error budget in real runs (DQN, 2 workers, seed 1, the shipped config otherwise):
an env that fails on 1% of its steps runs on, its errors counted and logged and the steps
before each kept, and is evaluated all the same, the episodes whose env raised replaced
(CartPole-v1 for 8000 env steps, the evaluator's envs failing on 0.1% of their steps); on
the goal grid, whose short episodes finish even when the evaluator's envs fail on 1% of
their steps too, it learns to the solve; one that fails on every step stops the run at once
with one line.

No process of these runs is killed or signalled: each goes through main.py's own entry
(its argument parsing, its error line and exit code) in the test's process, on the test
session's Ray (``main_in_process``: the workers are real Ray actors and their envs raise
in them), which spares each run a Ray start and stop of its own."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest

from tests.support.cli_runs import (
    assert_accounting,
    config_path,
    main_in_process,
    summary_of,
)
from tests.support.procs import task_dirs
from tests.support.watch import error_lines, log_text

CARTPOLE_DQN = (
    "--yaml",
    config_path("cartpole_dqn"),
    "general_cfg.n_workers=2",
    "general_cfg.seed=1",
    "general_cfg.progress=false",
    "general_cfg.save_fig=false",
)
#: the most a run whose env raises on every step may take from its start (its roles'
#: start included) to its stop: a few seconds on an idle 2-core machine
EVERY_STEP_STOP_S = 30


def the_task(tasks: Path) -> Path:
    (task,) = task_dirs(tasks)
    return task


def logged_at(task: Path, text: str) -> float:
    """When the first log line holding ``text`` was written (seconds since the epoch)."""
    for line in log_text(task).splitlines():
        if text in line:
            return datetime.datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f").timestamp()
    raise AssertionError(f"no log line with {text!r}\n{log_text(task)[-3000:]}")


@pytest.mark.release
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_dqn_cartpole_with_env_failing_on_1_percent_of_steps_counts_every_error_and_evaluates(
    tmp_path: Path, ray_session, capsys
) -> None:
    # The evaluator's envs fail too, on 0.1% of their steps (as many as a solved policy's
    # 500-step episodes tolerate: see docs/faults.md), each failed episode replaced. Its
    # 14 evaluations of 20 episodes (one every 250 updates) take 5,000 steps or more even
    # when the policy's episodes are short: a few of them fail.
    code = main_in_process(
        (
            *CARTPOLE_DQN,
            "general_cfg.fault_injection.env_error_rate=0.01",
            "general_cfg.fault_injection.eval_env_error_rate=0.001",
            "general_cfg.reward_threshold=null",
            "general_cfg.max_env_steps=8000",
            "general_cfg.model_save_fre=250",
            "general_cfg.online_eval_episode=20",
            f"general_cfg.tasks_dir={tmp_path}",
        )
    )
    assert code == 0, capsys.readouterr().err[-3000:]
    task = the_task(tmp_path)
    summary = summary_of(task)
    assert summary["stop_reason"] == "max_env_steps" and summary["env_steps"] >= 8000
    # ~1 in 100 steps: the errors of the steps taken, all counted.
    assert 0.005 * summary["env_steps"] < summary["env_errors"] < 0.02 * summary["env_steps"]
    # The steps taken before each error are real transitions and are kept (cut off as
    # truncated); only a chunk that failed on its first step leaves steps to drop.
    dropped = summary["transitions_dropped"].get("env_error", 0)
    assert dropped < 0.02 * summary["transitions_collected"], summary["transitions_dropped"]
    first = summary["first_env_error"]
    assert "InjectedEnvError" in first and "env_error_rate=0.01" in first, first
    assert first in log_text(task)
    assert_accounting(summary)
    # Evaluations replace the episodes whose env raised, and count them.
    assert summary["eval_env_errors"] > 0
    assert sum(e["episodes_failed"] for e in summary["eval_history"]) > 0
    assert "injected env error (fault_injection.eval_env_error_rate=0.001)" in log_text(task)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_short_episodes_evaluate_and_solve_with_1_percent_of_the_evaluators_steps_failing(
    tmp_path: Path, ray_session, capsys
) -> None:
    # The goal grid's episodes last a few steps, so at 1% nearly all of them finish and the
    # few that fail are replaced: the evaluation of a solved policy completes. 200 episodes
    # of a solved policy are ~1,200 steps, so one of them fails but for a chance of ~1e-5
    # (50 episodes left it at ~5%, and a run solved at its first evaluation saw none).
    code = main_in_process(
        (
            "--yaml",
            config_path("goalgrid_dqn"),
            *CARTPOLE_DQN[2:],
            "general_cfg.fault_injection.env_error_rate=0.01",
            "general_cfg.fault_injection.eval_env_error_rate=0.01",
            "general_cfg.online_eval_episode=200",
            f"general_cfg.tasks_dir={tmp_path}",
        )
    )
    assert code == 0, capsys.readouterr().err[-3000:]
    summary = summary_of(the_task(tmp_path))
    assert summary["stop_reason"] == "reward_threshold", summary["eval_history"]
    assert summary["eval_env_errors"] > 0 and summary["evals_failed"] == 0
    finished = summary["eval_history"][-1]
    assert finished["episodes"] == 200 and finished["return_mean"] >= 0.9
    assert sum(e["episodes_failed"] for e in summary["eval_history"]) == summary["eval_env_errors"]


@pytest.mark.timeout(180)
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_env_raising_on_every_step_stops_with_exit_1_and_one_line(
    tmp_path: Path, mode: str, ray_session, capsys
) -> None:
    # The stop is timed from the log: from the run's first line (before its roles start) to
    # its "stopping:" line. Most of that time, and of the test's, is the roles' start: each
    # is a process of its own that imports torch; the learner is often still starting when
    # the worker gives up, and the run waits for it to end.
    code = main_in_process(
        (
            *CARTPOLE_DQN,
            "general_cfg.n_workers=1",  # one worker's failing env stops the run: no second
            "env_cfg.id=tests.support.faulty_envs:BrokenStepEnv",
            f"env_cfg.vector_mode={mode}",
            f"general_cfg.tasks_dir={tmp_path}",
        )
    )
    stderr = capsys.readouterr().err
    assert code == 1, stderr[-3000:]
    errors = error_lines(stderr)
    assert len(errors) == 1, stderr[-3000:]
    assert errors[0].startswith("error: worker "), errors
    assert errors[0].endswith(
        "env step raised RuntimeError: simulator crashed: segment 7 out of bounds, and failed "
        "again each of the 3 times it was rebuilt"
    ), errors
    task = the_task(tmp_path)
    took = logged_at(task, "stopping:") - logged_at(task, "task directory")
    assert took < EVERY_STEP_STOP_S, f"stopped {took:.1f} s after the start"
    summary = summary_of(task)
    assert summary["stop_reason"] == "env_failed"
    assert summary["env_errors"] >= 4  # the first failure and each of the 3 rebuilds
    assert (task / "models" / "last.pt").is_file()  # the final checkpoint
    assert_accounting(summary)
