"""Evaluations slower than the checkpoints they evaluate: the oldest queued ones are skipped,
counted, and the first skip is said on the console.

The online evaluator runs beside learning and keeps a short queue of checkpoints; when
evaluating takes longer than learning from one checkpoint to the next, the queue overflows
and its oldest checkpoint goes unevaluated. A user must hear it: such a run may learn on past
the checkpoint that solved it, and its best model is chosen among fewer checkpoints.
"""

from __future__ import annotations

import json

import pytest

from tests.support.runs import run_main


@pytest.mark.timeout(240)
def test_evaluations_slower_than_checkpoints_are_skipped_counted_and_said_once(tmp_path):
    done = run_main(
        "--yaml",
        "configs/cartpole_ppo.yaml",
        "general_cfg.n_workers=1",
        "general_cfg.n_envs_per_worker=1",
        "algo_cfg.rollout_len=16",
        "algo_cfg.n_epochs=1",
        "algo_cfg.n_minibatches=1",
        "general_cfg.model_save_fre=1",  # a checkpoint every 16 env steps
        "general_cfg.online_eval_episode=30",  # each evaluation: ~30 episodes of ~20 steps
        "general_cfg.max_env_steps=1000",
        "general_cfg.seed=1",
        "general_cfg.progress=false",
        f"general_cfg.tasks_dir={tmp_path}",
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (task,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    summary = json.loads((task / "results" / "summary.json").read_text())
    assert summary["evals_skipped"] > 0, summary
    warnings = [
        line
        for line in done.stdout.splitlines()
        if line.startswith("warning: the evaluation of the checkpoint at")
    ]
    assert len(warnings) == 1, done.stdout[-3000:]
    assert "model_save_fre" in warnings[0] and "online_eval_episode" in warnings[0]
    log = (task / "logs" / "log.txt").read_text()
    assert log.count("was skipped: evaluating 30 episodes") >= summary["evals_skipped"] - 4
