"""The shipped latency-bound example in one process (CartPole with 2 ms per step, 1 worker x
8 async envs stepped in subprocesses, async evaluation: ``configs/slow_cartpole_ppo_single.yaml``)
solves within its budget, with no env error, and is not advised to step its envs side by side.
Its Ray layout (``configs/slow_cartpole_ppo.yaml``) is a case of
``benchmarks/learning_matrix.py``."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.learning_matrix import CASES
from tests.support.cli_runs import assert_solved, train_in_process

RUN_TIMEOUT_S = 540  # it takes under a minute here; past this it hangs


@pytest.mark.slow
@pytest.mark.timeout(RUN_TIMEOUT_S + 60)
def test_slow_cartpole_ppo_with_async_envs_solves_within_100k_env_steps(tmp_path: Path) -> None:
    learning = CASES["single-slow-cartpole-ppo-async-envs"]
    summary = train_in_process(tmp_path, learning.config, learning.args(), learning.threshold)
    assert summary["backend"] == "single"
    assert_solved(summary, learning.threshold, learning.budget)
    assert summary["env_steps"] <= 100_000
    assert summary["env_errors"] == 0
    # Stepping side by side, the workers no longer get the advice to do so.
    assert "vector_mode: async steps" not in summary["bottleneck_line"]
