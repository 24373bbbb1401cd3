"""The bottleneck report names ``env_cfg.vector_mode: async`` when the workers' time is the
env's step and each step is slow, measured from the workers' own seconds per env step."""

from __future__ import annotations

from joyrl_ray.run.bottleneck import describe, judge
from joyrl_ray.wire.messages import LearnerTimes, WorkerTimes

# 60 s of 2 workers: 100 s stepping, 20 s waiting; the learner waits for data most of it.
WORKERS = WorkerTimes(step_s=100.0, push_wait_s=15.0, weights_wait_s=5.0)
LEARNERS = LearnerTimes(learn_s=10.0, data_wait_s=50.0)


def report(env_steps: int, n_envs: int = 4, mode: str = "sync") -> str:
    b = judge(
        WORKERS,
        LEARNERS,
        wall_s=60.0,
        n_workers=2,
        n_learners=1,
        env_steps=env_steps,
        n_envs_per_worker=n_envs,
        vector_mode=mode,
    )
    return describe(b, learners=True)


def test_slow_env_steps_under_sync_get_the_async_advice() -> None:
    line = report(env_steps=40_000)  # 2.5 ms of worker time per env step
    assert line.endswith(
        "; the env is slow (2.5 ms of worker time per env step): env_cfg.vector_mode: async "
        "steps each worker's 4 envs side by side"
    ), line


def test_a_fast_env_gets_no_async_advice() -> None:
    line = report(env_steps=5_000_000)  # 20 us per env step: CartPole and the policy
    assert "async" not in line and "slow" not in line, line


def test_one_env_per_worker_is_told_to_add_envs_with_async() -> None:
    line = report(env_steps=40_000, n_envs=1)
    assert "env_cfg.vector_mode: async with general_cfg.n_envs_per_worker > 1" in line, line


def test_a_learner_bound_run_is_not_told_to_step_faster() -> None:
    workers = WorkerTimes(step_s=20.0, push_wait_s=90.0, weights_wait_s=10.0)
    b = judge(
        workers, LearnerTimes(learn_s=58.0), wall_s=60.0, n_workers=2, n_learners=1, env_steps=8_000
    )
    assert b.verdict == "learner_bound"
    assert b.advice == ""
