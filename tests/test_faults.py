"""Faults caused for real in real runs: ``python main.py`` on a local Ray, killed roles, envs
that raise or hang, signals. Each run asserts the accounting identity
(``transitions_collected == transitions_stored + sum(transitions_dropped)``) besides what
the fault should lead to.

Roles are found as a user would find them: the processes below main.py whose command line
is ``ray::Worker...``, ``ray::Learner...``, ``ray::DataServer`` (a replay shard) or
``ray::Coordinator``, killed with SIGKILL by pid. The learning runs are DQN on CartPole-v1
with two workers, which solves (evaluation >= 475) at 20-40k env steps; each must do so
within 80k despite the fault.

The fault runs go two at a time (``tests/side_by_side.py``); the signal tests, which time
the exit and look for leftover Ray processes machine-wide, run alone.
"""

from __future__ import annotations

import csv
import json
import os
import re
import shlex
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
import torch

from joyrl_ray.checkpoint import checkpoint_updates
from tests.conftest import ROOT
from tests.runtime.runtime_procs import (
    TrackedRun,
    descendants,
    orphaned_ray_procs,
    ray_procs,
    task_dirs,
    wait_gone,
)
from tests.side_by_side import Outcome, selected_tests, side_by_side

T = TypeVar("T")
MAX_ENV_STEPS = 80_000
SOLVED = 475.0
CARTPOLE = (
    "--yaml",
    str(ROOT / "configs" / "cartpole_dqn.yaml"),
    "general_cfg.n_workers=2",
    "general_cfg.seed=1",
    f"general_cfg.reward_threshold={SOLVED:g}",
    f"general_cfg.max_env_steps={MAX_ENV_STEPS}",
    "general_cfg.progress=false",
)
RUN_TIMEOUT_S = 300.0  # a learning run here takes 30-120 s; beyond this it hangs


def start(tmp_path: Path, *overrides: str) -> TrackedRun:
    return TrackedRun(
        (*CARTPOLE, f"general_cfg.tasks_dir={tmp_path}", *overrides), log_dir=tmp_path
    )


def wait_for(run: TrackedRun, what: str, probe: Callable[[], T | None], timeout: float) -> T:
    """Poll ``probe`` until it returns something; main.py must stay alive meanwhile."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run.poll_tree()
        found = probe()
        if found:
            return found
        code = run.proc.poll()
        assert code is None, f"main.py exited ({code}) before {what}\n{run.stderr[-3000:]}"
        time.sleep(0.3)
    raise AssertionError(f"no {what} within {timeout:g} s\n{run.stderr[-3000:]}")


def finish(run: TrackedRun, timeout: float = RUN_TIMEOUT_S) -> int:
    code = run.wait(timeout)
    assert code is not None, f"main.py still running after {timeout:g} s\n{run.stderr[-3000:]}"
    return code


def the_task(tmp_path: Path) -> Path:
    (task,) = task_dirs(tmp_path)
    return task


def env_steps(tmp_path: Path) -> int:
    """Env steps of the run so far, from the episodes the driver has written."""
    dirs = task_dirs(tmp_path)
    path = dirs[-1] / "results" / "episodes.csv" if dirs else None
    if path is None or not path.is_file():
        return 0
    with path.open(newline="") as f:
        rows = list(csv.DictReader(f))
    return int(rows[-1]["env_steps"]) if rows else 0


def log_text(task: Path) -> str:
    path = task / "logs" / "log.txt"
    return path.read_text() if path.is_file() else ""


def role_pids(run: TrackedRun, prefix: str) -> set[int]:
    """Pids of the run's processes whose command line starts with ``prefix``."""
    return {pid for (pid, _), line in descendants(run.proc.pid).items() if line.startswith(prefix)}


def two(pids: set[int]) -> set[int] | None:
    return pids if len(pids) == 2 else None


def kill(pid: int) -> None:
    os.kill(pid, signal.SIGKILL)


def summary_of(task: Path) -> dict[str, Any]:
    return json.loads((task / "results" / "summary.json").read_text())


def assert_accounting(summary: dict[str, Any]) -> None:
    collected = summary["transitions_collected"]
    stored, dropped = summary["transitions_stored"], summary["transitions_dropped"]
    assert collected == stored + sum(dropped.values()), (collected, stored, dropped)


def assert_solved(summary: dict[str, Any]) -> None:
    assert summary["stop_reason"] == "reward_threshold", summary["stop_reason"]
    assert summary["solved"] is True
    solving = [e for e in summary["eval_history"] if e["return_mean"] >= SOLVED]
    assert solving and solving[0]["env_steps"] <= MAX_ENV_STEPS, summary["eval_history"]


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("error:")]


def final_checkpoint_updates(task: Path) -> int:
    return checkpoint_updates(torch.load(task / "models" / "last.pt", weights_only=True))


# ----- workers -----
def killed_worker_run(tmp_path: Path) -> None:
    run = start(tmp_path, "general_cfg.max_worker_restarts=2")
    try:
        pids = wait_for(run, "two workers", lambda: two(role_pids(run, "ray::Worker")), 120)
        wait_for(run, "2000 env steps", lambda: env_steps(tmp_path) >= 2000, 120)
        victim = min(pids)
        kill(victim)  # kill 1: Ray restarts it, the DataServer counts the restart
        seen = set(pids)
        for restart in (1, 2):
            wait_for(
                run,
                f"restart {restart} in the log",
                lambda r=restart: f"(restart {r})" in log_text(the_task(tmp_path)),
                120,
            )
            now = role_pids(run, "ray::Worker")
            (victim,) = now - seen  # the restarted worker is the one process not seen before
            seen |= now
            # Right after it registered again, so that all three kills come well before the
            # run could solve (20-40k env steps), however slowly restarts go on a busy machine.
            kill(victim)  # kill 2 (a restart), then kill 3: past its budget of 2, dropped
        code = finish(run)
        task = the_task(tmp_path)
        summary = summary_of(task)
        assert code == 0, run.stderr[-3000:]
        assert summary["worker_restarts"] == 2
        assert list(summary["worker_restarts_by_worker"].values()) == [2]
        (dropped,) = summary["workers_dropped"]
        assert summary["worker_restarts_by_worker"] == {str(dropped): 2}
        log = log_text(task)
        assert log.count(f"worker {dropped} was restarted on") == 2, log
        assert f"worker {dropped} died past its restart budget (2)" in log, log
        assert_solved(summary)
        assert_accounting(summary)
    finally:
        run.kill()


# ----- envs -----
def env_errors_run(tmp_path: Path) -> None:
    # About 1 in 100 steps raises: ~200 errors before CartPole is solved, within the default
    # budget (max_env_errors_per_1000=20 over the last 50k env steps).
    run = start(tmp_path, "general_cfg.fault_injection.env_error_rate=0.01")
    try:
        code = finish(run)
        task = the_task(tmp_path)
        summary = summary_of(task)
        assert code == 0, run.stderr[-3000:]
        assert_solved(summary)
        assert summary["env_errors"] > 0
        # The steps taken before each error are real transitions and are kept (cut off as
        # truncated); only a chunk that failed on its first step leaves steps to drop.
        dropped = summary["transitions_dropped"].get("env_error", 0)
        assert dropped < 0.02 * summary["transitions_collected"], summary["transitions_dropped"]
        first = summary["first_env_error"]
        assert "InjectedEnvError" in first and "env_error_rate=0.01" in first, first
        assert first in log_text(task)
        assert_accounting(summary)
    finally:
        run.kill()


# ----- the learner -----
def killed_learner_run(tmp_path: Path) -> None:
    run = start(tmp_path)
    try:
        (learner,) = wait_for(run, "the learner", lambda: role_pids(run, "ray::Learner"), 120)
        task = wait_for(run, "a task directory", lambda: task_dirs(tmp_path), 60)[0]
        # After a checkpoint or two, so that the restart resumes from one.
        wait_for(run, "checkpoint 2000", lambda: (task / "models" / "2000.pt").is_file(), 180)
        kill(learner)
        code = finish(run)
        summary = summary_of(task)
        assert code == 0, run.stderr[-3000:]
        assert summary["learner_restarts"] == 1
        log = log_text(task)
        assert "restarting the learner group from its last checkpoint (restart 1 of 3)" in log
        assert summary["placement"]["roles"]["learner 0"]["pid"] != learner  # a new process
        # Versions are fenced: the restarted learner published the newest ones.
        (stats,) = summary["learners"]
        assert stats["weights_version"] == summary["weights_versions"]
        assert final_checkpoint_updates(task) == summary["updates"]
        assert_solved(summary)
        assert_accounting(summary)
    finally:
        run.kill()


# ----- the control plane and the data plane -----
def killed_replay_shard_run(tmp_path: Path) -> None:
    run = start(tmp_path, "general_cfg.n_replay_shards=2")
    try:
        shards = wait_for(
            run, "two replay shards", lambda: two(role_pids(run, "ray::DataServer")), 120
        )
        task = wait_for(run, "a task directory", lambda: task_dirs(tmp_path), 60)[0]
        wait_for(run, "checkpoint 2000", lambda: (task / "models" / "2000.pt").is_file(), 180)
        kill(min(shards))
        # Ray restarts it (empty): a new process, its workers go on pushing into it.
        wait_for(run, "a restarted shard", lambda: role_pids(run, "ray::DataServer") - shards, 120)
        assert finish(run) == 0, run.stderr[-3000:]
        summary = summary_of(task)
        assert_solved(summary)
        assert_accounting(summary)
        # What the killed shard held (one worker's rows up to the kill) is counted as lost.
        lost = summary["transitions_dropped"].get("lost_with_shard", 0)
        assert lost >= 1000, summary["transitions_dropped"]
    finally:
        run.kill()


def killed_coordinator_run(tmp_path: Path) -> None:
    run = start(tmp_path, "general_cfg.save_buffer=true")
    resumed = None
    try:
        (server,) = wait_for(
            run, "the coordinator", lambda: role_pids(run, "ray::Coordinator"), 120
        )
        task = wait_for(run, "a task directory", lambda: task_dirs(tmp_path), 60)[0]
        wait_for(run, "checkpoint 2000", lambda: (task / "models" / "2000.pt").is_file(), 180)
        kill(server)
        code = finish(run, 120)
        assert code == 1, run.stderr[-3000:]
        assert (task / "results" / "summary.json").is_file(), run.stderr[-3000:]
        summary = summary_of(task)
        assert summary["stop_reason"] == "coordinator_failed"
        (error,) = error_lines(run.stderr)
        assert "Coordinator died" in error, error
        # The learner's final checkpoint reached the driver even though the coordinator died.
        assert final_checkpoint_updates(task) >= 2000
        assert (task / "models" / "replay.npz").is_file()  # save_buffer, beside last.pt
        (command,) = re.findall(r"^resume with: (.+)$", run.stderr, re.MULTILINE)
        assert command == summary["resume_command"]
        argv = shlex.split(command)
        assert argv[:2] == ["python", "main.py"]

        # Exactly that command (its --yaml is the run's config.yaml: same tasks_dir).
        resumed = TrackedRun(tuple(argv[2:]), log_dir=tmp_path)
        assert finish(resumed) == 0, resumed.stderr[-3000:]
        (new_task,) = [t for t in task_dirs(tmp_path) if t != task]
        after = summary_of(new_task)
        assert after["resumed_from"] == str(task)
        assert_solved(after)
        assert_accounting(after)
        # The replay buffer came back: it holds more than this run stored itself.
        assert after["buffer"]["size"] > after["transitions_stored"]
    finally:
        run.kill()
        if resumed is not None:
            resumed.kill()


# ----- driver signals -----
@pytest.mark.parametrize(
    "backend", [pytest.param("ray", marks=pytest.mark.slow), pytest.param("single")]
)
def test_sigterm_stops_the_run_like_ctrl_c_with_exit_143(tmp_path, backend):
    ray_before = ray_procs()
    run = start(
        tmp_path,
        f"general_cfg.mp_backend={backend}",
        "general_cfg.max_env_steps=100000000",
        "general_cfg.reward_threshold=null",
        "general_cfg.model_save_fre=500",
    )
    try:
        task = wait_for(run, "a task directory", lambda: task_dirs(tmp_path), 120)[0]
        wait_for(run, "a checkpoint", lambda: (task / "models" / "500.pt").is_file(), 180)
        run.poll_tree()
        sent = time.monotonic()
        os.kill(run.proc.pid, signal.SIGTERM)  # to main.py alone, as a scheduler sends it
        code = run.wait(60, poll_s=0.1)
        took = time.monotonic() - sent
        assert code == 143, f"exit {code}\n{run.stderr[-3000:]}"
        assert took < 15, f"exit took {took:.1f} s after SIGTERM"
        summary = summary_of(task)
        assert summary["stop_reason"] == "interrupted"
        assert final_checkpoint_updates(task) == summary["updates"] > 0
        assert "SIGTERM: stopping every role" in log_text(task)
        assert "Traceback" not in run.stderr, run.stderr[-3000:]
        assert_accounting(summary)
        started = {p: c for p, c in run.seen.items() if c}
        if backend == "ray":
            assert any(c.startswith("ray::") for c in started.values()), started
        assert not wait_gone(started, timeout=15), "processes of the run still alive"
        assert not orphaned_ray_procs(ray_before)
    finally:
        run.kill()


@pytest.mark.slow
def test_sigterm_while_ray_starts_exits_143_in_one_line(tmp_path):
    ray_before = ray_procs()
    run = start(tmp_path)
    try:
        wait_for(run, "Ray starting", lambda: any("raylet" in c for c in run.seen.values()), 60)
        os.kill(run.proc.pid, signal.SIGTERM)
        assert run.wait(60, poll_s=0.1) == 143, run.stderr[-3000:]
        assert run.stderr.strip() == "interrupted (SIGTERM) before the run started", run.stderr
        started = {p: c for p, c in run.seen.items() if c}
        assert not wait_gone(started, timeout=30), "processes of the run still alive"
        assert not orphaned_ray_procs(ray_before)
    finally:
        run.kill()


# ----- runs that cannot make progress -----
def hanging_env_run(tmp_path: Path) -> None:
    stall_timeout_s = 10
    mark = tmp_path / "hung"
    run = start(
        tmp_path,
        "env_cfg.id=tests.faulty_envs:HangingEnv",
        f"env_cfg.kwargs={{hang_after: 1500, mark: {mark}}}",
        f"general_cfg.stall_timeout_s={stall_timeout_s}",
    )
    try:
        wait_for(run, "an env that hangs", mark.is_file, 180)
        hung_at = time.monotonic()
        code = finish(run, stall_timeout_s + 60)
        took = time.monotonic() - hung_at
        assert code == 1, run.stderr[-3000:]
        assert took < stall_timeout_s + 60
        (error,) = error_lines(run.stderr)
        assert f"no env steps and no updates for {stall_timeout_s} s" in error, error
        assert "learner 0 waits for data" in error, error
        assert re.search(r"no push for a long time from worker [01] \(", error), error
        assert "stuck stepping its envs" in error, error
        task = the_task(tmp_path)
        summary = summary_of(task)
        assert summary["stop_reason"] == "stalled"
        assert final_checkpoint_updates(task) == summary["updates"] > 0
        assert_accounting(summary)
    finally:
        run.kill()


def env_raising_every_step_run(tmp_path: Path) -> None:
    run = start(tmp_path, "env_cfg.id=tests.faulty_envs:BrokenStepEnv")
    try:
        code = finish(run, 180)
        assert code == 1, run.stderr[-3000:]
        (error,) = error_lines(run.stderr)
        assert "env step raised RuntimeError: simulator crashed: segment 7 out of bounds" in error
        assert "failed again each of the 3 times it was rebuilt" in error, error
        task = the_task(tmp_path)
        summary = summary_of(task)
        assert summary["stop_reason"] == "env_failed"
        assert summary["env_errors"] >= 4
        assert (task / "models" / "last.pt").is_file()  # the final checkpoint
        assert_accounting(summary)
    finally:
        run.kill()


def failing_constructor_run(tmp_path: Path) -> None:
    run = start(tmp_path, "env_cfg.id=tests.faulty_envs:DriverOnlyEnv")
    try:
        code = finish(run, 180)
        assert code == 1, run.stderr[-3000:]
        (error,) = error_lines(run.stderr)
        assert error.startswith("error: no worker left: workers 0, 1 could not start: "), error
        assert "no simulator licence on this node" in error, error
        task = the_task(tmp_path)
        log = log_text(task)
        for worker in (0, 1):
            assert f"worker {worker} could not start: gymnasium.error.Error: no simulator" in log
        summary = summary_of(task)
        assert summary["stop_reason"] == "no_workers_left"
        assert sorted(summary["workers_dropped"]) == [0, 1]
        assert summary["worker_restarts"] == 0  # a constructor that raises is not retried
        assert_accounting(summary)
    finally:
        run.kill()


# ----- the runs above, two at a time (tests/side_by_side.py says why) -----
#: test -> the run it checks; the longest runs first.
FAULT_RUNS: dict[str, Callable[[Path], None]] = {
    "test_killed_coordinator_stops_cleanly_and_the_printed_command_resumes_to_solve": (
        killed_coordinator_run
    ),
    "test_killed_replay_shard_is_restarted_empty_counted_and_the_run_still_solves": (
        killed_replay_shard_run
    ),
    "test_env_errors_at_one_percent_of_steps_are_survived_counted_and_logged": env_errors_run,
    "test_a_hanging_env_is_reported_by_the_stall_watchdog": hanging_env_run,
    "test_killed_worker_restarts_twice_then_is_dropped_and_the_run_still_solves": killed_worker_run,
    "test_killed_learner_restarts_from_the_last_checkpoint_and_the_run_still_solves": (
        killed_learner_run
    ),
    "test_an_env_that_raises_on_every_step_stops_the_run_in_one_line": env_raising_every_step_run,
    "test_workers_whose_constructor_fails_are_reported_not_restarted": failing_constructor_run,
}


@pytest.fixture(scope="module")
def fault_runs(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Outcome[None]]:
    """The runs of the selected fault tests (``-k`` picks runs too), two at a time."""
    root = tmp_path_factory.mktemp("faults")
    wanted = selected_tests(request)

    def job(test: str) -> Callable[[], None]:
        folder = root / test
        folder.mkdir()
        return lambda: FAULT_RUNS[test](folder)

    return side_by_side({test: job(test) for test in FAULT_RUNS if test in wanted})


@pytest.mark.slow
def test_killed_worker_restarts_twice_then_is_dropped_and_the_run_still_solves(fault_runs, request):
    fault_runs[request.node.name].result()


@pytest.mark.slow
def test_env_errors_at_one_percent_of_steps_are_survived_counted_and_logged(fault_runs, request):
    fault_runs[request.node.name].result()


@pytest.mark.slow
def test_killed_learner_restarts_from_the_last_checkpoint_and_the_run_still_solves(
    fault_runs, request
):
    fault_runs[request.node.name].result()


@pytest.mark.slow
def test_killed_coordinator_stops_cleanly_and_the_printed_command_resumes_to_solve(
    fault_runs, request
):
    fault_runs[request.node.name].result()


@pytest.mark.slow
def test_killed_replay_shard_is_restarted_empty_counted_and_the_run_still_solves(
    fault_runs, request
):
    fault_runs[request.node.name].result()


@pytest.mark.slow
def test_a_hanging_env_is_reported_by_the_stall_watchdog(fault_runs, request):
    fault_runs[request.node.name].result()


@pytest.mark.slow
def test_an_env_that_raises_on_every_step_stops_the_run_in_one_line(fault_runs, request):
    fault_runs[request.node.name].result()


@pytest.mark.slow
def test_workers_whose_constructor_fails_are_reported_not_restarted(fault_runs, request):
    fault_runs[request.node.name].result()
