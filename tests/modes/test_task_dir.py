"""A run writes the task directory a user expects, and main.py prints its path last."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from tests.support.runs import run_main


def test_single_process_run_writes_the_task_directory(tmp_path: Path) -> None:
    result = run_main(
        "general_cfg.mp_backend=single",
        "general_cfg.max_env_steps=1500",
        "general_cfg.model_save_fre=200",
        "general_cfg.online_eval_episode=2",
        "general_cfg.seed=3",
        "general_cfg.progress=false",
        "algo_cfg.learn_start=500",
        f"general_cfg.tasks_dir={tmp_path}",
    )
    assert result.returncode == 0, result.stderr
    task = Path(result.stdout.strip().splitlines()[-1])
    assert task.parent == tmp_path and task.name.startswith("Train_CartPole-v1_DQN_")

    config = yaml.safe_load((task / "config.yaml").read_text())
    assert config["general_cfg"]["seed"] == 3 and config["algo_cfg"]["learn_start"] == 500

    models = {p.name for p in (task / "models").iterdir()}
    assert {"last.pt", "best.pt", "200.pt"} <= models

    summary = json.loads((task / "results" / "summary.json").read_text())
    for key in ("mode", "algo", "env_id", "env_steps", "episodes", "updates", "wall_time_s"):
        assert key in summary
    assert summary["mode"] == "train" and summary["env_steps"] >= 1500
    assert summary["stop_reason"] == "max_env_steps"
    evals = summary["eval_history"]
    assert evals and set(evals[0]) >= {
        "env_steps",
        "updates",
        "wall_time_s",
        "return_mean",
        "return_std",
    }
    assert [e["updates"] for e in evals] == sorted(e["updates"] for e in evals)
    # One process: no Ray and no role process of its own; the roles' moments in order.
    parts = summary["time_s"]["startup_parts"]
    assert parts["ray_ready"] is None and parts["processes_started"] is None, parts
    moments = [parts[k] for k in ("roles_requested", "roles_imported", "roles_ready")]
    assert None not in moments and moments == sorted(moments), parts
    assert moments[-1] <= parts["first_env_step"] == summary["time_s"]["startup"], parts
    assert summary["time_s"]["teardown_parts"]["ray_stopped"] is None
    assert summary["time_s"]["teardown_parts"]["roles_ended"] >= 0

    episodes = (task / "results" / "episodes.csv").read_text().strip().splitlines()
    assert episodes[0].startswith("episode,env_steps,return")
    assert len(episodes) - 1 == summary["episodes"]
    assert (task / "logs" / "log.txt").is_file()
    assert list((task / "logs").glob("events.out.tfevents.*"))
    assert (task / "figs" / "rewards.png").is_file()
