"""Sweeps as a user runs them: ``main.py --yaml configs/cartpole_ppo.yaml --sweep FILE``
in a process of its own, and what it wrote."""

from __future__ import annotations

import csv
from pathlib import Path

from tests.support.cli_runs import config_path
from tests.support.procs import TrackedRun

BUDGET = 12_288  # PPO on CartPole: 12 iterations of 1,024 env steps, an evaluation every 2


def sweep_args(tmp_path: Path, sweep: str, *overrides: str) -> tuple[str, ...]:
    path = tmp_path / "sweep.yaml"
    path.write_text(sweep)
    return (
        "--yaml",
        config_path("cartpole_ppo"),
        "--sweep",
        str(path),
        f"general_cfg.max_env_steps={BUDGET}",
        "general_cfg.reward_threshold=null",
        "general_cfg.ray_num_cpus=2",
        "general_cfg.save_fig=false",
        f"general_cfg.tasks_dir={tmp_path / 'tasks'}",
        *overrides,
    )


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open() as f:
        return list(csv.DictReader(f))


def finished_sweep(tmp_path: Path, run: TrackedRun) -> tuple[Path, list[dict[str, str]]]:
    try:
        code = run.wait(timeout=480)
    finally:
        run.kill()
    assert code == 0, f"exit {code}\n{run.stdout[-2000:]}\n{run.stderr[-3000:]}"
    (sweep_dir,) = (tmp_path / "tasks").glob("Sweep_CartPole-v1_PPO_*")
    return sweep_dir, read_csv(sweep_dir / "sweep_results.csv")
