"""Conv layers end to end: DQN and PPO take a few updates on 16x16 uint8 images."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from joyrl_ray.runner import run
from tests.conftest import make_cfg

CONV = [
    {"layer_type": "conv2d", "layer_dim": [8], "kernel_size": 3, "stride": 2, "activation": "relu"},
    {"layer_type": "linear", "layer_dim": [32], "activation": "relu"},
]
ENV = {"id": "envs.toy_image:ToyImageEnv", "wrappers": ["channels_first"]}
GENERAL = {
    "mp_backend": "single",
    "seed": 3,
    "n_workers": 1,
    "n_envs_per_worker": 2,
    "save_fig": False,
    "online_eval_episode": 2,
}
CASES = {
    "DQN": (
        {"max_env_steps": 400, "model_save_fre": 50},
        {"value_layers": CONV, "batch_size": 16, "learn_start": 64, "buffer_size": 1000},
    ),
    "PPO": (
        {"max_env_steps": 256, "model_save_fre": 2},
        {"actor_layers": CONV, "critic_layers": CONV, "rollout_len": 16, "n_epochs": 2},
    ),
}


@pytest.mark.parametrize("algo", sorted(CASES))
def test_conv_policy_updates_on_images(tmp_path: Path, algo: str) -> None:
    general, algo_cfg = CASES[algo]
    path = tmp_path / f"{algo}.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "general_cfg": {**GENERAL, **general, "algo_name": algo},
                "algo_cfg": algo_cfg,
                "env_cfg": ENV,
            }
        )
    )
    result = run(make_cfg(tmp_path, yaml_path=str(path)))
    summary = result.summary
    assert summary["stop_reason"] == "max_env_steps"
    assert summary["updates"] >= 2, summary
    assert summary["eval_history"], summary
    assert all(0 <= e["return_mean"] <= 8 for e in summary["eval_history"])
    assert (result.task_dir / "models" / "last.pt").is_file()
