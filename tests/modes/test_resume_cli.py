"""Resumes through ``python main.py``, from one short single-process run that kept its replay
(``save_buffer``; the runner as main.py calls it, in the test's process): a resume with more
workers than the run had goes on with them, and a resume into another replay size is
refused in one line."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli_runs import (
    LIGHT_LEARNING,
    assert_accounting,
    config_path,
    run_to_end,
    summary_of,
    train_in_process,
)
from tests.support.procs import task_dirs

RUN_TIMEOUT_S = 120
FIRST_STEPS, RESUMED_STEPS = 800, 1400
RUN = (
    "general_cfg.mp_backend=single",
    "general_cfg.save_buffer=true",
    "general_cfg.model_save_fre=50",
    "algo_cfg.learn_start=200",
    *LIGHT_LEARNING,
)


@pytest.fixture(scope="module")
def one_worker_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """A finished 1-worker run with its replay saved: (task directory, summary)."""
    tasks = tmp_path_factory.mktemp("one_worker")
    summary = train_in_process(
        tasks,
        "cartpole_dqn",
        (*RUN, "general_cfg.n_workers=1", f"general_cfg.max_env_steps={FIRST_STEPS}"),
        threshold=None,
    )
    (task,) = task_dirs(tasks)
    return task, summary


def resume_args(task: Path, tasks: Path, *overrides: str) -> tuple[str, ...]:
    return (
        "--yaml",
        config_path("cartpole_dqn"),
        *RUN,
        "general_cfg.seed=1",
        "general_cfg.progress=false",
        "general_cfg.save_fig=false",
        f"general_cfg.tasks_dir={tasks}",
        "general_cfg.load_checkpoint=true",
        f"general_cfg.load_path={task}",
        *overrides,
    )


@pytest.mark.timeout(2 * RUN_TIMEOUT_S + 60)
def test_a_resume_with_more_workers_goes_on_with_all_of_them_and_its_counters(
    one_worker_run: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    source, first = one_worker_run
    assert first["n_workers"] == 1 and first["env_steps"] >= FIRST_STEPS
    tasks = tmp_path / "tasks"
    run, code = run_to_end(
        resume_args(
            source,
            tasks,
            "general_cfg.n_workers=2",
            f"general_cfg.max_env_steps={RESUMED_STEPS}",
        ),
        tasks,
        RUN_TIMEOUT_S,
    )
    assert code == 0, f"exit {code}\n{run.stderr[-3000:]}"
    (task,) = task_dirs(tasks)
    second = summary_of(task)
    assert second["resumed_from"] == str(source) and second["n_workers"] == 2
    # The counters go on from the checkpoint, to the total.
    assert second["env_steps"] >= RESUMED_STEPS and second["stop_reason"] == "max_env_steps"
    assert second["updates"] > first["updates"]
    assert second["episodes"] == first["episodes"] + second["episodes_this_run"]
    # The kept replay came back and grew by what this run stored.
    assert second["buffer"]["size"] == first["buffer"]["size"] + second["transitions_stored"]
    assert_accounting(second)
    # Both workers played episodes after the resume (the first run had worker 0 only).
    with (task / "results" / "episodes.csv").open() as f:
        resumed = list(csv.DictReader(f))[first["episodes"] :]
    assert {row["worker_id"] for row in resumed} == {"0", "1"}


def test_a_resume_into_another_buffer_size_is_refused_in_one_line(
    one_worker_run: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    source, _ = one_worker_run
    tasks = tmp_path / "tasks"
    run, code = run_to_end(
        resume_args(
            source, tasks, "algo_cfg.buffer_size=5000", f"general_cfg.max_env_steps={RESUMED_STEPS}"
        ),
        tasks,
        RUN_TIMEOUT_S,
    )
    assert code == 2, f"exit {code}\n{run.stderr[-3000:]}"
    assert run.stderr.strip().splitlines() == [
        f"error: algo_cfg.buffer_size=5000, but the replay saved in {source} was saved with "
        "buffer_size=100000; allowed: 100000 (or general_cfg.save_buffer=false to start with "
        "an empty replay)"
    ]
    assert task_dirs(tasks) == []  # nothing started
