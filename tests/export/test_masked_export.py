"""A policy whose observations hold an action mask is refused by export in one line: an
exported graph would not apply the mask and could choose illegal actions."""

from __future__ import annotations

import gymnasium as gym
import pytest
import torch

from algos import get_algorithm
from algos.export import NotExportable
from algos.layers import LayerConfig
from tests.algos.mask_support import masked_space

LAYERS = {
    "DQN": {"value_layers": [LayerConfig("linear", [8], "relu")]},
    "PPO": {"actor_layers": [LayerConfig("linear", [8], "tanh")]},
    "R2D2": {"value_layers": [LayerConfig("gru", [8], "none")]},
}


@pytest.mark.parametrize("name", list(LAYERS))
def test_a_masked_policy_is_not_exported(name: str) -> None:
    spec = get_algorithm(name)
    cfg = spec.config_cls(**LAYERS[name])
    policy = spec.policy_cls(cfg, masked_space(3), gym.spaces.Discrete(3), torch.device("cpu"))
    with pytest.raises(NotExportable, match="action mask") as info:
        policy.acting_graph()
    assert "\n" not in str(info.value)
