"""A seeded on-policy run learns and is evaluated the same on Ray as in one process, a
policy with memory (an LSTM, on CartPole without its velocities) included.

On Ray, two workers' rollouts reach the DataServer in whatever order their pushes race;
it joins each iteration's rollouts in worker order, so a seeded PPO run takes the very
same gradient steps as with ``mp_backend: single`` and ends with the same parameters.
Its checkpoints come faster than the driver takes them (a few at a time); each is still
evaluated, with the same episodes, so the two backends report the same evaluations.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.runs import ROOT, run_main

COMMON = (
    "general_cfg.seed=1",
    "general_cfg.n_workers=2",
    "general_cfg.n_envs_per_worker=4",
    "algo_cfg.rollout_len=64",
    "general_cfg.max_env_steps=4096",  # 8 iterations of 2 x 4 x 64 env steps
    "general_cfg.reward_threshold=null",
    "general_cfg.model_save_fre=1",  # a checkpoint, and an evaluation, every update
    "general_cfg.save_fig=false",
    "general_cfg.progress=false",
)
#: case -> the run's arguments
RUNS = {
    "mlp": ("--yaml", str(ROOT / "configs" / "cartpole_ppo.yaml"), *COMMON),
    "lstm": (
        "--yaml",
        str(ROOT / "configs" / "cartpole_novel_ppo_lstm.yaml"),
        *COMMON,
        "algo_cfg.sequence_len=16",  # 4 sequences an env, each from its stored memory
        "algo_cfg.n_minibatches=2",
        "algo_cfg.n_epochs=4",
    ),
}


def final_summary(tasks: Path, case: str, backend: str) -> dict:
    done = run_main(
        *RUNS[case],
        f"general_cfg.mp_backend={backend}",
        f"general_cfg.tasks_dir={tasks}",
        timeout=180,
    )
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr}"
    (task,) = tasks.iterdir()
    return json.loads((task / "results" / "summary.json").read_text())


@pytest.mark.slow
@pytest.mark.timeout(420)  # measured 55 s (both runs) on 2 shared cores
@pytest.mark.parametrize("case", list(RUNS))
def test_seeded_ppo_on_ray_learns_and_is_evaluated_as_on_the_single_backend(
    tmp_path, case: str
) -> None:
    single = final_summary(tmp_path / "single", case, "single")
    ray = final_summary(tmp_path / "ray", case, "ray")
    assert single["updates"] == ray["updates"] >= 6, (single["updates"], ray["updates"])
    assert ray["learners"][0]["params_digest"] == single["learners"][0]["params_digest"]
    evaluated = [(e["updates"], e["env_steps"], e["return_mean"]) for e in ray["eval_history"]]
    expected = [(e["updates"], e["env_steps"], e["return_mean"]) for e in single["eval_history"]]
    assert evaluated == expected
    assert len(evaluated) >= 6 and ray["evals_skipped"] == 0
