"""A learner that Ray restarts carries on from its run's own last checkpoint."""

from __future__ import annotations

import json
import time
from pathlib import Path

from joyrl_ray.data_server import DataServer, StopRule
from joyrl_ray.handles import LocalHandle
from joyrl_ray.learner import Learner
from joyrl_ray.runner import run
from tests.conftest import make_cfg


def test_restarted_learner_resumes_from_its_last_checkpoint(tmp_path: Path) -> None:
    cfg = make_cfg(
        tmp_path,
        "general_cfg.mp_backend=single",
        "general_cfg.seed=4",
        "general_cfg.max_env_steps=1600",
        "general_cfg.model_save_fre=200",
        "general_cfg.online_eval=false",
        "algo_cfg.learn_start=500",
    )
    first = run(cfg)
    summary = json.loads((first.task_dir / "results" / "summary.json").read_text())
    assert summary["updates"] > 200

    # What Ray does on a restart: the same constructor arguments, in the same task directory.
    server = LocalHandle(DataServer(stop_rule=StopRule(), replay=None, n_workers=1))
    restarted = Learner(cfg, server, str(first.task_dir), started_at=time.time())
    assert restarted.updates == summary["updates"]
    assert restarted.counters["env_steps"] == summary["env_steps"]
    assert restarted.policy.optimizer.state_dict()["state"][0]["step"] == summary["updates"]
