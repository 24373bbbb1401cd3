"""A frame-stacked replay whose frame store wraps under transitions it still holds.

The replay keeps each frame once, in a ring of about 1.5 frames per transition (plus
10,000). Episodes of one step each send a whole stack at every reset: 4 + 1 frames per
transition, so with ``buffer_size: 4000`` (16,000 frames) the frames of the oldest
transitions are overwritten after about 3,200 env steps, while those transitions can still
be sampled. The run stops with the learner's error in one line, not with a wrong sample.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli_runs import run_to_end, summary_of
from tests.support.procs import task_dirs
from tests.support.watch import the_error_line

RUN_TIMEOUT_S = 120
OVERWRITTEN = (
    "sampled transitions refer to frames already overwritten (episodes far shorter than the "
    "frame stack?)"
)
ONE_STEP_EPISODES = (
    "env_cfg.id=tests.support.frame_envs:CountingFramesEnv",
    "env_cfg.kwargs={length: 1}",
    "env_cfg.wrappers=[frame_stack]",
    "env_cfg.frame_stack=4",
    "algo_cfg.value_layers=[{layer_type: linear, layer_dim: [16], activation: relu}]",
    "algo_cfg.buffer_size=4000",
    "algo_cfg.learn_start=100",
    "algo_cfg.batch_size=16",
    "algo_cfg.updates_per_step=0.05",
    "general_cfg.mp_backend=single",
    "general_cfg.max_env_steps=8000",
    "general_cfg.online_eval=false",
    "general_cfg.save_fig=false",
    "general_cfg.progress=false",
    "general_cfg.seed=1",
)


@pytest.mark.timeout(RUN_TIMEOUT_S + 60)
def test_sampling_frames_already_overwritten_stops_the_run_with_one_error_line(
    tmp_path: Path,
) -> None:
    run, code = run_to_end(
        (*ONE_STEP_EPISODES, f"general_cfg.tasks_dir={tmp_path}"), tmp_path, RUN_TIMEOUT_S
    )
    error = the_error_line(code, run.stderr)
    assert OVERWRITTEN in error, run.stderr[-3000:]
    assert "resume with" not in run.stderr
    (task,) = task_dirs(tmp_path)
    summary = summary_of(task)
    assert summary["stop_reason"] == "learner_error" and OVERWRITTEN in summary["error"]
    # The frame ring wrapped before the replay was full, and before the run's budget.
    buffer = summary["buffer"]
    assert buffer["frames"] == buffer["frame_capacity"] and buffer["size"] < buffer["capacity"]
    assert summary["env_steps"] < 8000
