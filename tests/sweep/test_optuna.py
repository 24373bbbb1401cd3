"""The Optuna searcher (``searcher: optuna``, an extra of requirements-tune.txt): a sweep
whose trials Optuna's TPE draws runs each trial as an ordinary run and writes a row per
trial and the best config, as a random search does. (That TPE steers after its first
random draws is Optuna's to show; this shows joyrl-ray hands it each trial's score.) This
sweep is the release tier's; each commit's is in ``test_sweep_resume.py``, two drawn
trials through a Ctrl-C and a resume."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.support.procs import TrackedRun
from tests.support.runs import needs_extra
from tests.support.sweeps import finished_sweep, sweep_args

OPTUNA_SWEEP = """\
space:
  algo_cfg.lr: {loguniform: [0.0001, 0.003]}
  algo_cfg.clip_eps: {choice: [0.1, 0.2, 0.3]}
searcher: optuna
num_samples: 3
max_concurrent_trials: 2
"""


@pytest.mark.release
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_an_optuna_sweep_runs_each_drawn_trial_and_writes_its_row_and_the_best_config(
    tmp_path: Path,
) -> None:
    needs_extra("optuna", "requirements-tune.txt")
    args = sweep_args(
        tmp_path, OPTUNA_SWEEP, "general_cfg.mp_backend=single", "general_cfg.max_env_steps=4096"
    )
    sweep_dir, rows = finished_sweep(tmp_path, TrackedRun(args, log_dir=tmp_path))
    assert len(rows) == 3, rows
    assert all(r["status"] == "finished" and r["best_eval_return"] for r in rows), rows
    assert_drawn_from_the_space_with_the_best_config(sweep_dir, rows)


def assert_drawn_from_the_space_with_the_best_config(
    sweep_dir: Path, rows: list[dict[str, str]]
) -> None:
    """Each row's values are of OPTUNA_SWEEP's space; ``best_config.yaml`` is the best row's."""
    drawn = [dict(kv.split("=") for kv in r["overrides"].split()) for r in rows]
    assert all(0.0001 <= float(d["algo_cfg.lr"]) <= 0.003 for d in drawn), drawn
    assert all(d["algo_cfg.clip_eps"] in {"0.1", "0.2", "0.3"} for d in drawn), drawn
    (best,) = [r for r in rows if r["best"] == "1"]
    assert float(best["best_eval_return"]) == max(float(r["best_eval_return"]) for r in rows)
    config = yaml.safe_load((sweep_dir / "best_config.yaml").read_text())
    best_lr = float(dict(kv.split("=") for kv in best["overrides"].split())["algo_cfg.lr"])
    assert config["algo_cfg"]["lr"] == pytest.approx(best_lr, rel=1e-5)
