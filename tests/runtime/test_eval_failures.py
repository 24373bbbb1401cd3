"""An online evaluation that fails is logged, and the run goes on to its end.

On Ray the evaluator is a thread of the driver's process: an error there must neither
end the run nor go unnoticed. The env used raises on every step outside the run's
Worker actors, so on Ray only the evaluations fail, for real, while training goes on.
"""

from __future__ import annotations

import json

import pytest

from joyrl_ray.run.runner import run
from tests.support.runs import ROOT, make_cfg


@pytest.mark.timeout(600)
def test_a_failing_evaluation_is_logged_and_the_ray_run_finishes(
    ray_session, tmp_path, capsys
) -> None:
    # The runner as main.py calls it, on the session's Ray: this process is the driver, so
    # the evaluator is a thread of this process here.
    done = run(
        make_cfg(
            tmp_path,
            "env_cfg.id=tests.support.faulty_envs:EvalBrokenEnv",
            "general_cfg.seed=1",
            "general_cfg.max_env_steps=6144",  # 5 updates or more
            "general_cfg.model_save_fre=1",  # a checkpoint, and an evaluation, every update
            "general_cfg.reward_threshold=null",
            "general_cfg.save_fig=false",
            yaml_path=str(ROOT / "configs" / "cartpole_ppo.yaml"),
        )
    )
    assert done.exit_code == 0, done.summary
    (task,) = tmp_path.iterdir()
    summary = json.loads((task / "results" / "summary.json").read_text())
    assert summary["stop_reason"] == "max_env_steps" and summary["updates"] >= 5
    assert summary["eval_history"] == []
    log = (task / "logs" / "log.txt").read_text()
    failures = [line for line in log.splitlines() if "evaluation at" in line and "failed" in line]
    assert len(failures) >= 5, log
    assert "evaluation simulator crashed: segment 9 out of bounds" in failures[0]
    # Each evaluation replaced its failed episodes until its error budget ran out: one error
    # more than its 10 episodes. Every error is counted in the summary.
    over_budget = [line for line in failures if "failed: 11 env errors, more than the 10 " in line]
    assert len(over_budget) >= 5, failures
    assert summary["evals_failed"] == len(failures)
    # The first failure is on the console too, once.
    warnings = [line for line in capsys.readouterr().out.splitlines() if "failed" in line]
    assert len(warnings) == 1 and warnings[0].startswith("warning: evaluation at "), warnings
    assert summary["eval_env_errors"] == 11 * len(over_budget)


@pytest.mark.timeout(600)
def test_an_evaluation_whose_env_hangs_fails_after_eval_timeout_s_and_the_next_ones_run(
    ray_session, tmp_path, capsys
) -> None:
    claim = tmp_path / "claim"
    done = run(
        make_cfg(
            tmp_path,
            "env_cfg.id=tests.support.faulty_envs:EvalHangsOnceEnv",
            f"env_cfg.kwargs={{hang_after: 100, claim: {claim}}}",
            "general_cfg.max_step=500",  # CartPole's time limit (a class by path has none)
            "general_cfg.seed=1",
            "general_cfg.max_env_steps=20000",
            "general_cfg.model_save_fre=1",  # a checkpoint, and an evaluation, every update
            "general_cfg.reward_threshold=null",
            "general_cfg.eval_timeout_s=5",
            "general_cfg.save_fig=false",
            yaml_path=str(ROOT / "configs" / "cartpole_ppo.yaml"),
        )
    )
    assert done.exit_code == 0, done.summary
    assert claim.is_file()  # an evaluator's env hung
    (task,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    summary = json.loads((task / "results" / "summary.json").read_text())
    assert summary["stop_reason"] == "max_env_steps"
    assert summary["evals_failed"] == 1
    log = (task / "logs" / "log.txt").read_text()
    (failed,) = [line for line in log.splitlines() if "evaluation at" in line and "failed" in line]
    assert "ran past general_cfg.eval_timeout_s=5 s" in failed, failed
    # The evaluations after the stuck one ran, on a new evaluator.
    failed_at = int(failed.split("evaluation at ")[1].split()[0])
    assert any(e["updates"] > failed_at for e in summary["eval_history"]), summary["eval_history"]
    out = capsys.readouterr().out
    assert "warning: evaluation at " in out and "eval_timeout_s=5 s" in out
