"""The bottleneck verdict on runs built to be limited by one side, read from outside.

A worker-bound run: one worker whose env sleeps 20 ms a step (``step_latency``) feeds a
learner asked for a quarter update per step, which then waits for data. A learner-bound
run: a learner whose every update sleeps 10 ms (``tests.support.slow_algos:SLOW_DQN``) at
one update per step, behind two workers stepping CartPole far faster, which wait to push.
Each must say so in ``summary["bottleneck"]``, and the progress rows' ``limit`` while it
learns (judged every 5 s over the last stretch) must name that side and never the other.
Pushes of 16 steps keep each wait short: a stretch counts a wait once it has ended.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from joyrl_ray.run.runner import run
from tests.support.cli_runs import step_latency, summary_of
from tests.support.procs import task_dirs
from tests.support.runs import make_cfg

RUN_TIMEOUT_S = 240
MAX_ENV_STEPS = 1000
COMMON = (
    "general_cfg.mp_backend=ray",
    "general_cfg.online_eval=false",
    "general_cfg.save_fig=false",
    "general_cfg.seed=1",
    "general_cfg.progress=false",
    "algo_cfg.learn_start=100",
    "general_cfg.worker_chunk_steps=16",
)
RUNS = {
    "worker_bound": (
        "general_cfg.n_workers=1",
        *step_latency(0.02),
        "algo_cfg.updates_per_step=0.25",
        f"general_cfg.max_env_steps={MAX_ENV_STEPS}",  # ~20 s of stepping
    ),
    "learner_bound": (
        "general_cfg.n_workers=2",
        "general_cfg.algo_name=tests.support.slow_algos:SLOW_DQN",
        "algo_cfg.learn_sleep_s=0.01",
        "algo_cfg.updates_per_step=1",
        f"general_cfg.max_env_steps={MAX_ENV_STEPS}",  # ~9 s of learning
    ),
}


@pytest.mark.release
@pytest.mark.slow
@pytest.mark.timeout(RUN_TIMEOUT_S + 60)
@pytest.mark.parametrize("verdict", list(RUNS))
def test_a_run_built_to_be_limited_by_one_side_is_judged_so(
    ray_session, tmp_path: Path, verdict: str
) -> None:
    # The runner as main.py calls it, on the session's Ray: its actors are real Ray actors,
    # its driver is this process.
    result = run(make_cfg(tmp_path, *COMMON, *RUNS[verdict]))
    assert result.exit_code == 0, result.summary
    (task,) = task_dirs(tmp_path)
    summary = summary_of(task)
    assert summary["bottleneck"]["verdict"] == verdict, summary["bottleneck"]
    assert summary["bottleneck_line"].startswith(f"what limited the run: {verdict[:6]}")
    with (task / "results" / "progress.csv").open(newline="") as f:
        judged = [
            row["limit"]
            for row in csv.DictReader(f)
            # while it learns: after learn_start, before the workers stop at the step limit
            if float(row["updates"]) > 0
            and float(row["env_steps"]) < MAX_ENV_STEPS
            and row["limit"] not in ("", "-")
        ]
    assert judged, "no progress row was judged while learning"
    # Each stretch is short, and the other xdist worker's run shares the CPUs: a stretch may
    # look balanced, but the progress line names this side and never the other one.
    opposite = "learner_bound" if verdict == "worker_bound" else "worker_bound"
    assert verdict in judged and opposite not in judged, judged
