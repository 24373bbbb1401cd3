"""A policy with memory acts with it wherever it acts, through ``main.py``: trained on the
cue recall task (a GRU, ``configs/cue_recall_ppo_lstm.yaml``) with ``collect_traj``, its
checkpoint answers every cue in test mode (a policy that forgot between steps would score
0 on average) and in trajectory collection; trajectories stay plain transitions."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from joyrl_ray.run import trajectories
from tests.support.procs import task_dirs
from tests.support.runs import ROOT, run_main

RECALL = str(ROOT / "configs" / "cue_recall_ppo_lstm.yaml")
QUIET = ("general_cfg.progress=false", "general_cfg.save_fig=false")
DELAY = 5  # the yaml's: an episode is DELAY + 2 steps


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tasks = tmp_path_factory.mktemp("recall")
    done = run_main(
        "--yaml",
        RECALL,
        "general_cfg.mp_backend=single",
        "general_cfg.collect_traj=true",
        f"general_cfg.tasks_dir={tasks}",
        *QUIET,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (task,) = task_dirs(tasks)
    summary = json.loads((task / "results" / "summary.json").read_text())
    assert summary["stop_reason"] == "reward_threshold", summary["eval_history"]
    return task


@pytest.mark.slow
def test_trajectories_of_a_policy_with_memory_are_plain_transitions(trained: Path) -> None:
    episodes = trajectories.load(trained)
    assert len(episodes) > 100
    for episode in episodes:
        assert set(episode) == {"obs", "actions", "rewards", "terminated", "truncated", "next_obs"}
        assert len(episode["obs"]) == DELAY + 2 and episode["terminated"][-1]


@pytest.mark.slow
def test_test_mode_answers_every_cue_from_memory(trained: Path) -> None:
    done = run_main(
        "--yaml",
        str(trained / "config.yaml"),
        "general_cfg.mode=test",
        f"general_cfg.load_path={trained}",
        "general_cfg.max_episode=20",
        "general_cfg.collect_traj=true",
        *QUIET,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    test_dir = Path(done.stdout.strip().splitlines()[-1])
    summary = json.loads((test_dir / "results" / "summary.json").read_text())
    assert summary["episodes"] == 20 and summary["return_mean"] == 1.0, summary
    answers = [float(np.sum(t["rewards"])) for t in trajectories.load(test_dir)]
    assert answers == [1.0] * 20
