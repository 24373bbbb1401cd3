"""Two data-parallel learners still solve CartPole within the single learner's budgets.

Why: the equivalence tests show that two learners take the steps one learner would on the
same data; these runs show the whole arrangement (batches sampled per rank in rounds the
DataServer decides, rollouts split by env, rank 0 publishing and checkpointing) learns as
well in practice. Each case is the real CLI on a local Ray, seed 1, read through
summary.json only, in its own test with its own time limit.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli_runs import assert_solved, train

SOLVED = 475.0
RUN_TIMEOUT_S = 540

#: name -> (yaml, overrides, env-step budget)
CASES = {
    "dqn-2-learners-2-workers": (
        "cartpole_dqn",
        ("general_cfg.n_learners=2", "general_cfg.n_workers=2"),
        60_000,
    ),
    "ppo-2-learners": ("cartpole_ppo", ("general_cfg.n_learners=2",), 50_000),
}


@pytest.mark.slow
@pytest.mark.timeout(RUN_TIMEOUT_S + 60)
@pytest.mark.parametrize("case", list(CASES))
def test_two_learners_solve_cartpole_within_budget(tmp_path: Path, case: str) -> None:
    config, overrides, budget = CASES[case]
    summary = train(
        tmp_path / case,
        config,
        (*overrides, f"general_cfg.max_env_steps={budget}"),
        SOLVED,
        RUN_TIMEOUT_S,
    )
    assert summary["n_learners"] == 2
    assert_solved(summary, SOLVED, budget)
    digests = {s["params_digest"] for s in summary["learners"]}
    assert len(digests) == 1, summary["learners"]
