"""The shipped latency-bound examples (CartPole with 2 ms per step, async envs, async
evaluation) solve within their budget, with their envs stepped in subprocesses:
``configs/slow_cartpole_ppo.yaml`` on a local Ray (2 workers x 4 async envs) and
``configs/slow_cartpole_ppo_single.yaml`` in one process (1 worker x 8 async envs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli_runs import assert_solved, train

RUN_TIMEOUT_S = 540  # it takes a minute or two here; past this it hangs


@pytest.mark.slow
@pytest.mark.timeout(RUN_TIMEOUT_S + 60)
@pytest.mark.parametrize(
    ("config", "backend"),
    [("slow_cartpole_ppo", "ray"), ("slow_cartpole_ppo_single", "single")],
)
def test_slow_cartpole_ppo_with_async_envs_solves_within_100k_env_steps(
    tmp_path: Path, config: str, backend: str
) -> None:
    summary = train(tmp_path, config, (), 475.0, RUN_TIMEOUT_S)
    assert summary["backend"] == backend
    assert_solved(summary, 475.0)
    assert summary["env_steps"] <= 100_000
    assert summary["env_errors"] == 0
    # Stepping side by side, the workers no longer get the advice to do so.
    assert "vector_mode: async steps" not in summary["bottleneck_line"]
