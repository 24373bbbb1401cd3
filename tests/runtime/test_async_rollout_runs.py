"""Whole runs of the asynchronous rollout flow (APPO), through main.py or the runner it calls.

On Ray, a learner slowed on purpose falls behind workers that never wait for it: the queue
fills to its capacity and no further, the workers wait for room, and the rollouts that
grew more than ``max_policy_lag`` versions old meanwhile are dropped and counted as
``stale``; every env step is still stored or dropped for a named reason. In one process
the flow runs in turns, so a seeded run is reproducible.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli_runs import assert_accounting, train_in_process
from tests.support.cli_runs import train as train_cli

RUN_TIMEOUT_S = 300
CAPACITY = 6


@pytest.mark.timeout(RUN_TIMEOUT_S)
def test_a_slow_learner_drops_rollouts_past_the_policy_lag_and_counts_them(
    ray_session, tmp_path: Path
) -> None:
    summary = train_in_process(
        tmp_path,
        "cartpole_appo",
        (
            "general_cfg.algo_name=tests.support.slow_algos:SLOW_APPO",
            "general_cfg.mp_backend=ray",
            "general_cfg.n_workers=2",
            "general_cfg.n_envs_per_worker=2",
            "general_cfg.max_env_steps=4096",
            "general_cfg.online_eval=false",
            "general_cfg.model_save_fre=1000",
            "algo_cfg.learn_sleep_s=0.3",
            "algo_cfg.n_epochs=1",
            "algo_cfg.rollout_len=32",
            "algo_cfg.batch_rollouts=1",
            "algo_cfg.max_policy_lag=1",
            f"algo_cfg.rollout_queue_capacity={CAPACITY}",
        ),
        None,
    )
    assert summary["stop_reason"] == "max_env_steps"
    dropped = summary["transitions_dropped"]
    assert dropped.get("stale", 0) > 0, dropped
    assert summary["transitions_stored"] > 0
    assert_accounting(summary)
    buffer = summary["buffer"]
    assert buffer["rollout_queue_peak"] == CAPACITY, buffer  # filled, never past it
    assert buffer["rollout_lag_max"] <= 1, buffer  # learned only within the lag bound
    assert summary["time_s"]["workers_push_wait"] > 0  # the workers waited for room


def test_a_seeded_appo_run_on_the_single_backend_is_reproducible(tmp_path: Path) -> None:
    overrides = (
        "general_cfg.mp_backend=single",
        "general_cfg.max_env_steps=3072",
        "general_cfg.model_save_fre=2",
        "algo_cfg.rollout_len=64",
    )
    # Each run its own process, as a user reruns main.py.
    first, second = (
        train_cli(tmp_path / name, "cartpole_appo", overrides, None, RUN_TIMEOUT_S)
        for name in ("first", "second")
    )
    assert first["updates"] == second["updates"] >= 6
    digests = [s["learners"][0]["params_digest"] for s in (first, second)]
    assert digests[0] == digests[1]
    evaluated = [
        [(e["env_steps"], e["return_mean"]) for e in s["eval_history"]] for s in (first, second)
    ]
    assert evaluated[0] == evaluated[1] and len(evaluated[0]) >= 3
    assert_accounting(first)
