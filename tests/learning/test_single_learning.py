"""Every shipped algorithm learns in one process (``mp_backend: single``), seed 1.

Why: one process is reproducible, so these runs pin what an algorithm learns at a fixed
seed independently of the Ray runtime (``test_ray_learning.py`` covers that). Each case
runs the real CLI with the shipped yaml (the hyperparameters a user runs) and a budget a
few times what seed 1 needs, and reads ``results/summary.json``. The runs go two at a
time (``tests/side_by_side.py``); the quick learning checks of the default suite live
beside the algorithms (``tests/test_dqn_learning.py``, ``tests/algos/``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_main
from tests.side_by_side import Outcome, selected_tests, side_by_side

#: id -> (yaml under configs/, overrides, threshold on the best eval return); the longest
#: runs first.
CASES: dict[str, tuple[str, tuple[str, ...], float]] = {
    "td3-pendulum": ("pendulum_td3", ("general_cfg.max_env_steps=20000",), -200.0),
    "sac-pendulum": ("pendulum_sac", ("general_cfg.max_env_steps=12000",), -200.0),
    "dqn-cartpole": ("cartpole_dqn", ("general_cfg.max_env_steps=60000",), 475.0),
    "ppo-cartpole": ("cartpole_ppo", ("general_cfg.max_env_steps=50000",), 475.0),
    "ppo-gaussian-pendulum": ("pendulum_ppo", ("general_cfg.max_env_steps=100000",), -300.0),
    # The DQN variants, on seed 2, to 200 within 20k env steps.
    "dqn-per": (
        "cartpole_dqn",
        ("general_cfg.seed=2", "general_cfg.max_env_steps=20000", "algo_cfg.buffer_type=PER"),
        200.0,
    ),
    "doubledqn-nstep3": (
        "cartpole_dqn",
        (
            "general_cfg.seed=2",
            "general_cfg.max_env_steps=20000",
            "general_cfg.algo_name=DoubleDQN",
            "algo_cfg.n_step=3",
        ),
        200.0,
    ),
    "duelingdqn-per-nstep3": (
        "cartpole_dqn",
        (
            "general_cfg.seed=2",
            "general_cfg.max_env_steps=20000",
            "general_cfg.algo_name=DuelingDQN",
            "algo_cfg.buffer_type=PER",
            "algo_cfg.n_step=3",
        ),
        200.0,
    ),
}


def train_single(tasks: Path, name: str, overrides: tuple[str, ...], threshold: float) -> dict:
    """Run the CLI in one process; returns summary.json of the one task directory written."""
    done = run_main(
        "--yaml",
        str(ROOT / "configs" / f"{name}.yaml"),
        "general_cfg.mp_backend=single",
        "general_cfg.seed=1",
        f"general_cfg.tasks_dir={tasks}",
        "general_cfg.progress=false",
        "general_cfg.save_fig=false",
        f"general_cfg.reward_threshold={threshold}",
        *overrides,
        timeout=840,
    )
    assert done.returncode == 0, (
        f"exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )
    (path,) = tasks.glob("*/results/summary.json")
    return json.loads(path.read_text())


@pytest.fixture(scope="module")
def single_runs(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Outcome[dict]]:
    root = tmp_path_factory.mktemp("single_learning")

    def job(case: str):
        name, overrides, threshold = CASES[case]
        return lambda: train_single(root / case, name, overrides, threshold)

    wanted = selected_tests(request)
    return side_by_side({case: job(case) for case in CASES if case in wanted})


@pytest.mark.slow
@pytest.mark.parametrize("case", list(CASES))
def test_reaches_threshold_in_one_process(single_runs: dict[str, Outcome[dict]], case: str) -> None:
    summary = single_runs[case].result()
    threshold = CASES[case][2]
    history = [(e["env_steps"], round(e["return_mean"], 1)) for e in summary["eval_history"]]
    assert max(e["return_mean"] for e in summary["eval_history"]) >= threshold, history
    assert summary["solved"] and summary["stop_reason"] == "reward_threshold", (
        summary["stop_reason"],
        history,
    )
