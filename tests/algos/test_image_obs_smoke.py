"""Conv layers end to end: DQN and PPO learn to read 16x16 uint8 images.

Why: ToyImageEnv pays 1 for naming the lit half of the picture, so every policy returns
between 0 and 8 and a blind one (constant or random guesses) about 4. A run that only
checks that updates happen passes with a broken conv path; this one must beat a random
policy, measured here on the same env, by a clear margin, which needs the pixels to
reach the Q-values / logits. A few seconds each on the single backend.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from envs.toy_image import ToyImageEnv
from joyrl_ray.run.runner import run
from tests.support.runs import make_cfg

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
    "online_eval_episode": 10,
    "reward_threshold": 7.5,  # stop at the first eval that reads nearly every image right
}
CASES = {
    # Seed 3 reaches 8.0 at the first eval (768 env steps) for DQN and 7.7 at 256 for PPO.
    "DQN": (
        {"max_env_steps": 2000, "model_save_fre": 250},
        {"value_layers": CONV, "batch_size": 32, "learn_start": 200, "buffer_size": 5000}
        | {"epsilon_decay": 1000, "target_update": 50},
    ),
    "PPO": (
        {"max_env_steps": 1536, "model_save_fre": 4},
        {"actor_layers": CONV, "critic_layers": CONV, "rollout_len": 16, "n_epochs": 4},
    ),
}
MARGIN = 2.5  # over the random policy's ~4 of 8; a blind greedy policy's eval stays near 4


def random_policy_return(episodes: int = 200, seed: int = 0) -> float:
    """Mean return of uniform random guesses on ToyImageEnv."""
    env = ToyImageEnv()
    env.action_space.seed(seed)
    env.reset(seed=seed)
    returns = []
    for _ in range(episodes):
        env.reset()
        total, done = 0.0, False
        while not done:
            _, reward, terminated, truncated, _ = env.step(env.action_space.sample())
            total += reward
            done = terminated or truncated
        returns.append(total)
    return float(np.mean(returns))


@pytest.mark.parametrize("algo", sorted(CASES))
def test_conv_policy_beats_random_on_images(tmp_path: Path, algo: str) -> None:
    random_return = random_policy_return()
    assert 3.5 <= random_return <= 4.5, random_return  # the env pays 1 per right guess of 8

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
    evals = [e["return_mean"] for e in summary["eval_history"]]
    assert evals, summary
    assert max(evals) >= random_return + MARGIN, (random_return, evals)
    assert (result.task_dir / "models" / "last.pt").is_file()
