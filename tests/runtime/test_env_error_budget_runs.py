"""The env-error budget in real runs (``python main.py`` on a local Ray, DQN on CartPole-v1,
2 workers, seed 1, the shipped config otherwise): an env that fails on 1% of its steps
learns to the end, its errors counted and logged, and is evaluated all the same (the
evaluator's envs failing too, on 0.1% of its steps; on 1% with the goal grid's short
episodes); one that fails on every step stops the run at once with one line."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest

from tests.support.cli_runs import assert_accounting, assert_solved, summary_of
from tests.support.procs import task_dirs
from tests.support.runs import ROOT, run_main
from tests.support.watch import log_text

CARTPOLE_DQN = (
    "--yaml",
    str(ROOT / "configs" / "cartpole_dqn.yaml"),
    "general_cfg.n_workers=2",
    "general_cfg.seed=1",
    "general_cfg.ray_num_cpus=2",
    "general_cfg.progress=false",
    "general_cfg.save_fig=false",
)
#: the most a run whose env raises on every step may take from its start (Ray's included) to
#: its stop: about 10 s on an idle 2-core machine
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


@pytest.mark.slow
def test_dqn_cartpole_with_env_failing_on_1_percent_of_steps_solves_counting_every_error(
    tmp_path: Path,
) -> None:
    # The evaluator's envs fail too, on 0.1% of their steps: 4 in 10 of the 500-step
    # episodes of a solved policy, each replaced. (On 1% of them, 99% of those episodes
    # would fail and no evaluation of a solved policy could finish: see docs/faults.md.)
    done = run_main(
        *CARTPOLE_DQN,
        "general_cfg.fault_injection.env_error_rate=0.01",
        "general_cfg.fault_injection.eval_env_error_rate=0.001",
        "general_cfg.reward_threshold=475",
        "general_cfg.max_env_steps=100000",
        f"general_cfg.tasks_dir={tmp_path}",
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    task = the_task(tmp_path)
    summary = summary_of(task)
    assert_solved(summary, 475, 100_000)
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
def test_short_episodes_evaluate_and_solve_with_1_percent_of_the_evaluators_steps_failing(
    tmp_path: Path,
) -> None:
    # The goal grid's episodes last a few steps, so at 1% nearly all of them finish and the
    # few that fail are replaced: the evaluation of a solved policy completes.
    done = run_main(
        "--yaml",
        str(ROOT / "configs" / "goalgrid_dqn.yaml"),
        *CARTPOLE_DQN[2:],
        "general_cfg.fault_injection.env_error_rate=0.01",
        "general_cfg.fault_injection.eval_env_error_rate=0.01",
        "general_cfg.online_eval_episode=50",
        f"general_cfg.tasks_dir={tmp_path}",
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    summary = summary_of(the_task(tmp_path))
    assert summary["stop_reason"] == "reward_threshold", summary["eval_history"]
    assert summary["eval_env_errors"] > 0 and summary["evals_failed"] == 0
    finished = summary["eval_history"][-1]
    assert finished["episodes"] == 50 and finished["return_mean"] >= 0.9
    assert sum(e["episodes_failed"] for e in summary["eval_history"]) == summary["eval_env_errors"]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_env_raising_on_every_step_stops_with_exit_1_and_one_line(
    tmp_path: Path, mode: str
) -> None:
    # The stop is timed from the log: from the run's first line (before Ray starts) to its
    # "stopping:" line. The process's timeout adds teardown and a margin for a loaded machine.
    done = run_main(
        *CARTPOLE_DQN,
        "env_cfg.id=tests.support.faulty_envs:BrokenStepEnv",
        f"env_cfg.vector_mode={mode}",
        f"general_cfg.tasks_dir={tmp_path}",
        timeout=120,
    )
    assert done.returncode == 1, done.stderr[-3000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, done.stderr[-3000:]
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
