"""DiscreteCQL: its loss against a hand-computed figure, DQN's exactly when ``cql_alpha=0``,
and learning from a mixed CartPole dataset in one process (no runtime, no Ray) past both
the dataset's own return and behaviour cloning's on the same data.

The nets of the loss check are linear with hand-set weights and ``lr=0``; every check goes
through ``learn()``'s metrics and priorities, so they hold however ``learn()`` is arranged.
"""

from __future__ import annotations

import math
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch import nn

from algos import get_algorithm
from algos.discrete_cql.policy import DiscreteCQL
from algos.dqn.policy import DQN
from algos.layers import LayerConfig
from tests.support.cartpole_data import (
    MIXED_RATES,
    cartpole_episodes,
    episode_returns,
    greedy_returns,
    learn_offline,
)

CPU = torch.device("cpu")
OBS = gym.spaces.Box(-10.0, 10.0, (2,), np.float32)
CARTPOLE_OBS = gym.spaces.Box(-np.inf, np.inf, (4,), np.float32)


def build(name: str, action_space: gym.Space = gym.spaces.Discrete(3), **cfg: Any) -> DQN:
    """``name``'s algorithm with a Q-net of no hidden layer unless ``value_layers``; ``lr=0``
    keeps the nets where a test puts them; no gradient clipping."""
    spec = get_algorithm(name)
    settings = {"value_layers": [], "lr": 0.0, "max_grad_norm": None, **cfg}
    algo = spec.algorithm_cls(spec.config_cls(**settings), OBS, action_space, CPU)
    assert isinstance(algo, DQN)
    return algo


def set_net(net: nn.Module, weight: list[list[float]], bias: list[float]) -> None:
    (layer,) = [m for m in net.modules() if isinstance(m, nn.Linear)]
    with torch.no_grad():
        layer.weight.copy_(torch.tensor(weight))
        layer.bias.copy_(torch.tensor(bias))


def test_loss_is_the_td_loss_plus_alpha_times_logsumexp_minus_the_data_actions_q() -> None:
    algo = build("DiscreteCQL", cql_alpha=0.5)
    assert isinstance(algo, DiscreteCQL)
    # Q(s) = W s + b: s1 = [1, 0] gives [1, 0, 0.5] (took 0: q = 1); s2 = [0, 1] gives
    # [0, 2, 0.5] (took 2: q = 0.5). The target net values every s' at [1, 3, 2]: max 3.
    set_net(algo.policy.q_net, [[1, 0], [0, 2], [0, 0]], [0, 0, 0.5])
    set_net(algo.target_net, [[0, 0], [0, 0], [0, 0]], [1, 3, 2])
    batch = {
        "obs": np.array([[1, 0], [0, 1]], np.float32),
        "actions": np.array([0, 2]),
        "rewards": np.array([0.8, -1.0], np.float32),
        "next_obs": np.zeros((2, 2), np.float32),
        "discounts": np.array([0.5, 0.0], np.float32),  # the second row ended
        "weights": np.ones(2, np.float32),
    }
    result = algo.learn(batch)
    # y = [0.8 + 0.5 * 3, -1] = [2.3, -1]; TD errors [-1.3, 1.5]; huber [0.8, 1.0].
    td_loss = (0.8 + 1.0) / 2
    gap_1 = math.log(math.exp(1) + 1 + math.exp(0.5)) - 1.0
    gap_2 = math.log(1 + math.exp(2) + math.exp(0.5)) - 0.5
    cql_loss = (gap_1 + gap_2) / 2
    assert result.metrics["td_loss"] == pytest.approx(td_loss, rel=1e-6)
    assert result.metrics["cql_loss"] == pytest.approx(cql_loss, rel=1e-6)
    assert result.metrics["loss"] == pytest.approx(td_loss + 0.5 * cql_loss, rel=1e-6)
    np.testing.assert_allclose(result.priorities, [1.3, 1.5], rtol=1e-6)


@pytest.mark.parametrize(
    "variant",
    [{}, {"double_q": True}, {"dueling": True, "value_layers": [LayerConfig("linear", [8])]}],
    ids=["dqn", "double", "dueling"],
)
def test_cql_alpha_zero_learns_exactly_as_dqn(variant: dict[str, Any]) -> None:
    """Five updates from the same weights on the same batches: the same loss, priorities
    and weights after each (the target net syncing every second update)."""
    settings = {"lr": 0.01, "target_update": 2, "loss": "huber", "max_grad_norm": 10.0}
    torch.manual_seed(0)
    dqn = build("DQN", **settings, **variant)
    torch.manual_seed(0)
    cql = build("DiscreteCQL", cql_alpha=0.0, **settings, **variant)
    rng = np.random.default_rng(0)
    for _ in range(5):
        batch = {
            "obs": rng.normal(size=(16, 2)).astype(np.float32),
            "actions": rng.integers(0, 3, 16),
            "rewards": rng.normal(size=16).astype(np.float32),
            "next_obs": rng.normal(size=(16, 2)).astype(np.float32),
            "discounts": rng.choice([0.0, 0.99], 16).astype(np.float32),
            "weights": rng.uniform(0.5, 1.5, 16).astype(np.float32),
        }
        want, got = dqn.learn(batch), cql.learn(batch)
        assert got.metrics["loss"] == want.metrics["loss"]
        assert got.metrics["cql_loss"] > 0  # computed, weighed by zero
        np.testing.assert_array_equal(got.priorities, want.priorities)
    for theirs, ours in zip(dqn.state_dict().items(), cql.state_dict().items(), strict=True):
        if isinstance(theirs[1], dict) and theirs[0] != "optimizer":
            for key, value in theirs[1].items():
                torch.testing.assert_close(ours[1][key], value, rtol=0, atol=0)


def test_a_negative_cql_alpha_is_refused_in_one_line_naming_the_key_and_what_is_allowed() -> None:
    spec = get_algorithm("DiscreteCQL")
    with pytest.raises(ValueError) as refused:
        spec.config_cls(cql_alpha=-1.0).check()
    message = str(refused.value)
    assert "\n" not in message
    assert "algo_cfg.cql_alpha=-1.0" in message and "allowed: 0 <= cql_alpha" in message


def test_discrete_cql_beats_the_mixed_datasets_return_and_bc_on_the_same_data() -> None:
    """The mixed dataset (``tests/support/cartpole_data.py``): the poor controller's action
    is the most frequent wherever it and the expert disagree, so cloning learns the poor
    one; values learnt from the same steps pick out the expert's. Both learn 3000 updates
    of 256 rows, then act greedily for 10 episodes. Over dataset seeds 0-7: the dataset's
    mean return 207-244, BC's 43-112, DiscreteCQL's 330-500 (seed 0: 244, 60, 500)."""
    torch.set_num_threads(1)
    episodes = cartpole_episodes(20_000, seed=0, **MIXED_RATES)
    dataset_return = float(episode_returns(episodes).mean())
    returns = {}
    for name in ("BC", "DiscreteCQL"):
        spec = get_algorithm(name)
        torch.manual_seed(0)
        algo = spec.algorithm_cls(spec.config_cls(), CARTPOLE_OBS, gym.spaces.Discrete(2), CPU)
        assert algo.cfg.batch_size == 256
        learn_offline(algo, episodes, updates=3000, seed=0)
        returns[name] = float(greedy_returns(algo.policy, seeds=list(range(100, 110))).mean())
    assert returns["DiscreteCQL"] > dataset_return, (dataset_return, returns)
    assert returns["DiscreteCQL"] > returns["BC"], (dataset_return, returns)
