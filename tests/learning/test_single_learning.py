"""Every shipped algorithm learns in one process (``mp_backend: single``), seed 1.

Why: one process is reproducible, so these runs pin what an algorithm learns at a fixed
seed independently of the Ray runtime (``test_ray_learning.py`` covers that). Each case
runs the real CLI with the shipped yaml (the hyperparameters a user runs) and a budget a
few times what seed 1 needs, and reads ``results/summary.json``. Each case is its own
test, with its own time limit; the quick learning checks of the default suite live beside
the algorithms (``tests/algos/``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli_runs import assert_solved, train

RUN_TIMEOUT_S = 540

#: id -> (yaml under configs/, overrides, threshold on the best eval return)
CASES: dict[str, tuple[str, tuple[str, ...], float]] = {
    "dqn-cartpole": ("cartpole_dqn", ("general_cfg.max_env_steps=60000",), 475.0),
    "td3-pendulum": ("pendulum_td3", ("general_cfg.max_env_steps=20000",), -200.0),
    "sac-pendulum": ("pendulum_sac", ("general_cfg.max_env_steps=12000",), -200.0),
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


@pytest.mark.slow
@pytest.mark.timeout(RUN_TIMEOUT_S + 60)
@pytest.mark.parametrize("case", list(CASES))
def test_reaches_threshold_in_one_process(tmp_path: Path, case: str) -> None:
    config, overrides, threshold = CASES[case]
    summary = train(
        tmp_path / case,
        config,
        ("general_cfg.mp_backend=single", *overrides),
        threshold,
        RUN_TIMEOUT_S,
    )
    assert_solved(summary, threshold)
