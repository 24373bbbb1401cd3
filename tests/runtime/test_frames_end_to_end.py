"""Stacked image frames through a real run: workers send each frame once, the replay keeps
frames and indices, ``save_buffer`` writes them, and a resume brings them back.

The env (``tests.support.frame_envs:CountingFramesEnv``) draws 6x6 uint8 frames and ends its
episodes after 5 steps, alternately terminated and truncated; with ``frame_stack: 4`` as
the last wrapper an observation is ``[4, 6, 6]``. Chunks of 7 steps make episodes cross
chunk boundaries, so the learner samples transitions whose frames came in different pushes
(a wrong index fails the sample: "refers to frames it never sent").

Both runs go through main.py's own entry in the test's process, on the test session's Ray
(``main_in_process``: the workers, the replay shard and the learner are real Ray actors),
which spares each a Ray start and stop of its own.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.support.cli_runs import assert_accounting, main_in_process, summary_of
from tests.support.procs import task_dirs

RUN_TIMEOUT_S = 240  # each run; measured 15-45 s as its own process on 2 shared cores
STACK, SIDE = 4, 6
CONV = (
    "algo_cfg.value_layers=[{layer_type: conv2d, layer_dim: [8], kernel_size: 3, stride: 1, "
    "activation: relu}, {layer_type: linear, layer_dim: [32], activation: relu}]"
)
FRAMES_RUN = (
    "env_cfg.id=tests.support.frame_envs:CountingFramesEnv",
    "env_cfg.kwargs={length: 5}",
    "env_cfg.wrappers=[frame_stack]",
    f"env_cfg.frame_stack={STACK}",
    CONV,
    "general_cfg.mp_backend=ray",
    "general_cfg.n_workers=2",
    "general_cfg.worker_chunk_steps=7",
    # More than one push in flight asked for: a worker that sends frames still has one at a
    # time (a shard takes calls on several threads and could store them out of order).
    "general_cfg.max_pushes_in_flight=4",
    "general_cfg.online_eval=false",
    "general_cfg.save_fig=false",
    "general_cfg.save_buffer=true",
    "general_cfg.model_save_fre=100",
    "general_cfg.seed=1",
    "general_cfg.progress=false",
    "algo_cfg.learn_start=100",
    "algo_cfg.batch_size=16",
    "algo_cfg.buffer_size=5000",
)


@pytest.mark.release
@pytest.mark.slow
@pytest.mark.timeout(2 * RUN_TIMEOUT_S + 60)
def test_stacked_frames_are_stored_once_saved_and_resumed(
    tmp_path: Path, ray_session, capsys
) -> None:
    first_dir = tmp_path / "first"
    code = main_in_process(
        (*FRAMES_RUN, "general_cfg.max_env_steps=600", f"general_cfg.tasks_dir={first_dir}")
    )
    assert code == 0, capsys.readouterr().err[-3000:]
    (task,) = task_dirs(first_dir)
    first = summary_of(task)
    assert first["updates"] > 100, first["updates"]  # the learner sampled stacks, many times
    buffer = first["buffer"]
    assert buffer["size"] == first["transitions_stored"] > 0
    # One new frame per step plus a whole stack per episode start (every 5 steps): far
    # below the 2 x 4 frames per transition of storing both stacks.
    assert buffer["size"] <= buffer["frames"] < 2 * buffer["size"], buffer
    assert buffer["frame_bytes"] == buffer["frames"] * SIDE * SIDE
    with np.load(task / "models" / "replay.npz") as saved:
        assert saved["frame_pixels"].shape == (buffer["frames"], SIDE, SIDE)
    assert_accounting(first)

    resumed_dir = tmp_path / "resumed"
    code = main_in_process(
        (
            *FRAMES_RUN,
            "general_cfg.max_env_steps=900",
            "general_cfg.load_checkpoint=true",
            f"general_cfg.load_path={task}",
            f"general_cfg.tasks_dir={resumed_dir}",
        )
    )
    assert code == 0, capsys.readouterr().err[-3000:]
    (resumed_task,) = task_dirs(resumed_dir)
    after = summary_of(resumed_task)
    assert after["resumed_from"] == str(task)
    assert after["updates"] > first["updates"]  # it learned on, sampling old and new frames
    # The saved transitions and their frames came back beside the new ones.
    assert after["buffer"]["size"] == first["buffer"]["size"] + after["transitions_stored"]
    assert after["buffer"]["frames"] > first["buffer"]["frames"]
    assert_accounting(after)
