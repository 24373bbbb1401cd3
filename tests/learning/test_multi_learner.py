"""Two data-parallel learners still solve CartPole within the single learner's budgets.

Why: the equivalence tests show that two learners take the steps one learner would on the
same data; these runs show the whole arrangement (batches sampled per rank in rounds the
DataServer decides, rollouts split by env, rank 0 publishing and checkpointing) learns as
well in practice. Each case is the real CLI on a local Ray, seed 1, read through
summary.json only; the two run side by side.
"""

from __future__ import annotations

import pytest

from tests.learning.cli_runs import Cases, evals, train_selected
from tests.side_by_side import Outcome

SOLVED = 475.0


#: name -> (yaml, overrides, env-step budget)
CASES = {
    "dqn-2-learners-2-workers": (
        "cartpole_dqn",
        ("general_cfg.n_learners=2", "general_cfg.n_workers=2"),
        60_000,
    ),
    "ppo-2-learners": ("cartpole_ppo", ("general_cfg.n_learners=2",), 50_000),
}


@pytest.fixture(scope="module")
def multi_learner_runs(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Outcome[dict]]:
    """Both cases, side by side (``tests/side_by_side.py``)."""
    cases: Cases = {
        name: (config, (*overrides, f"general_cfg.max_env_steps={budget}"), SOLVED)
        for name, (config, overrides, budget) in CASES.items()
    }
    return train_selected(request, tmp_path_factory, cases, ())


@pytest.mark.slow
@pytest.mark.parametrize("case", list(CASES))
def test_two_learners_solve_cartpole_within_budget(
    multi_learner_runs: dict[str, Outcome[dict]], case: str
) -> None:
    budget = CASES[case][2]
    summary = multi_learner_runs[case].result()
    assert summary["n_learners"] == 2
    assert summary["solved"] and summary["stop_reason"] == "reward_threshold", evals(summary)
    solving = next(e for e in summary["eval_history"] if e["return_mean"] >= SOLVED)
    assert solving["env_steps"] <= budget, evals(summary)
    digests = {s["params_digest"] for s in summary["learners"]}
    assert len(digests) == 1, summary["learners"]
