"""The shipped env-family configs load, build their env and take their network's input."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from algos import get_algorithm
from algos.networks import build_network
from envs import probe_env
from joyrl_ray.config import RunConfig, load_config
from tests.support.runs import ROOT, needs_extra

ATARI = ("requirements-atari.txt", ("ale_py", "cv2"))
BOX2D = ("requirements-box2d.txt", ("Box2D",))
#: config -> the extra it needs (requirements file, modules it provides)
NEEDS = {
    "pong_dqn": ATARI,
    "breakout_ppo": ATARI,
    "lunarlander_dqn": BOX2D,
    "lunarlander_ppo": BOX2D,
}


@pytest.mark.parametrize("name", sorted(NEEDS))
def test_config_builds_env_and_network(name: str) -> None:
    requirements, modules = NEEDS[name]
    for module in modules:
        needs_extra(module, requirements)
    cfg = RunConfig.from_omegaconf(load_config(str(ROOT / "configs" / f"{name}.yaml"), []))
    obs_space, action_space = probe_env(cfg.env)
    layers = getattr(cfg.algo, "value_layers", None) or cfg.algo.actor_layers
    network = build_network(layers, obs_space.shape, int(action_space.n))
    batch = np.stack([obs_space.sample() for _ in range(2)])
    assert network(torch.as_tensor(batch)).shape == (2, action_space.n)
    if obs_space.dtype == np.uint8:  # frames travel as uint8; only the network scales them
        assert cfg.env.clip_rewards and obs_space.shape == (4, 84, 84)


def test_halfcheetah_config_builds_its_env_and_acts_within_the_action_bounds() -> None:
    needs_extra("mujoco", "requirements-mujoco.txt")
    cfg = RunConfig.from_omegaconf(load_config(str(ROOT / "configs" / "halfcheetah_ppo.yaml"), []))
    assert cfg.env.normalize_obs and cfg.env.normalize_reward  # RL Zoo's normalize: true
    obs_space, action_space = probe_env(cfg.env)
    assert obs_space.shape == (17,) and action_space.shape == (6,)
    spec = get_algorithm(cfg.general.algo_name)
    policy = spec.policy_cls(cfg.algo, obs_space, action_space, torch.device("cpu"))
    obs = np.stack([obs_space.sample() for _ in range(3)]).astype(np.float32)
    actions, _ = policy.act(obs, explore=True, env_steps=0)
    env_actions = policy.env_action(actions)
    assert env_actions.shape == (3, 6)
    assert np.all(env_actions >= action_space.low) and np.all(env_actions <= action_space.high)
