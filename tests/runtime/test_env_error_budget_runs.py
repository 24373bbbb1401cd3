"""The env-error budget in real runs (``python main.py`` on a local Ray, DQN on CartPole-v1,
2 workers, seed 1, the shipped config otherwise): an env that fails on 1% of its steps
learns to the end; one that fails on every step stops the run at once with one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.runs import ROOT, run_main

CARTPOLE_DQN = (
    "--yaml",
    str(ROOT / "configs" / "cartpole_dqn.yaml"),
    "general_cfg.n_workers=2",
    "general_cfg.seed=1",
    "general_cfg.ray_num_cpus=2",
    "general_cfg.progress=false",
    "general_cfg.save_fig=false",
)


def summary_of(tasks: Path) -> dict:
    (path,) = tasks.glob("*/results/summary.json")
    return json.loads(path.read_text())


@pytest.mark.slow
def test_dqn_cartpole_with_env_failing_on_1_percent_of_steps_solves(tmp_path: Path) -> None:
    done = run_main(
        *CARTPOLE_DQN,
        "general_cfg.fault_injection.env_error_rate=0.01",
        "general_cfg.reward_threshold=475",
        "general_cfg.max_env_steps=100000",
        f"general_cfg.tasks_dir={tmp_path}",
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    summary = summary_of(tmp_path)
    assert summary["stop_reason"] == "reward_threshold", summary["eval_history"]
    solved = [e for e in summary["eval_history"] if e["return_mean"] >= 475]
    assert solved and solved[0]["env_steps"] <= 100_000
    # ~1 in 100 steps: the errors of the steps taken, all counted.
    assert 0.005 * summary["env_steps"] < summary["env_errors"] < 0.02 * summary["env_steps"]
    assert "InjectedEnvError" in summary["first_env_error"]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_env_raising_on_every_step_stops_with_exit_1_and_one_line(
    tmp_path: Path, mode: str
) -> None:
    # The test's timeout bounds how long the run takes to stop, start-up and teardown
    # included: the stop comes with the workers' first steps (about 10 s on an idle 2-core
    # machine); the margin is for a loaded one.
    done = run_main(
        *CARTPOLE_DQN,
        "env_cfg.id=tests.support.faulty_envs:BrokenStepEnv",
        f"env_cfg.vector_mode={mode}",
        f"general_cfg.tasks_dir={tmp_path}",
        timeout=60,
    )
    assert done.returncode == 1, done.stderr[-3000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, done.stderr[-3000:]
    assert errors[0].startswith("error: worker "), errors
    assert errors[0].endswith(
        "env step raised RuntimeError: simulator crashed: segment 7 out of bounds, and failed "
        "again each of the 3 times it was rebuilt"
    ), errors
    assert summary_of(tmp_path)["stop_reason"] == "env_failed"
