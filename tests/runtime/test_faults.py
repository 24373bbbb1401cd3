"""Faults caused for real in real runs: ``python main.py`` on a local Ray, killed roles, envs
that hang or cannot be built, signals (envs that raise: ``test_env_error_budget_runs.py``).
Each run asserts the accounting identity (``transitions_collected == transitions_stored +
sum(transitions_dropped)``) besides what the fault should lead to.

Roles are found as a user would find them: the processes below main.py whose command line
is ``ray::Worker...``, ``ray::Learner...``, ``ray::DataServer`` (a replay shard) or
``ray::Coordinator``, killed with SIGKILL by pid. The runs are DQN on CartPole-v1 with two
workers; they show the fault's outcome and the accounting, not learning to a threshold.
A fault the run survives is watched until it played out and the run went on past it (more
env steps, or a checkpoint of more updates, than at the fault); then the test stops the run
as its user would, with SIGINT (exit 130, ``stop_reason: interrupted``, the final
checkpoint and the summary written), rather than letting it run to a budget: their budget
(``UNTIL_STOPPED``) is never reached. The faults that stop a run themselves come within a
fixed budget (``FIXED``) that they stop short of. Runs waiting for a number of updates
learn at the shipped update ratio without evaluations (updates come soonest with it);
runs waiting for env steps learn lightly (``LIGHT_LEARNING``) and pace their envs
(``PACED``: every CartPole-v1 step sleeps 1 ms), so that a fault's restarts, which take
seconds on a busy machine, cost few env steps of CPU meanwhile. A killed coordinator's
printed resume command is run in the test's process, on the session's Ray (the command
line's own entry, ``main_in_process``), to a short budget past the killed run's steps.
Each run is its own test, with its own time limit; every process it started is killed when
the test ends. One run is lighter: the early checkpoint's, driven from the test's process
on the session's Ray (the runner as main.py calls it), its learner found among the
processes below the test's (the session's raylet is) and killed from a thread.
"""

from __future__ import annotations

import csv
import os
import re
import shlex
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli_runs import (
    LIGHT_LEARNING,
    TINY_DQN,
    assert_accounting,
    config_path,
    main_in_process,
    step_latency,
    summary_of,
    train_in_process,
)
from tests.support.procs import TrackedRun, task_dirs, wait_gone
from tests.support.watch import (
    env_steps,
    error_lines,
    final_checkpoint_updates,
    finish,
    interrupt,
    kill,
    log_text,
    log_time,
    numbered_checkpoints,
    pids_below,
    role_pids,
    the_task,
    two,
    wait_for,
)

FIXED_STEPS = 25_000  # the runs that stop themselves: their fault comes long before this
RUN_TIMEOUT_S = 300.0  # a run here takes 20-60 s; beyond this it hangs
STOP_TIMEOUT_S = 60.0  # from SIGINT to main.py's exit (a clean stop takes seconds)
TEST_TIMEOUT_S = RUN_TIMEOUT_S + 120  # the run, plus the waits before its fault
CARTPOLE = (
    "--yaml",
    config_path("cartpole_dqn"),
    "general_cfg.n_workers=2",
    "general_cfg.seed=1",
    "general_cfg.progress=false",
    "general_cfg.save_fig=false",
)
FIXED = ("general_cfg.reward_threshold=null", f"general_cfg.max_env_steps={FIXED_STEPS}")
#: A run that goes on until the test stops it (SIGINT), once the fault played out.
UNTIL_STOPPED = ("general_cfg.reward_threshold=null", "general_cfg.max_env_steps=100000000")
#: For the waits on updates: the shipped update ratio (the soonest way to N updates), no
#: evaluations.
NO_EVAL = ("general_cfg.online_eval=false",)
#: For the waits on env steps: light learning, and every env step also sleeps 1 ms (the
#: step_latency wrapper, an idle wait), so that a worker takes at most ~1000 steps a second
#: however fast the machine: the run's CPU goes to what the test watches, not to steps
#: taken while a role restarts.
PACED = (*LIGHT_LEARNING, *step_latency(0.001))


def start(tmp_path: Path, *overrides: str) -> TrackedRun:
    return TrackedRun(
        (*CARTPOLE, f"general_cfg.tasks_dir={tmp_path}", *overrides), log_dir=tmp_path
    )


# ----- workers -----
@pytest.mark.slow
@pytest.mark.timeout(TEST_TIMEOUT_S)
def test_killed_worker_restarts_twice_then_is_dropped_and_the_run_goes_on(tmp_path: Path) -> None:
    run = start(tmp_path, *UNTIL_STOPPED, *PACED, "general_cfg.max_worker_restarts=2")
    try:
        pids = wait_for(run, "two workers", lambda: two(role_pids(run, "ray::Worker")), 120)
        wait_for(run, "1000 env steps", lambda: env_steps(tmp_path) >= 1000, 120)
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
            # Right after it registered again: it has stepped little since.
            kill(victim)  # kill 2 (a restart), then kill 3: past its budget of 2, dropped
        task = the_task(tmp_path)
        past_budget = "past its restart budget"
        wait_for(run, "the drop in the log", lambda: past_budget in log_text(task), 120)
        dropped_at = env_steps(tmp_path)
        # The other worker carries the run on, alone: then Ctrl-C.
        wait_for(run, "1000 env steps more", lambda: env_steps(tmp_path) >= dropped_at + 1000, 120)
        code = interrupt(run, STOP_TIMEOUT_S)
        summary = summary_of(task)
        assert code == 130, run.stderr[-3000:]
        assert summary["stop_reason"] == "interrupted"
        assert summary["env_steps"] >= dropped_at + 1000
        assert summary["worker_restarts"] == 2
        assert list(summary["worker_restarts_by_worker"].values()) == [2]
        (dropped,) = summary["workers_dropped"]
        assert summary["worker_restarts_by_worker"] == {str(dropped): 2}
        log = log_text(task)
        assert log.count(f"worker {dropped} was restarted on") == 2, log
        assert f"worker {dropped} died past its restart budget (2)" in log, log
        assert_accounting(summary)
    finally:
        run.kill()


# ----- the learner -----
@pytest.mark.slow
@pytest.mark.timeout(TEST_TIMEOUT_S)
def test_killed_learner_restarts_from_the_last_checkpoint_and_the_run_goes_on(
    tmp_path: Path,
) -> None:
    # A checkpoint every 200 updates; workers wait for a learner that is down (they may run
    # only learner_lag_tolerance updates ahead).
    run = start(tmp_path, *UNTIL_STOPPED, *NO_EVAL, "general_cfg.model_save_fre=200")
    try:
        (learner,) = wait_for(run, "the learner", lambda: role_pids(run, "ray::Learner"), 120)
        task = wait_for(run, "a task directory", lambda: task_dirs(tmp_path), 60)[0]
        # After a checkpoint or two, so that the restart resumes from one.
        wait_for(run, "checkpoint 400", lambda: (task / "models" / "400.pt").is_file(), 180)
        at_kill = max(numbered_checkpoints(task))
        kill(learner)
        restarted = "restarting the learner group from its last checkpoint (restart 1 of 3)"
        wait_for(run, "the restart in the log", lambda: restarted in log_text(task), 120)
        # The restarted learner counts on from its checkpoint: its next checkpoint is past
        # the last one before the kill (from zero, it would write 200.pt again first).
        wait_for(
            run,
            f"a checkpoint past {at_kill} updates",
            lambda: max(numbered_checkpoints(task)) > at_kill,
            180,
        )
        code = interrupt(run, STOP_TIMEOUT_S)
        summary = summary_of(task)
        assert code == 130, run.stderr[-3000:]
        assert summary["stop_reason"] == "interrupted"
        assert summary["learner_restarts"] == 1
        assert summary["placement"]["roles"]["learner 0"]["pid"] != learner  # a new process
        # Versions are fenced: the restarted learner published the newest ones.
        (stats,) = summary["learners"]
        assert stats["weights_version"] == summary["weights_versions"]
        # It went on past the kill, from the checkpoint's updates rather than from zero.
        assert final_checkpoint_updates(task) == summary["updates"] > at_kill
        assert_accounting(summary)
    finally:
        run.kill()


def progress_updates(task: Path) -> int:
    """The updates of the run's newest progress row (0 before the first)."""
    path = task / "results" / "progress.csv"
    with path.open() as f:
        rows = list(csv.DictReader(f))
    return int(rows[-1]["updates"]) if rows else 0


@pytest.mark.release
@pytest.mark.slow
@pytest.mark.timeout(TEST_TIMEOUT_S)
def test_a_learner_killed_before_its_first_regular_checkpoint_restarts_from_the_early_one(
    tmp_path: Path,
) -> None:
    # model_save_fre far off: the only checkpoint before the kill is the one the learner
    # takes first_checkpoint_s (here 5 s) after its first update.
    run = start(
        tmp_path,
        *UNTIL_STOPPED,
        *NO_EVAL,
        "general_cfg.model_save_fre=1000000",
        "general_cfg.first_checkpoint_s=5",
    )
    try:
        (learner,) = wait_for(run, "the learner", lambda: role_pids(run, "ray::Learner"), 120)
        task = wait_for(run, "a task directory", lambda: task_dirs(tmp_path), 60)[0]
        wait_for(run, "the first checkpoint", lambda: numbered_checkpoints(task), 120)
        (at_kill,) = numbered_checkpoints(task)
        assert 0 < at_kill < 1_000_000
        kill(learner)
        restarted = "restarting the learner group from its last checkpoint (restart 1 of 3)"
        wait_for(run, "the restart in the log", lambda: restarted in log_text(task), 120)
        wait_for(run, f"updates past {at_kill}", lambda: progress_updates(task) > at_kill, 120)
        code = interrupt(run, STOP_TIMEOUT_S)
        summary = summary_of(task)
        assert code == 130, run.stderr[-3000:]
        assert summary["learner_restarts"] == 1
        # It went on from the early checkpoint's updates, not from zero.
        assert final_checkpoint_updates(task) == summary["updates"] > at_kill
        assert_accounting(summary)
    finally:
        run.kill()


def kill_the_learner_at_its_first_checkpoint(tasks: Path, timeout: float) -> dict[str, Any]:
    """SIGKILL the one learner of the run under ``tasks``, on the session's Ray (a process
    below this one), as soon as the run has a numbered checkpoint; what it saw then: the
    checkpoints (``at_kill``) and the learner's pid (``pid``), or ``error``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        dirs = task_dirs(tasks)
        written = numbered_checkpoints(dirs[0]) if dirs else []
        if written:
            learners = pids_below(os.getpid(), "ray::Learner")
            if len(learners) != 1:
                return {"error": f"learner processes {learners}"}
            (pid,) = learners
            kill(pid)
            return {"at_kill": written, "pid": pid}
        time.sleep(0.05)
    return {"error": f"no checkpoint within {timeout:g} s"}


@pytest.mark.slow
@pytest.mark.timeout(TEST_TIMEOUT_S)
def test_a_learner_killed_at_its_early_checkpoint_restarts_from_it_on_the_session_ray(
    ray_session, tmp_path: Path
) -> None:
    # The lighter sibling of the test above: one worker and a small network on the session's
    # Ray, driven from this process, the learner killed from a thread as soon as its early
    # checkpoint (first_checkpoint_s after the first update) is on disk. Every env step
    # sleeps 1 ms: the 4,000 steps last seconds past the restart, and cost little CPU.
    seen: dict[str, Any] = {}
    killer = threading.Thread(
        target=lambda: seen.update(kill_the_learner_at_its_first_checkpoint(tmp_path, 60)),
        daemon=True,
    )
    killer.start()
    summary = train_in_process(
        tmp_path,
        "cartpole_dqn",
        (
            *TINY_DQN,
            *PACED,
            "general_cfg.max_env_steps=4000",
            "general_cfg.model_save_fre=1000000",
            "general_cfg.first_checkpoint_s=1",
        ),
        None,
    )
    killer.join(10)
    assert "error" not in seen, seen
    (at_kill,) = seen["at_kill"]  # the early checkpoint, the only one before the kill
    assert 0 < at_kill < 1_000_000
    task = the_task(tmp_path)
    restarted = "restarting the learner group from its last checkpoint (restart 1 of 3)"
    assert restarted in log_text(task), log_text(task)[-3000:]
    assert summary["learner_restarts"] == 1
    assert summary["placement"]["roles"]["learner 0"]["pid"] != seen["pid"]
    # It went on from the early checkpoint's updates, and learnt past them.
    assert final_checkpoint_updates(task) == summary["updates"] > at_kill
    assert summary["stop_reason"] == "max_env_steps"
    assert_accounting(summary)


@pytest.mark.release
@pytest.mark.slow
@pytest.mark.timeout(TEST_TIMEOUT_S)
def test_a_learner_killed_past_its_restart_budget_stops_the_run_resumable(tmp_path: Path) -> None:
    run = start(
        tmp_path,
        *FIXED,
        *NO_EVAL,
        "general_cfg.model_save_fre=200",
        "general_cfg.max_learner_restarts=1",
    )
    try:
        (first,) = wait_for(run, "the learner", lambda: role_pids(run, "ray::Learner"), 120)
        task = wait_for(run, "a task directory", lambda: task_dirs(tmp_path), 60)[0]
        wait_for(run, "checkpoint 400", lambda: (task / "models" / "400.pt").is_file(), 180)
        kill(first)  # restart 1 of 1
        (second,) = wait_for(
            run, "the restarted learner", lambda: role_pids(run, "ray::Learner") - {first}, 120
        )
        kill(second)  # past the budget: the run stops
        code = finish(run, RUN_TIMEOUT_S)
        assert code == 1, run.stderr[-3000:]
        (error,) = error_lines(run.stderr)
        assert "the learner group failed 2 times (general_cfg.max_learner_restarts=1)" in error
        summary = summary_of(task)
        assert summary["stop_reason"] == "learner_failed"
        assert summary["learner_restarts"] == 1
        assert summary["env_steps"] < FIXED_STEPS
        assert "restarting the learner group from its last checkpoint (restart 1 of 1)" in (
            log_text(task)
        )
        # What the learners had done is kept: the checkpoint, and a command to go on.
        assert final_checkpoint_updates(task) >= 400
        assert re.search(r"^resume with: python main.py ", run.stderr, re.MULTILINE), run.stderr
        assert_accounting(summary)
    finally:
        run.kill()


# ----- the control plane and the data plane -----
@pytest.mark.slow
@pytest.mark.timeout(TEST_TIMEOUT_S)
def test_killed_coordinator_stops_cleanly_and_the_printed_command_resumes_steps_updates_and_replay(
    tmp_path: Path, ray_session, capsys
) -> None:
    run = start(
        tmp_path,
        *FIXED,
        *NO_EVAL,
        "general_cfg.model_save_fre=200",
        "general_cfg.save_buffer=true",
    )
    try:
        (server,) = wait_for(
            run, "the coordinator", lambda: role_pids(run, "ray::Coordinator"), 120
        )
        task = wait_for(run, "a task directory", lambda: task_dirs(tmp_path), 60)[0]
        wait_for(run, "checkpoint 400", lambda: (task / "models" / "400.pt").is_file(), 180)
        kill(server)
        code = finish(run, 120)
        assert code == 1, run.stderr[-3000:]
        assert (task / "results" / "summary.json").is_file(), run.stderr[-3000:]
        summary = summary_of(task)
        assert summary["stop_reason"] == "coordinator_failed"
        (error,) = error_lines(run.stderr)
        assert "Coordinator died" in error, error
        # The learner's final checkpoint reached the driver even though the coordinator died.
        killed_updates = final_checkpoint_updates(task)
        assert killed_updates >= 400
        assert (task / "models" / "replay.npz").is_file()  # save_buffer, beside last.pt
        (command,) = re.findall(r"^resume with: (.+)$", run.stderr, re.MULTILINE)
        assert command == summary["resume_command"]
        argv = shlex.split(command)
        assert argv[:2] == ["python", "main.py"]
    finally:
        run.kill()

    # That command (its --yaml is the run's config.yaml: same tasks_dir, no evaluations),
    # through main.py's own entry in this process on the session's Ray, to 2000 env steps
    # past the killed run's.
    budget = summary["env_steps"] + 2000
    code = main_in_process((*argv[2:], f"general_cfg.max_env_steps={budget}"))
    assert code == 0, capsys.readouterr().err[-3000:]
    (new_task,) = [t for t in task_dirs(tmp_path) if t != task]
    after = summary_of(new_task)
    assert after["resumed_from"] == str(task)
    assert after["stop_reason"] == "max_env_steps"
    # It went on from the killed run's counters and its final checkpoint, learning on.
    assert after["env_steps"] >= budget
    assert final_checkpoint_updates(new_task) == after["updates"] > killed_updates
    assert_accounting(after)
    # The replay buffer came back: it holds more than this run stored itself.
    assert after["buffer"]["size"] > after["transitions_stored"]


@pytest.mark.slow
@pytest.mark.timeout(TEST_TIMEOUT_S)
def test_killed_replay_shard_is_restarted_empty_counted_and_the_learner_learns_on(
    tmp_path: Path,
) -> None:
    run = start(
        tmp_path,
        *UNTIL_STOPPED,
        *NO_EVAL,
        "general_cfg.model_save_fre=200",
        "general_cfg.n_replay_shards=2",
    )
    try:
        shards = wait_for(
            run, "two replay shards", lambda: two(role_pids(run, "ray::DataServer")), 120
        )
        task = wait_for(run, "a task directory", lambda: task_dirs(tmp_path), 60)[0]
        # Each worker has sent its shard about half of the 4000 steps by then.
        wait_for(run, "4000 env steps", lambda: env_steps(tmp_path) >= 4000, 180)
        kill(min(shards))
        at_kill = max(numbered_checkpoints(task), default=0)
        # Ray restarts it (empty): a new process, its workers go on pushing into it.
        wait_for(run, "a restarted shard", lambda: role_pids(run, "ray::DataServer") - shards, 120)
        # The learner goes on learning from both shards: a checkpoint past the kill's.
        wait_for(
            run,
            f"a checkpoint past {at_kill + 400} updates",
            lambda: max(numbered_checkpoints(task), default=0) > at_kill + 400,
            180,
        )
        code = interrupt(run, STOP_TIMEOUT_S)
        summary = summary_of(task)
        assert code == 130, run.stderr[-3000:]
        assert summary["stop_reason"] == "interrupted"
        assert summary["learner_restarts"] == 0
        assert final_checkpoint_updates(task) == summary["updates"] > at_kill + 400
        assert_accounting(summary)
        # What the killed shard held (one worker's rows up to the kill) is counted as lost,
        # and the restarted shard stored that worker's rows since.
        lost = summary["transitions_dropped"].get("lost_with_shard", 0)
        assert lost >= 1000, summary["transitions_dropped"]
        assert all(shard["stored"] > 0 for shard in summary["replay_shards"])
    finally:
        run.kill()


@pytest.mark.release
@pytest.mark.slow
@pytest.mark.timeout(TEST_TIMEOUT_S)
def test_a_shard_killed_under_two_learners_is_counted_and_the_run_goes_on(tmp_path: Path) -> None:
    run = start(
        tmp_path,
        *UNTIL_STOPPED,
        *PACED,
        "general_cfg.n_replay_shards=2",
        "general_cfg.n_learners=2",
    )
    try:
        shards = wait_for(
            run, "two replay shards", lambda: two(role_pids(run, "ray::DataServer")), 120
        )
        learners = wait_for(run, "two learners", lambda: two(role_pids(run, "ray::Learner")), 120)
        wait_for(run, "4000 env steps", lambda: env_steps(tmp_path) >= 4000, 180)
        kill(max(shards))
        wait_for(run, "a restarted shard", lambda: role_pids(run, "ray::DataServer") - shards, 120)
        restarted_at = env_steps(tmp_path)
        # Both workers step on, one of them into the restarted shard: then Ctrl-C.
        wait_for(
            run, "2000 env steps more", lambda: env_steps(tmp_path) >= restarted_at + 2000, 180
        )
        code = interrupt(run, STOP_TIMEOUT_S)
        summary = summary_of(the_task(tmp_path))
        assert code == 130, run.stderr[-3000:]
        assert summary["stop_reason"] == "interrupted"
        assert summary["env_steps"] >= restarted_at + 2000
        # Both learners learned on through it, from the other shard meanwhile.
        assert summary["learner_restarts"] == 0
        assert summary["n_learners"] == 2 and len(learners) == 2
        # The killed shard's worker had sent it about half of the 4000+ steps: what it held
        # is counted as lost, and the restarted shard stored the rest of that worker's rows.
        lost = summary["transitions_dropped"].get("lost_with_shard", 0)
        assert lost >= 1000, summary["transitions_dropped"]
        assert all(shard["stored"] > 0 for shard in summary["replay_shards"])
        assert_accounting(summary)
    finally:
        run.kill()


@pytest.mark.slow
@pytest.mark.timeout(TEST_TIMEOUT_S)
def test_killed_rollout_queue_stops_the_run_in_order_naming_the_data_server(
    tmp_path: Path,
) -> None:
    run = TrackedRun(
        (
            "--yaml",
            config_path("cartpole_ppo"),
            *CARTPOLE[2:],
            *FIXED,
            *NO_EVAL,
            f"general_cfg.tasks_dir={tmp_path}",
        ),
        log_dir=tmp_path,
    )
    try:
        (queue,) = wait_for(
            run, "the rollout queue", lambda: role_pids(run, "ray::RolloutQueue"), 120
        )
        wait_for(run, "2000 env steps", lambda: env_steps(tmp_path) >= 2000, 180)
        kill(queue)
        code = finish(run, RUN_TIMEOUT_S)
        assert code == 1, run.stderr[-3000:]
        task = the_task(tmp_path)
        summary = summary_of(task)
        assert summary["stop_reason"] == "data_server_failed"
        assert summary["env_steps"] < FIXED_STEPS
        (error,) = error_lines(run.stderr)
        assert "the data server (rollout queue) is gone" in error, error
        # What the learner had learned is kept: its final checkpoint, and a command to go on.
        assert final_checkpoint_updates(task) == summary["updates"] > 0
        assert re.search(r"^resume with: python main.py ", run.stderr, re.MULTILINE), run.stderr
    finally:
        run.kill()


@pytest.mark.slow
@pytest.mark.timeout(TEST_TIMEOUT_S)
def test_a_rollout_queue_killed_while_only_the_learner_waits_on_it_stops_the_run_naming_it(
    tmp_path: Path,
) -> None:
    """No worker calls the queue after its death: one worker's env hangs mid-rollout (the
    learner waits on the queue for that rollout) and the other worker, its rollout in,
    waits for the learner's next weights. The learner's failed wait alone stops the run,
    long before the stall watchdog would; the env steps on once the stop is logged."""
    stall_timeout_s = 90
    hung, claim, release = tmp_path / "hung", tmp_path / "claim", tmp_path / "release"
    run = TrackedRun(
        (
            "--yaml",
            config_path("cartpole_ppo"),
            *CARTPOLE[2:],
            *FIXED,
            *NO_EVAL,
            "env_cfg.id=tests.support.faulty_envs:HangingEnv",
            f"env_cfg.kwargs={{hang_after: 600, mark: {hung}, claim: {claim}, release: {release}}}",
            f"general_cfg.stall_timeout_s={stall_timeout_s}",
            f"general_cfg.tasks_dir={tmp_path}",
        ),
        log_dir=tmp_path,
    )
    try:
        (queue,) = wait_for(
            run, "the rollout queue", lambda: role_pids(run, "ray::RolloutQueue"), 120
        )
        wait_for(run, "an env that hangs", hung.is_file, 180)
        time.sleep(3)  # the other worker's rollout goes in; the learner waits on the queue
        kill(queue)
        killed_at = time.time()
        task = the_task(tmp_path)
        wait_for(run, "the stop", lambda: "stopping:" in log_text(task), stall_timeout_s + 60)
        release.touch()
        code = finish(run, RUN_TIMEOUT_S)
        assert code == 1, run.stderr[-3000:]
        summary = summary_of(task)
        assert summary["stop_reason"] == "data_server_failed", run.stderr[-3000:]
        assert log_time(task, "stopping:") - killed_at < stall_timeout_s / 3
        (error,) = error_lines(run.stderr)
        assert "the data server (rollout queue) is gone" in error, error
        assert final_checkpoint_updates(task) == summary["updates"] > 0
    finally:
        run.kill()


# ----- runs that cannot make progress -----
@pytest.mark.slow
@pytest.mark.timeout(TEST_TIMEOUT_S)
def test_a_hanging_env_is_reported_by_the_stall_watchdog_on_time(tmp_path: Path) -> None:
    stall_timeout_s = 20  # the default is 120; 10 fired on a busy machine before the env hung
    mark = tmp_path / "hung"
    run = start(
        tmp_path,
        "env_cfg.id=tests.support.faulty_envs:HangingEnv",
        f"env_cfg.kwargs={{hang_after: 500, mark: {mark}}}",
        f"general_cfg.stall_timeout_s={stall_timeout_s}",
        *LIGHT_LEARNING,
        "algo_cfg.learn_start=200",  # updates before the envs hang (each after 500 steps)
    )
    try:
        wait_for(run, "an env that hangs", mark.is_file, 180)
        code = finish(run, RUN_TIMEOUT_S)
        assert code == 1, run.stderr[-3000:]
        # The watchdog fires once nothing moved for stall_timeout_s: counted from the last env
        # to hang (it writes the mark; its last push may be up to a chunk earlier), to the
        # driver's "stopping:" log line.
        hung_at = float(mark.read_text().split()[1])
        took = log_time(the_task(tmp_path), "stopping: no env steps") - hung_at
        assert stall_timeout_s - 2 <= took <= 2 * stall_timeout_s, took
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


@pytest.mark.slow
@pytest.mark.timeout(TEST_TIMEOUT_S)
def test_workers_whose_constructor_fails_are_reported_not_restarted(
    tmp_path: Path, ray_session, capsys
) -> None:
    # Nothing of this run is killed or signalled: it runs through main.py's entry in this
    # process, on the session's Ray (its Worker actors fail in their own processes).
    code = main_in_process(
        (
            *CARTPOLE,
            f"general_cfg.tasks_dir={tmp_path}",
            "env_cfg.id=tests.support.faulty_envs:DriverOnlyEnv",
        )
    )
    stderr = capsys.readouterr().err
    assert code == 1, stderr[-3000:]
    (error,) = error_lines(stderr)
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


# ----- driver signals -----
@pytest.mark.alone
@pytest.mark.parametrize(
    "backend", [pytest.param("ray", marks=pytest.mark.slow), pytest.param("single")]
)
def test_sigterm_stops_the_run_like_ctrl_c_with_exit_143(tmp_path, backend):
    run = start(
        tmp_path,
        f"general_cfg.mp_backend={backend}",
        "general_cfg.max_env_steps=100000000",
        "general_cfg.reward_threshold=null",
        "general_cfg.model_save_fre=500",
        *TINY_DQN,  # a small network: its 500th update comes sooner
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
        assert not run.leftovers()  # none escaped the tree we recorded
    finally:
        run.kill()


@pytest.mark.slow
@pytest.mark.alone
def test_sigterm_while_ray_starts_exits_143_in_one_line(tmp_path):
    run = start(tmp_path)
    try:
        wait_for(run, "Ray starting", lambda: any("raylet" in c for c in run.seen.values()), 60)
        os.kill(run.proc.pid, signal.SIGTERM)
        assert run.wait(60, poll_s=0.1) == 143, run.stderr[-3000:]
        assert run.stderr.strip() == "interrupted (SIGTERM) before the run started", run.stderr
        started = {p: c for p, c in run.seen.items() if c}
        assert not wait_gone(started, timeout=30), "processes of the run still alive"
        assert not run.leftovers()  # none escaped the tree we recorded
    finally:
        run.kill()
