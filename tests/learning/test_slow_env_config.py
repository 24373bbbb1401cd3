"""The shipped latency-bound example, ``configs/slow_cartpole_ppo.yaml`` (CartPole with 2 ms
per step, 2 workers x 4 async envs, async evaluation), solves on a local Ray within its
budget, and its workers and evaluator step their envs in subprocesses."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli_runs import assert_solved, train

RUN_TIMEOUT_S = 540  # it takes a minute or two here; past this it hangs


@pytest.mark.slow
@pytest.mark.timeout(RUN_TIMEOUT_S + 60)
def test_slow_cartpole_ppo_with_async_envs_solves_within_100k_env_steps(tmp_path: Path) -> None:
    summary = train(tmp_path, "slow_cartpole_ppo", (), 475.0, RUN_TIMEOUT_S)
    assert_solved(summary, 475.0)
    assert summary["env_steps"] <= 100_000
    assert summary["env_errors"] == 0
    # Stepping side by side, the workers no longer get the advice to do so.
    assert "vector_mode: async steps" not in summary["bottleneck_line"]
