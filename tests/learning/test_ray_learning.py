"""Every shipped algorithm reaches its claimed return on the Ray backend, within its budget.

Why: the single-process learning tests cannot see what only the Ray runtime does (two
workers pushing in parallel, weights travelling by version, the update-to-data ratio kept
across processes, PER priorities written back by slot). Each case runs the real CLI,
``python main.py --yaml configs/<name>.yaml``, on a local Ray with two workers and seed 1,
stops at the first online evaluation (10 episodes) that reaches the threshold, and reads
only ``results/summary.json``, so the tests hold however the runtime is arranged inside.
The budgets are the ones the yaml files and the README claim (``max_env_steps``; 60k env
steps for the DQN family on CartPole). The runs go two at a time (``tests/side_by_side.py``).
"""

from __future__ import annotations

import pytest

from tests.learning.cli_runs import assert_solved, evals, train_selected
from tests.side_by_side import Outcome, selected_tests

DQN_BUDGET = "general_cfg.max_env_steps=60000"
SHARDS_2 = "general_cfg.n_replay_shards=2"  # worker k -> shard k mod 2, sampled round robin
EVAL_SHARE_TEST = "test_online_evaluation_takes_under_1_percent_of_the_learners_time"

#: id -> (yaml under configs/, extra overrides, threshold on the best eval return); the
#: longest runs first.
CASES: dict[str, tuple[str, tuple[str, ...], float]] = {
    "duelingdqn-cartpole": (
        "cartpole_dqn",
        (DQN_BUDGET, "general_cfg.algo_name=DuelingDQN"),
        475.0,
    ),
    "dqn-per-cartpole": ("cartpole_dqn_per", (DQN_BUDGET,), 475.0),
    "dqn-per-cartpole-2-shards": ("cartpole_dqn_per", (DQN_BUDGET, SHARDS_2), 475.0),
    "dqn-cartpole": ("cartpole_dqn", (DQN_BUDGET,), 475.0),
    "dqn-cartpole-2-shards": ("cartpole_dqn", (DQN_BUDGET, SHARDS_2), 475.0),
    "dqn-nstep3-cartpole": ("cartpole_dqn", (DQN_BUDGET, "algo_cfg.n_step=3"), 475.0),
    "doubledqn-cartpole": ("cartpole_dqn", (DQN_BUDGET, "general_cfg.algo_name=DoubleDQN"), 475.0),
    "td3-pendulum": ("pendulum_td3", (), -200.0),
    "sac-pendulum": ("pendulum_sac", (), -200.0),
    "ppo-cartpole": ("cartpole_ppo", (), 475.0),
}
#: The evaluation-share test's own run: a fixed 16k env steps (no threshold to stop at),
#: so it sees the same number of evaluations however soon a seed solves.
EVAL_SHARE_RUN = "dqn-cartpole-16k"
EVAL_SHARE_CASE = ("cartpole_dqn", ("general_cfg.max_env_steps=16000",), None)


@pytest.fixture(scope="module")
def ray_runs(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Outcome[dict]]:
    eval_share_wanted = EVAL_SHARE_TEST in selected_tests(request)
    return train_selected(
        request,
        tmp_path_factory,
        {**CASES, EVAL_SHARE_RUN: EVAL_SHARE_CASE},
        ("general_cfg.mp_backend=ray", "general_cfg.n_workers=2"),
        also=(EVAL_SHARE_RUN,) if eval_share_wanted else (),
    )


@pytest.mark.slow
@pytest.mark.parametrize("case", list(CASES))
def test_reaches_threshold_on_ray(ray_runs: dict[str, Outcome[dict]], case: str) -> None:
    assert_solved(ray_runs[case].result(), CASES[case][2])


@pytest.mark.slow
def test_online_evaluation_takes_under_1_percent_of_the_learners_time(
    ray_runs: dict[str, Outcome[dict]],
) -> None:
    """``configs/cartpole_dqn.yaml`` for 16k env steps: evaluation runs beside learning."""
    summary = ray_runs[EVAL_SHARE_RUN].result()
    assert summary["stop_reason"] == "max_env_steps", summary["stop_reason"]
    assert len(summary["eval_history"]) >= 5, evals(summary)  # evaluations did happen
    eval_s = summary["time_s"]["learner_checkpoint"]
    assert eval_s < 0.01 * summary["wall_time_s"], (eval_s, summary["wall_time_s"])
