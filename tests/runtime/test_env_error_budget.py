"""The env-error budget: a rate over the recent env steps, never a total over the run."""

from __future__ import annotations

import pytest

from joyrl_ray.config import ConfigError, load_config
from joyrl_ray.control.env_error_budget import EnvErrorBudget


def test_one_error_in_a_hundred_steps_for_ten_million_steps_never_stops() -> None:
    budget = EnvErrorBudget(errors_per_1000=20, window_steps=50_000)
    for _ in range(10_000_000 // 1_000):
        assert budget.record(1_000, 10) is None
    assert budget.errors == 100_000
    assert budget.in_window == 500


def test_errors_on_every_other_step_stop_with_one_line_naming_the_key() -> None:
    budget = EnvErrorBudget(errors_per_1000=20, window_steps=50_000)
    reason = None
    steps = 0
    while reason is None:
        reason = budget.record(100, 50, "worker 0: env step raised RuntimeError: boom")
        steps += 100
    # Stopped at the first report past 1,000 errors in the window (20 per 1,000 x 50k).
    assert steps == 2_100
    assert "\n" not in reason
    assert reason.startswith("1050 env errors in the last 2100 env steps")
    assert "general_cfg.max_env_errors_per_1000=20" in reason
    assert reason.endswith("the last: worker 0: env step raised RuntimeError: boom")


def test_a_burst_of_errors_leaves_the_window_and_no_longer_counts() -> None:
    budget = EnvErrorBudget(errors_per_1000=1, window_steps=10_000)  # 10 errors per window
    assert budget.record(1_000, 9) is None
    assert budget.record(10_000, 0) is None  # the burst is now older than the window
    assert budget.in_window == 0
    assert budget.record(1_000, 9) is None
    assert budget.record(0, 2) is not None  # 11 within the last 10k steps


def test_zero_per_1000_stops_at_the_first_error() -> None:
    budget = EnvErrorBudget(errors_per_1000=0, window_steps=50_000)
    assert budget.record(5_000, 0) is None
    assert budget.record(10, 1) is not None


@pytest.mark.parametrize(
    ("override", "line"),
    [
        (
            "general_cfg.max_env_errors_per_1000=-2",
            "general_cfg.max_env_errors_per_1000=-2.0 is out of range; allowed: >= 0, "
            "or -1 (no limit)",
        ),
        (
            "general_cfg.env_error_window_steps=0",
            "general_cfg.env_error_window_steps=0 must be >= 1",
        ),
    ],
)
def test_a_budget_that_cannot_work_is_refused_in_one_line(override: str, line: str) -> None:
    with pytest.raises(ConfigError) as refused:
        load_config(None, [override])
    assert str(refused.value) == line
