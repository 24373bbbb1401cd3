"""Test mode through ``python main.py`` on checkpoints of the asynchronous on-policy flow (APPO)
and of a continuous off-policy algorithm (SAC): a short single-process training run (the
runner as main.py calls it, in the test's process), then ``python main.py
general_cfg.mode=test general_cfg.load_path=<its task directory>`` plays greedy episodes."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from tests.support.cli_runs import config_path, run_to_end, summary_of, train_in_process
from tests.support.procs import task_dirs

RUN_TIMEOUT_S = 120
TEST_EPISODES = 3
QUICK = (
    "general_cfg.mp_backend=single",
    "general_cfg.online_eval=false",  # no best.pt: test mode falls back to last.pt
)
TRAINING = {
    # config, overrides, returns a test episode can have
    "APPO": (
        "cartpole_appo",
        ("general_cfg.max_env_steps=2048", "algo_cfg.n_epochs=1"),
        (1.0, 500.0),
    ),
    "SAC": (
        "pendulum_sac",
        (
            "general_cfg.max_env_steps=400",
            "general_cfg.model_save_fre=100",
            "algo_cfg.learn_start=200",
            "algo_cfg.random_steps=200",
            "algo_cfg.batch_size=32",
        ),
        (-16.3 * 200, 0.0),  # Pendulum-v1: at most -16.3 a step, 200 steps
    ),
}


@pytest.mark.parametrize("algo", sorted(TRAINING))
@pytest.mark.timeout(2 * RUN_TIMEOUT_S + 60)
def test_test_mode_plays_episodes_from_a_checkpoint_and_writes_their_returns(
    algo: str, tmp_path: Path
) -> None:
    config, overrides, (lowest, highest) = TRAINING[algo]
    trained = train_in_process(tmp_path, config, (*QUICK, *overrides), threshold=None)
    assert trained["updates"] > 0
    (train_dir,) = task_dirs(tmp_path)

    run, code = run_to_end(
        (
            "--yaml",
            config_path(config),
            "general_cfg.mode=test",
            f"general_cfg.load_path={train_dir.name}",
            f"general_cfg.tasks_dir={tmp_path}",
            f"general_cfg.max_episode={TEST_EPISODES}",
            "general_cfg.mp_backend=single",
            "general_cfg.progress=false",
            "general_cfg.save_fig=false",
        ),
        tmp_path,
        RUN_TIMEOUT_S,
    )
    assert code == 0, f"exit {code}\n{run.stderr[-3000:]}"
    test_dir = Path(run.stdout.strip().splitlines()[-1])
    assert test_dir.parent == tmp_path and test_dir.name.startswith(f"Test_{trained['env_id']}")
    summary = summary_of(test_dir)
    assert (summary["mode"], summary["algo"]) == ("test", algo)
    assert summary["stop_reason"] == "max_episode" and summary["episodes"] == TEST_EPISODES
    assert summary["updates"] == 0
    assert Path(summary["loaded_checkpoint"]) == train_dir / "models" / "last.pt"
    with (test_dir / "results" / "episodes.csv").open() as f:
        returns = [float(row["return"]) for row in csv.DictReader(f)]
    assert len(returns) == TEST_EPISODES
    assert all(lowest <= r <= highest for r in returns), returns
    assert summary["return_mean"] == pytest.approx(np.mean(returns))
    assert (summary["return_min"], summary["return_max"]) == (min(returns), max(returns))
