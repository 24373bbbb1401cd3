"""A frame-stacked run's trajectories exported to Minari: ``python main.py`` with
``collect_traj``, then ``python -m joyrl_ray.export_minari``, then ``minari.load_dataset``.

The env (``tests.support.frame_envs:CountingFramesEnv``) draws 6x6 uint8 frames whose pixel
(0, 1) is the step within the episode, and ends its episodes after 5 steps; with
``frame_stack: 4`` an observation is ``[4, 6, 6]``, the oldest frame first.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from joyrl_ray.run import trajectories
from tests.support.cli_runs import train
from tests.support.procs import main_env, task_dirs
from tests.support.runs import ROOT, needs_extra

RUN_TIMEOUT_S = 120
STACK, SIDE, LENGTH = 4, 6, 5
FRAMES_RUN = (
    "env_cfg.id=tests.support.frame_envs:CountingFramesEnv",
    f"env_cfg.kwargs={{length: {LENGTH}}}",
    "env_cfg.wrappers=[frame_stack]",
    f"env_cfg.frame_stack={STACK}",
    "algo_cfg.value_layers=[{layer_type: linear, layer_dim: [16], activation: relu}]",
    "general_cfg.mp_backend=single",
    "general_cfg.online_eval=false",
    "general_cfg.collect_traj=true",
    "general_cfg.max_env_steps=300",
    "algo_cfg.learn_start=100",
    "algo_cfg.batch_size=16",
)


@pytest.mark.timeout(RUN_TIMEOUT_S + 120)
def test_a_frame_stacked_run_exports_to_minari_with_stacked_observations(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    minari = needs_extra("minari", "requirements-minari.txt")
    needs_extra("h5py", "requirements-minari.txt")
    tasks, datasets = tmp_path / "tasks", tmp_path / "datasets"
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(datasets))  # where load_dataset looks
    train(tasks, "cartpole_dqn", FRAMES_RUN, threshold=None, timeout=RUN_TIMEOUT_S)
    (task,) = task_dirs(tasks)

    export = subprocess.run(
        [sys.executable, "-m", "joyrl_ray.export_minari", str(task), "joyrl/frames-dqn-v0"],
        cwd=ROOT,
        env=main_env(MINARI_DATASETS_PATH=str(datasets)),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert export.returncode == 0 and not export.stderr.strip(), export.stderr[-3000:]
    trajs = trajectories.load(task)
    assert export.stdout.strip() == (
        f"wrote Minari dataset joyrl/frames-dqn-v0: {len(trajs)} episodes, "
        f"{sum(len(t['obs']) for t in trajs)} steps"
    )

    dataset = minari.load_dataset("joyrl/frames-dqn-v0", download=False)
    assert dataset.observation_space.shape == (STACK, SIDE, SIDE)
    assert dataset.observation_space.dtype == np.uint8
    assert dataset.total_episodes == len(trajs)
    for episode, traj in zip(dataset.iterate_episodes(), trajs, strict=True):
        observations = episode.observations
        assert observations.shape == (LENGTH + 1, STACK, SIDE, SIDE)
        assert observations.dtype == np.uint8
        np.testing.assert_array_equal(observations[:-1], traj["obs"])
        np.testing.assert_array_equal(observations[-1], traj["next_obs"][-1])
        # Each stack is the previous one shifted by a frame: the newest frame counts the steps.
        np.testing.assert_array_equal(observations[1:, :-1], observations[:-1, 1:])
        assert observations[:, -1, 0, 1].tolist() == list(range(LENGTH + 1))
