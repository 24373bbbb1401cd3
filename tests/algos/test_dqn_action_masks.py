"""DQN, DoubleDQN and DuelingDQN keep to the legal actions of masked observations: the
greedy action, every exploration draw, and the TD target's max over next actions, which
must not be lifted by an illegal action however large its Q value."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

from algos import get_algorithm
from algos.dqn.policy import DQN, DuelingQNetwork
from algos.layers import LayerConfig
from joyrl_ray.batch import ACTIONS, DISCOUNTS, NEXT_OBS, OBS, REWARDS, WEIGHTS
from tests.algos.mask_support import masked_space, packed, random_masks

CPU = torch.device("cpu")
N = 6
VARIANTS = ["DQN", "DoubleDQN", "DuelingDQN"]


def make_dqn(name: str, **cfg: object) -> DQN:
    """No hidden layer (the dueling net: one, its trunk); ``lr=0`` keeps the nets fixed."""
    torch.manual_seed(0)
    spec = get_algorithm(name)
    layers = [LayerConfig("linear", [8], "relu")] if name == "DuelingDQN" else []
    settings = {"value_layers": layers, "lr": 0.0, "max_grad_norm": None, **cfg}
    algo = spec.algorithm_cls(
        spec.config_cls(**settings), masked_space(N), gym.spaces.Discrete(N), CPU
    )
    assert isinstance(algo, DQN)
    algo.policy.seed(0)
    return algo


def masked_obs(rng: np.random.Generator, rows: int) -> tuple[np.ndarray, np.ndarray]:
    masks = random_masks(rng, (rows,), N)
    return packed(masked_space(N), rng.normal(size=(rows, 2)).astype(np.float32), masks), masks


@pytest.mark.parametrize("name", VARIANTS)
def test_greedy_and_exploring_actions_are_always_legal_over_many_random_masks(name: str) -> None:
    algo = make_dqn(name, epsilon_start=0.5, epsilon_end=0.5)
    rng = np.random.default_rng(1)
    for _ in range(50):
        obs, masks = masked_obs(rng, 64)
        for explore in (False, True):
            actions, _ = algo.policy.act(obs, explore=explore, env_steps=0)
            assert masks[np.arange(64), actions].all(), (explore, actions, masks)


def test_exploration_draws_every_legal_action_and_only_those() -> None:
    algo = make_dqn("DQN", epsilon_start=1.0, epsilon_end=1.0)
    rng = np.random.default_rng(2)
    mask = np.array([[0, 1, 0, 1, 1, 0]], np.int8).repeat(3000, axis=0)
    obs = packed(masked_space(N), rng.normal(size=(3000, 2)).astype(np.float32), mask)
    actions, _ = algo.policy.act(obs, explore=True, env_steps=0)
    counts = np.bincount(actions, minlength=N)
    assert counts[[0, 2, 5]].sum() == 0
    assert np.all(np.abs(counts[[1, 3, 4]] / 3000 - 1 / 3) < 0.05), counts


def test_the_greedy_action_is_the_best_legal_one_even_when_an_illegal_one_is_best() -> None:
    algo = make_dqn("DQN")
    set_q(algo.policy.q_net, [100.0, 5.0, 4.0, 3.0, 2.0, 1.0])  # 0 best, then 1, 2, ...
    mask = np.array([[0, 0, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1], [0, 0, 0, 0, 0, 0]], np.int8)
    obs = packed(masked_space(N), np.zeros((3, 2), np.float32), mask)
    actions, _ = algo.policy.act(obs, explore=False, env_steps=0)
    assert actions.tolist() == [2, 0, 0]  # a row of zeros: no legal action known, all legal


def set_q(net: torch.nn.Module, bias: list[float]) -> None:
    """A Q net (no hidden layer) whose values are ``bias`` whatever the observation."""
    values = torch.tensor(bias)
    with torch.no_grad():
        for layer in net.modules():
            if isinstance(layer, torch.nn.Linear):
                layer.weight.zero_()
                layer.bias.zero_()
        if isinstance(net, DuelingQNetwork):  # value + advantage - mean(advantage)
            net.advantage.bias.copy_(values - values.mean())
            net.value.bias.fill_(float(values.mean()))
        else:
            (head,) = [m for m in net.modules() if isinstance(m, torch.nn.Linear)]
            head.bias.copy_(values)


@pytest.mark.parametrize("name", VARIANTS)
def test_the_td_target_ignores_an_illegal_next_action_with_a_huge_q(name: str) -> None:
    algo = make_dqn(name, loss="mse")
    q = [1e6, 2.0, 3.0, 1.0, 0.5, 0.0]  # action 0 huge, illegal in every next observation
    for net in (algo.policy.q_net, algo.target_net):
        set_q(net, q)
    rng = np.random.default_rng(3)
    rows = 8
    next_masks = random_masks(rng, (rows,), N)
    next_masks[:, 0] = 0
    next_masks[0] = [0, 0, 0, 1, 1, 0]  # best legal: 3 (Q 1.0)
    features = rng.normal(size=(rows, 2)).astype(np.float32)
    batch = {
        OBS: packed(masked_space(N), features, random_masks(rng, (rows,), N)),
        ACTIONS: np.full(rows, 5),  # Q 0
        REWARDS: np.zeros(rows, np.float32),
        NEXT_OBS: packed(masked_space(N), features, next_masks),
        DISCOUNTS: np.ones(rows, np.float32),
        WEIGHTS: np.ones(rows, np.float32),
    }
    result = algo.learn(batch)
    assert result.priorities is not None
    best_legal = np.where(next_masks.astype(bool), np.array(q)[None], -np.inf).max(axis=1)
    # |q - y| = |0 - (0 + 1 * max over legal next actions)|
    np.testing.assert_allclose(result.priorities, best_legal, rtol=1e-5)
    assert result.priorities[0] == pytest.approx(1.0)
