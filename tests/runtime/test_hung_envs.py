"""Envs that stop answering, for real: ``python main.py`` on a local Ray whose worker's env
blocks forever inside ``step`` (``HangingEnv``; with ``claim``, in one worker process only).

A worker that pushes nothing for ``general_cfg.worker_silent_after_s`` while it waits on no
call is taken as hung: its process is killed and Ray restarts it (its new process's envs
step on), so the run goes on, off-policy (DQN) and in synchronous rounds (PPO, whose
learner would otherwise wait on the hung worker's rollout until the stall watchdog stops
the run). After any stop, workers get ``WORKER_END_WAIT_S`` to end their loops; one still
stuck is ended, what it held counted as lost, so the process exits soon after its stop.
"""

from __future__ import annotations

import datetime
import os
import signal
import time
from pathlib import Path

import pytest

from joyrl_ray.run.driver import WORKER_END_WAIT_S
from tests.support.cli_runs import (
    TINY_DQN,
    assert_accounting,
    config_path,
    step_latency,
    summary_of,
)
from tests.support.procs import TrackedRun, task_dirs
from tests.support.watch import (
    final_checkpoint_updates,
    log_text,
    the_task,
    wait_for,
)

SILENT_S = 20  # worker_silent_after_s here (300 by default); a worker restarted as hung is
# not taken as hung again within twice that, while its new process starts
EXIT_WITHIN_S = 15  # from the stop (its log line) to main.py's exit


def hung_run(tmp_path: Path, config: str, *overrides: str, hang_after: int = 300) -> TrackedRun:
    hung, claim = tmp_path / "hung", tmp_path / "claim"
    return TrackedRun(
        (
            "--yaml",
            config_path(config),
            "general_cfg.seed=1",
            "general_cfg.progress=false",
            "general_cfg.save_fig=false",
            "env_cfg.id=tests.support.faulty_envs:HangingEnv",
            f"env_cfg.kwargs={{hang_after: {hang_after}, mark: {hung}, claim: {claim}}}",
            "general_cfg.max_step=500",  # CartPole's time limit (a class by path has none)
            f"general_cfg.worker_silent_after_s={SILENT_S}",
            f"general_cfg.tasks_dir={tmp_path}",
            *overrides,
        ),
        log_dir=tmp_path,
    )


def solved_at(task: Path) -> float:
    """When the evaluation that reached the threshold was logged (the run's stop)."""
    (line,) = [line for line in log_text(task).splitlines() if "eval at" in line][-1:]
    return datetime.datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f").timestamp()


def exited_at(run: TrackedRun, timeout_s: float) -> tuple[int | None, float]:
    code = run.wait(timeout_s, poll_s=0.1)
    return code, time.time()


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize("config", ["cartpole_dqn", "cartpole_ppo"])
def test_a_worker_whose_env_hangs_is_restarted_and_the_run_solves_and_exits_soon_after(
    tmp_path: Path, config: str
) -> None:
    # DQN solves CartPole in ~10k env steps: paced, it takes longer than the restart, on
    # any machine (PPO's synchronous rounds wait on the hung worker until it is restarted).
    pace = step_latency(0.005) if config == "cartpole_dqn" else ()
    run = hung_run(
        tmp_path,
        config,
        *pace,
        "general_cfg.n_workers=2",
        "general_cfg.reward_threshold=475",
        "general_cfg.max_env_steps=150000",
        "general_cfg.stall_timeout_s=120",
    )
    try:
        wait_for(run, "an env that hangs", (tmp_path / "hung").is_file, 180)
        code, exited = exited_at(run, 420)
        assert code == 0, run.stderr[-3000:]
        task = the_task(tmp_path)
        summary = summary_of(task)
        assert summary["stop_reason"] == "reward_threshold", summary["eval_history"][-3:]
        (hung,) = summary["workers_hung"]
        assert summary["worker_restarts_by_worker"].get(str(hung)) == 1
        log = log_text(task)
        assert f"worker {hung} pushed nothing for " in log, log[-3000:]
        assert exited - solved_at(task) < EXIT_WITHIN_S
        assert_accounting(summary)
    finally:
        run.kill()


@pytest.mark.slow
@pytest.mark.alone
@pytest.mark.timeout(600)
def test_sigterm_with_the_only_workers_env_hung_exits_143_soon_with_checkpoint_and_summary(
    tmp_path: Path,
) -> None:
    run = hung_run(
        tmp_path,
        "cartpole_dqn",
        "general_cfg.n_workers=1",
        "general_cfg.reward_threshold=null",
        "general_cfg.max_env_steps=100000000",
        "general_cfg.model_save_fre=100",
        "general_cfg.worker_silent_after_s=-1",  # never restarted: it stays stuck
        *TINY_DQN,
        hang_after=2000,
    )
    try:
        wait_for(run, "an env that hangs", (tmp_path / "hung").is_file, 180)
        task = wait_for(run, "a task directory", lambda: task_dirs(tmp_path), 10)[0]
        time.sleep(2)
        sent = time.monotonic()
        os.kill(run.proc.pid, signal.SIGTERM)  # to main.py alone, as a scheduler sends it
        code = run.wait(60, poll_s=0.1)
        took = time.monotonic() - sent
        assert code == 143, f"exit {code}\n{run.stderr[-3000:]}"
        assert took < EXIT_WITHIN_S, f"exit took {took:.1f} s after SIGTERM"
        summary = summary_of(task)
        assert summary["stop_reason"] == "interrupted"
        assert final_checkpoint_updates(task) == summary["updates"] > 0
        log = log_text(task)
        ended = f"worker 0 still running {WORKER_END_WAIT_S:g} s after the stop"
        assert ended in log or "roles still running" in log, log[-3000:]
        assert_accounting(summary)
    finally:
        run.kill()


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_worker_left_hung_is_ended_after_the_stop_and_the_process_exits_soon_after(
    tmp_path: Path,
) -> None:
    run = hung_run(
        tmp_path,
        "cartpole_dqn",
        "general_cfg.n_workers=2",
        # Any stop will do: 200 comes sooner than 475 (43 s alone against 63 s).
        "general_cfg.reward_threshold=200",
        "general_cfg.max_env_steps=150000",
        "general_cfg.worker_silent_after_s=-1",  # never restarted: the other worker stops it
    )
    try:
        code, exited = exited_at(run, 420)
        assert code == 0, run.stderr[-3000:]
        task = the_task(tmp_path)
        summary = summary_of(task)
        assert summary["stop_reason"] == "reward_threshold", summary["eval_history"][-3:]
        assert summary["workers_hung"] == []
        log = log_text(task)
        assert f"still running {WORKER_END_WAIT_S:g} s after the stop" in log, log[-3000:]
        assert exited - solved_at(task) < EXIT_WITHIN_S
        assert_accounting(summary)
    finally:
        run.kill()
