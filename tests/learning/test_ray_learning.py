"""Every shipped algorithm reaches its claimed return on the Ray backend, within its budget.

Why: the single-process learning tests cannot see what only the Ray runtime does (two
workers pushing in parallel, weights travelling by version, the update-to-data ratio kept
across processes, PER priorities written back by slot). Each case runs the real CLI,
``python main.py --yaml configs/<name>.yaml``, on a local Ray with two workers and seed 1,
stops at the first online evaluation (10 episodes) that reaches the threshold, and reads
only ``results/summary.json``, so the tests hold however the runtime is arranged inside.
The budgets are the ones the yaml files and the README claim (``max_env_steps``; 60k env
steps for the DQN family on CartPole).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_main

DQN_BUDGET = "general_cfg.max_env_steps=60000"

#: id -> (yaml under configs/, extra overrides, threshold on the best eval return).
CASES: dict[str, tuple[str, tuple[str, ...], float]] = {
    "ppo-cartpole": ("cartpole_ppo", (), 475.0),
    "sac-pendulum": ("pendulum_sac", (), -200.0),
    "td3-pendulum": ("pendulum_td3", (), -200.0),
    "dqn-per-cartpole": ("cartpole_dqn_per", (DQN_BUDGET,), 475.0),
    "dqn-nstep3-cartpole": ("cartpole_dqn", (DQN_BUDGET, "algo_cfg.n_step=3"), 475.0),
    "doubledqn-cartpole": ("cartpole_dqn", (DQN_BUDGET, "general_cfg.algo_name=DoubleDQN"), 475.0),
    "duelingdqn-cartpole": (
        "cartpole_dqn",
        (DQN_BUDGET, "general_cfg.algo_name=DuelingDQN"),
        475.0,
    ),
}


def train_on_ray(tmp_path: Path, name: str, overrides: tuple[str, ...], threshold: float) -> dict:
    """Run the CLI on a local Ray; returns summary.json of the one task directory written."""
    done = run_main(
        "--yaml",
        str(ROOT / "configs" / f"{name}.yaml"),
        "general_cfg.mp_backend=ray",
        "general_cfg.n_workers=2",
        "general_cfg.seed=1",
        f"general_cfg.tasks_dir={tmp_path}",
        "general_cfg.progress=false",
        "general_cfg.save_fig=false",
        f"general_cfg.reward_threshold={threshold}",
        *overrides,
        timeout=840,
    )
    assert done.returncode == 0, (
        f"exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )
    summaries = list(tmp_path.glob("*/results/summary.json"))
    assert len(summaries) == 1, summaries
    return json.loads(summaries[0].read_text())


def best_return(summary: dict) -> float:
    return max(e["return_mean"] for e in summary["eval_history"])


@pytest.mark.slow
@pytest.mark.parametrize("case", list(CASES))
def test_reaches_threshold_on_ray(tmp_path: Path, case: str) -> None:
    name, overrides, threshold = CASES[case]
    summary = train_on_ray(tmp_path, name, overrides, threshold)
    history = [(e["env_steps"], round(e["return_mean"], 1)) for e in summary["eval_history"]]
    assert summary["eval_history"], summary
    assert best_return(summary) >= threshold, history
    assert summary["solved"] and summary["stop_reason"] == "reward_threshold", (
        summary["stop_reason"],
        history,
    )
