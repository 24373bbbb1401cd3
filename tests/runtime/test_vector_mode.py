"""``env_cfg.vector_mode: async``: a worker's envs step in subprocesses, and a run behaves as
with ``sync``: the same seeded episodes, the same env errors (rebuilt, counted), the same
accounting; an env subprocess killed with SIGKILL is an env error like any other.

The single-process runs are DQN on CartPole-v1 with a few thousand steps, through main.py's
own entry in the test's process (``main_in_process``: nothing of them is killed; their async
envs are real subprocesses). The killed-subprocess run is ``python main.py`` as a user starts
it, on a local Ray. None of them is about learning: they learn lightly (a fifth of the
shipped update-to-data ratio). The killed-subprocess run also paces its envs (every step
sleeps 2 ms: the step_latency wrapper) and has a budget it never reaches: once its workers
stepped on for a while past the kill, the test stops it with SIGINT, as a user would.
"""

from __future__ import annotations

import csv
import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli_runs import LIGHT_LEARNING, main_in_process, step_latency
from tests.support.procs import TrackedRun, alive, descendants, task_dirs
from tests.support.runs import run_main
from tests.support.watch import env_steps, interrupt, wait_for

STEPS = 4_000


def summary_of(tasks: Path) -> dict[str, Any]:
    (path,) = tasks.glob("*/results/summary.json")
    return json.loads(path.read_text())


def episodes_of(tasks: Path) -> list[tuple[str, str, str]]:
    (path,) = tasks.glob("*/results/episodes.csv")
    with path.open() as f:
        return [(row["env_steps"], row["return"], row["length"]) for row in csv.DictReader(f)]


def assert_accounting(summary: dict[str, Any]) -> None:
    collected = summary["transitions_collected"]
    stored, dropped = summary["transitions_stored"], summary["transitions_dropped"]
    assert collected == stored + sum(dropped.values()), (collected, stored, dropped)


def single_run(tasks: Path, mode: str, *overrides: str) -> dict[str, Any]:
    code = main_in_process(
        (
            "general_cfg.mp_backend=single",
            "general_cfg.seed=1",
            "general_cfg.n_envs_per_worker=4",
            f"general_cfg.max_env_steps={STEPS}",
            *LIGHT_LEARNING,
            "general_cfg.progress=false",
            "general_cfg.save_fig=false",
            f"general_cfg.tasks_dir={tasks}",
            f"env_cfg.vector_mode={mode}",
            *overrides,
        )
    )
    assert code == 0  # its error line is in the captured stderr
    return summary_of(tasks)


@pytest.mark.timeout(300)  # measured 34 s (both runs, each its own process) on 2 shared cores
def test_async_envs_give_the_seeded_episodes_and_env_errors_of_sync(tmp_path: Path) -> None:
    flaky = "general_cfg.fault_injection.env_error_rate=0.01"
    runs = {mode: single_run(tmp_path / mode, mode, flaky) for mode in ("sync", "async")}
    sync, async_ = runs["sync"], runs["async"]
    assert sync["env_errors"] > 5  # ~1 in 100 of 4,000 steps
    assert async_["env_errors"] == sync["env_errors"]
    assert "InjectedEnvError" in async_["first_env_error"], async_["first_env_error"]
    assert async_["first_env_error"] == sync["first_env_error"]
    assert episodes_of(tmp_path / "async") == episodes_of(tmp_path / "sync")
    for summary in runs.values():
        assert_accounting(summary)
    assert async_["transitions_dropped"] == sync["transitions_dropped"]
    assert async_["transitions_collected"] == sync["transitions_collected"]


@pytest.mark.timeout(300)
def test_an_async_env_step_past_its_timeout_is_replaced_and_counted_as_a_timeout(
    tmp_path: Path,
) -> None:
    # Every env blocks forever at its 301st step (in each build): the vector step times out
    # after 1 s, its subprocesses are ended and replaced, and the run steps on.
    summary = single_run(
        tmp_path,
        "async",
        "env_cfg.id=tests.support.faulty_envs:HangingEnv",
        "env_cfg.kwargs={hang_after: 300}",
        "general_cfg.max_step=500",  # CartPole's time limit (a class by path has none)
        "env_cfg.step_timeout_s=1",
        "general_cfg.online_eval=false",
        "general_cfg.reward_threshold=null",
    )
    assert summary["stop_reason"] == "max_env_steps" and summary["env_steps"] >= STEPS
    assert summary["env_timeouts"] == summary["env_errors"] >= 2
    first = summary["first_env_error"]
    assert first == "worker 0: env step timed out after 1 s (env_cfg.step_timeout_s)", first
    assert_accounting(summary)


def env_subprocesses(run: TrackedRun) -> dict[tuple[int, int], str]:
    """The env subprocesses of the run's Worker actors (forks of ``ray::Worker``)."""
    workers = [p for p, cmd in descendants(run.proc.pid).items() if cmd.startswith("ray::Worker")]
    found: dict[tuple[int, int], str] = {}
    for pid, _ in workers:
        found.update(descendants(pid))
    return found


# Measured 79 s on 2 shared cores (when it ran to 30k steps); above its own waits (120 + 3 +
# 180 + 60 s), which say more.
@pytest.mark.release
@pytest.mark.timeout(420)
def test_async_env_subprocess_killed_with_sigkill_is_rebuilt_and_counted(
    tmp_path: Path,
) -> None:
    run = TrackedRun(
        (
            "general_cfg.n_workers=2",
            "general_cfg.n_envs_per_worker=2",
            "general_cfg.seed=1",
            "general_cfg.max_env_steps=100000000",  # never reached: the test stops it
            *LIGHT_LEARNING,
            # At most 500 steps a second per env (4 envs, stepping side by side).
            *step_latency(0.002),
            "general_cfg.progress=false",
            "general_cfg.save_fig=false",
            "general_cfg.ray_num_cpus=2",
            f"general_cfg.tasks_dir={tmp_path}",
            "env_cfg.vector_mode=async",
        ),
        log_dir=tmp_path,
    )
    try:
        deadline = time.monotonic() + 120
        envs: dict[tuple[int, int], str] = {}
        while len(envs) < 4 and time.monotonic() < deadline:  # 2 workers x 2 envs
            run.poll_tree()
            envs = env_subprocesses(run)
            time.sleep(0.5)
        assert len(envs) == 4, (envs, run.stderr[-2000:])
        time.sleep(3)  # collecting
        victim = sorted(envs)[0]
        killed_at = env_steps(tmp_path)
        os.kill(victim[0], signal.SIGKILL)
        # The broken vector env is rebuilt (two new subprocesses) and the run steps on: 2000
        # steps past the kill, then Ctrl-C.
        wait_for(
            run,
            "the rebuilt env subprocesses",
            lambda: len(env_subprocesses(run).keys() - envs) >= 2,
            120,
        )
        wait_for(run, "2000 env steps more", lambda: env_steps(tmp_path) >= killed_at + 2000, 180)
        code = interrupt(run, 60)
        assert code == 130, run.stderr[-3000:]
        (task,) = task_dirs(tmp_path)
        summary = json.loads((task / "results" / "summary.json").read_text())
        assert summary["stop_reason"] == "interrupted"
        assert summary["env_errors"] == 1, summary["first_env_error"]
        assert "env step raised" in summary["first_env_error"], summary["first_env_error"]
        assert summary["transitions_collected"] >= killed_at + 2000
        assert_accounting(summary)
        # The broken vector env's other subprocesses were ended with it, and the rebuilt
        # ones at the end of the run: none is left.
        assert not [proc for proc in envs if alive(proc)], envs
        assert not [proc for proc in run.seen if alive(proc)]
    finally:
        run.kill()


def test_bad_vector_mode_is_one_line_before_anything_starts(tmp_path: Path) -> None:
    done = run_main(f"general_cfg.tasks_dir={tmp_path}", "env_cfg.vector_mode=subprocess")
    assert done.returncode == 2  # a config error
    assert done.stderr.strip() == (
        "error: env_cfg.vector_mode='subprocess' is not allowed; allowed: sync, async"
    ), done.stderr
    assert not list(tmp_path.iterdir())
