"""Every shipped algorithm reaches its claimed return on the Ray backend, within its budget.

Why: the single-process learning tests cannot see what only the Ray runtime does (two
workers pushing in parallel, weights travelling by version, the update-to-data ratio kept
across processes, PER priorities written back by slot). Each case runs the real CLI,
``python main.py --yaml configs/<name>.yaml``, on a local Ray with two workers and seed 1,
stops at the first online evaluation (10 episodes) that reaches the threshold, and reads
only ``results/summary.json``, so the tests hold however the runtime is arranged inside.
The budgets are the ones the yaml files and the README claim (``max_env_steps``; 60k env
steps for the DQN family on CartPole). Each case is its own test, with its own time limit.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli_runs import assert_solved, train

DQN_BUDGET = "general_cfg.max_env_steps=60000"
SHARDS_2 = "general_cfg.n_replay_shards=2"  # worker k -> shard k mod 2, sampled round robin
RUN_TIMEOUT_S = 540  # a case takes 1-4 minutes here; past this it hangs

#: id -> (yaml under configs/, extra overrides, threshold on the best eval return)
CASES: dict[str, tuple[str, tuple[str, ...], float]] = {
    "dqn-cartpole": ("cartpole_dqn", (DQN_BUDGET,), 475.0),
    "dqn-cartpole-2-shards": ("cartpole_dqn", (DQN_BUDGET, SHARDS_2), 475.0),
    "dqn-per-cartpole-2-shards": ("cartpole_dqn_per", (DQN_BUDGET, SHARDS_2), 475.0),
    # The variants, two to a run: each of them solves beside another.
    "doubledqn-per-cartpole": (
        "cartpole_dqn_per",
        (DQN_BUDGET, "general_cfg.algo_name=DoubleDQN"),
        475.0,
    ),
    "duelingdqn-nstep3-cartpole": (
        "cartpole_dqn",
        (DQN_BUDGET, "general_cfg.algo_name=DuelingDQN", "algo_cfg.n_step=3"),
        475.0,
    ),
    "td3-pendulum": ("pendulum_td3", (), -200.0),
    "sac-pendulum": ("pendulum_sac", (), -200.0),
    "ppo-cartpole": ("cartpole_ppo", (), 475.0),
    "appo-cartpole": ("cartpole_appo", ("general_cfg.max_env_steps=100000",), 475.0),
    "appo-pendulum": ("pendulum_appo", (), -300.0),  # its yaml's budget: 300k env steps
    "impala-cartpole": ("cartpole_impala", (), 475.0),  # its yaml's budget: 100k env steps
    # Observations beyond one Box: a Dict ({"pos", "goal"}), and Discrete (one-hot).
    "dqn-goalgrid-dict": ("goalgrid_dqn", (), 0.9),
    "ppo-goalgrid-dict": ("goalgrid_ppo", (), 0.9),
    "dqn-frozenlake-discrete": ("frozenlake_dqn", (), 1.0),
    # Policies with memory: CartPole without its velocities (an LSTM; its yaml's budget:
    # 150k env steps), a cue recalled after 5 blank steps (a GRU).
    "ppo-lstm-cartpole-novel": ("cartpole_novel_ppo_lstm", (), 475.0),
    "ppo-gru-cue-recall": ("cue_recall_ppo_lstm", (), 0.9),
    # APPO with an LSTM on Pendulum without its angular velocity (its yaml's budget: 300k).
    "appo-lstm-pendulum-novel": ("pendulum_novel_appo_lstm", (), -300.0),
}


@pytest.mark.slow
@pytest.mark.timeout(RUN_TIMEOUT_S + 60)
@pytest.mark.parametrize("case", list(CASES))
def test_reaches_threshold_on_ray(tmp_path: Path, case: str) -> None:
    config, overrides, threshold = CASES[case]
    summary = train(
        tmp_path / case,
        config,
        ("general_cfg.mp_backend=ray", "general_cfg.n_workers=2", *overrides),
        threshold,
        RUN_TIMEOUT_S,
    )
    assert_solved(summary, threshold)
