"""A run that stops while online evaluations are queued or running exits with its own code.

PPO on CartPole with 2 ms per step, 2 workers x 4 envs, a checkpoint every iteration: its
evaluations (10 episodes on the slow env) fall behind the checkpoints, so when one reaches
the threshold others are still queued and one is running. The driver does not wait for
them; the evaluator thread must still be stopped before the interpreter exits (a torch
forward on a daemon thread during exit aborted the process with SIGABRT, exit 134, after
the summary was written).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli_runs import step_latency
from tests.support.runs import ROOT, run_main


@pytest.mark.release
@pytest.mark.timeout(300)  # measured 72 s on 2 shared cores
def test_run_stopping_with_evaluations_queued_exits_with_its_own_code(tmp_path: Path) -> None:
    done = run_main(
        "--yaml",
        str(ROOT / "configs" / "cartpole_ppo.yaml"),
        "general_cfg.seed=1",
        "general_cfg.n_workers=2",
        "general_cfg.n_envs_per_worker=4",
        "general_cfg.ray_num_cpus=2",
        "general_cfg.model_save_fre=1",
        "general_cfg.reward_threshold=100",
        "general_cfg.max_env_steps=60000",
        "general_cfg.progress=false",
        "general_cfg.save_fig=false",
        f"general_cfg.tasks_dir={tmp_path}",
        *step_latency(0.002),
        timeout=240,
    )
    (task,) = tmp_path.iterdir()
    log = (task / "logs" / "log.txt").read_text()
    assert "evaluation(s) still running or queued: not waited for" in log, log[-2000:]
    assert done.returncode == 0, (done.returncode, done.stderr[-3000:])
    summary = json.loads((task / "results" / "summary.json").read_text())
    assert summary["stop_reason"] == "reward_threshold"
    # Its workers spent their time stepping a slow env one env after another.
    assert "env_cfg.vector_mode: async steps each worker's 4 envs" in summary["bottleneck_line"]
