"""A multi-agent game whose ``step`` raises now and then: the worker rebuilds that game and
plays on, and every decision its agents made is a transition stored or dropped for a named
reason (nothing lost without a count).

The game is PettingZoo's tic-tac-toe through an env of the user's own by import path
(``tests.support.agent_envs:FlakyTicTacToe``), raising on about 2% of its steps. One DQN
policy plays both seats, in this process (``mp_backend=single``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli_runs import train_in_process

FLAKY = "env_cfg.id=tests.support.agent_envs:FlakyTicTacToe"


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_game_that_raises_now_and_then_trains_to_its_budget_and_counts_every_decision(
    tmp_path: Path,
) -> None:
    summary = train_in_process(
        tmp_path,
        "tictactoe_dqn",
        (
            FLAKY,
            "general_cfg.mp_backend=single",
            "general_cfg.online_eval=false",
            "general_cfg.max_env_steps=3000",
            "general_cfg.worker_chunk_steps=32",
        ),
        None,
    )
    assert summary["stop_reason"] == "max_env_steps"
    assert 20 <= summary["env_errors"] <= 150  # about 2% of some 3,000 steps
    policy = summary["policies"]["tictactoe"]
    assert policy["updates"] > 0
    dropped = policy["transitions_dropped"]
    collected = policy["transitions_collected"]
    assert collected == policy["transitions_stored"] + sum(dropped.values()), policy
    # A game's env step is one decision; a step that raised was a decision too. Each error
    # loses the decisions still waiting for their outcome in that game (the raising move's,
    # and the other player's last), not the game's earlier transitions.
    assert collected == summary["env_steps"] + summary["env_errors"], (summary["env_steps"], policy)
    assert 0 < dropped["env_error"] <= 2 * summary["env_errors"], policy
