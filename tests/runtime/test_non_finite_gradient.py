"""A learner whose gradient turns nan stops the run, naming it, before the weights take it.

One nan gradient step makes every weight nan; a run that went on would act at random,
evaluate, and save those weights over the last good ones for the rest of its budget. The
env here pays finite rewards, then nan ones: PPO's loss and gradient turn nan at once.

The runs go through main.py's own entry (its error line, its exit code) in the test's
process: on the test session's Ray, or in this process (``mp_backend=single``); nothing of
them is killed (``main_in_process``).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from tests.support.cli_runs import config_path, main_in_process
from tests.support.watch import the_error_line


@pytest.mark.parametrize("backend", ["single", "ray"])
@pytest.mark.timeout(240)
def test_a_nan_gradient_stops_the_run_naming_it_and_the_saved_weights_stay_finite(
    tmp_path, backend, ray_session, capsys
):
    code = main_in_process(
        (
            "--yaml",
            config_path("cartpole_ppo"),
            f"general_cfg.mp_backend={backend}",
            "general_cfg.n_workers=1",
            "env_cfg.id=tests.support.diverging_env:NanRewardEnv",
            "algo_cfg.rollout_len=128",
            "general_cfg.max_env_steps=20000",
            "general_cfg.model_save_fre=1",
            "general_cfg.online_eval=false",
            "general_cfg.seed=1",
            "general_cfg.progress=false",
            f"general_cfg.tasks_dir={tmp_path}",
        )
    )
    error = the_error_line(code, capsys.readouterr().err)
    assert "gradient is not finite" in error, error
    (task,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    summary = json.loads((task / "results" / "summary.json").read_text())
    assert summary["stop_reason"] == "learner_error"
    assert summary["env_steps"] < 20000  # it stopped there, not at the step limit
    checkpoints = sorted((task / "models").rglob("*.pt"))
    assert checkpoints, list((task / "models").rglob("*"))
    for path in checkpoints:
        state = torch.load(path, map_location="cpu", weights_only=False)
        for name, value in _tensors(state):
            assert np.isfinite(value).all(), f"{path.name}: {name} is not finite"


def _tensors(state, prefix=""):
    """Every float tensor in a checkpoint's nested state, with its key path."""
    if isinstance(state, torch.Tensor):
        if state.is_floating_point():
            yield prefix, state.numpy()
    elif isinstance(state, dict):
        for key, value in state.items():
            yield from _tensors(value, f"{prefix}/{key}")
    elif isinstance(state, (list, tuple)):
        for i, value in enumerate(state):
            yield from _tensors(value, f"{prefix}/{i}")
