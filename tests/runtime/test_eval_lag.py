"""Evaluations slower than the checkpoints they evaluate: the oldest queued ones are skipped,
counted, and the first skip is said on the console.

The online evaluator runs beside learning and keeps a short queue of checkpoints; when
evaluating takes longer than learning from one checkpoint to the next, the queue overflows
and its oldest checkpoint goes unevaluated. A user must hear it: such a run may learn on past
the checkpoint that solved it, and its best model is chosen among fewer checkpoints.

Every env step here also sleeps 2 ms (the step_latency wrapper, in the evaluator's envs as
in the worker's): an evaluation of 30 episodes then takes at least half a second, several
times the 16 env steps and one small update between two checkpoints, however fast the
machine (unpaced, on an idle machine, the evaluations of the untrained policy's short
episodes kept up, and nothing was skipped).

The run goes through main.py's own entry in the test's process (``main_in_process``: its
console lines are the test's to read), on the test session's Ray: nothing of it is killed.
"""

from __future__ import annotations

import json

import pytest

from tests.support.cli_runs import config_path, main_in_process, step_latency


@pytest.mark.release
@pytest.mark.timeout(240)
def test_evaluations_slower_than_checkpoints_are_skipped_counted_and_said_once(
    tmp_path, ray_session, capsys
):
    code = main_in_process(
        (
            "--yaml",
            config_path("cartpole_ppo"),
            "general_cfg.n_workers=1",
            "general_cfg.n_envs_per_worker=1",
            "algo_cfg.rollout_len=16",
            "algo_cfg.n_epochs=1",
            "algo_cfg.n_minibatches=1",
            "general_cfg.model_save_fre=1",  # a checkpoint every 16 env steps
            "general_cfg.online_eval_episode=30",  # each evaluation: 30 episodes of 9-70 steps
            *step_latency(0.002),
            "general_cfg.max_env_steps=1000",
            "general_cfg.seed=1",
            "general_cfg.progress=false",
            f"general_cfg.tasks_dir={tmp_path}",
        )
    )
    out, err = capsys.readouterr()
    assert code == 0, err[-2000:]
    (task,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    summary = json.loads((task / "results" / "summary.json").read_text())
    assert summary["evals_skipped"] > 0, summary
    warnings = [
        line
        for line in out.splitlines()
        if line.startswith("warning: the evaluation of the checkpoint at")
    ]
    assert len(warnings) == 1, out[-3000:]
    assert "model_save_fre" in warnings[0] and "online_eval_episode" in warnings[0]
    log = (task / "logs" / "log.txt").read_text()
    assert log.count("was skipped: evaluating 30 episodes") >= summary["evals_skipped"] - 4
