"""Without memory the same configs fail: what the recurrent cases of ``tests/learning/``
solve needs the memory.

``configs/cartpole_novel_ppo_lstm_single.yaml`` (PPO with an LSTM, CartPole without its
velocities) solves within its 150k env steps (``test_single_learning.py``; at 72k here);
the same config with a feed-forward actor cannot tell which way the pole moves and stays
below 200 over 80k env steps, past where the LSTM solved.
``configs/cue_recall_ppo_lstm.yaml`` (a GRU) names a cue shown 5 blank steps earlier; a
feed-forward actor sees the same observation at every answer and scores chance, 0. The
runs without memory take the single backend: the algorithm is the same, and they are
cheaper there.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli_runs import evals, train_in_process

FEED_FORWARD = (
    "algo_cfg.actor_layers=[{layer_type: linear, layer_dim: [64], activation: relu}, "
    "{layer_type: linear, layer_dim: [64], activation: relu}]"
)
SINGLE = ("general_cfg.mp_backend=single", "general_cfg.seed=1")
CONTROL_STEPS = 80_000  # the LSTM solved at 72k


def best_eval(summary: dict) -> float:
    assert summary["eval_history"], summary
    return max(e["return_mean"] for e in summary["eval_history"])


@pytest.mark.slow
def test_ppo_without_memory_stays_below_200_on_cartpole_without_velocities(
    tmp_path: Path,
) -> None:
    summary = train_in_process(
        tmp_path,
        "cartpole_novel_ppo_lstm_single",
        (*SINGLE, FEED_FORWARD, f"general_cfg.max_env_steps={CONTROL_STEPS}"),
        threshold=None,
    )
    assert summary["stop_reason"] == "max_env_steps" and summary["env_steps"] >= CONTROL_STEPS
    assert best_eval(summary) < 200, evals(summary)


@pytest.mark.slow
def test_a_policy_without_memory_scores_chance_on_the_cue_recall_task(tmp_path: Path) -> None:
    summary = train_in_process(
        tmp_path, "cue_recall_ppo_lstm", (*SINGLE, FEED_FORWARD), threshold=None
    )
    assert summary["stop_reason"] == "max_env_steps"
    # Chance is 0; 20 evaluation episodes of a coin flip stay within +-0.7 (p > 0.99).
    assert best_eval(summary) < 0.7, evals(summary)
