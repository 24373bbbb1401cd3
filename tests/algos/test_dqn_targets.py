"""DQN-family learning rules, each checked against a hand-computed figure on a tiny net.

Why: a wrong target (double-Q picking with the wrong net, a discount applied twice, a sync
one update late) still learns CartPole, only worse, so the learning tests miss it. Here the
nets are linear with hand-set weights, ``lr=0`` keeps them fixed where a figure needs it,
and every check goes through ``learn()`` (its priorities ``|q - y|`` and its ``loss``
metric), ``q_values()`` and the online / target nets named in the algorithm's checkpoint
attributes, so the tests hold however ``learn()`` is arranged inside.
"""

from __future__ import annotations

from collections.abc import Sequence

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch import nn

from algos import get_algorithm
from algos.dqn.config import DQNConfig
from algos.dqn.policy import DQN
from algos.layers import LayerConfig

OBS = gym.spaces.Box(-10.0, 10.0, (2,), np.float32)
CPU = torch.device("cpu")


def make_policy(
    n_actions: int = 2, name: str = "DQN", layers: Sequence[LayerConfig] = (), **cfg: object
) -> DQN:
    """A DQN whose Q-net is ``Linear(2, n_actions)`` (no hidden layer) unless ``layers``.

    ``lr=0`` keeps the nets where the test put them; no gradient clipping unless asked.
    """
    spec = get_algorithm(name)
    settings = {"value_layers": list(layers), "lr": 0.0, "max_grad_norm": None, **cfg}
    config: DQNConfig = spec.config_cls(**settings)
    algo = spec.algorithm_cls(config, OBS, gym.spaces.Discrete(n_actions), CPU)
    assert isinstance(algo, DQN)
    return algo


def linears(module: nn.Module) -> list[nn.Linear]:
    return [m for m in module.modules() if isinstance(m, nn.Linear)]


def set_linear(layer: nn.Linear, weight: Sequence[Sequence[float]], bias: Sequence[float]) -> None:
    with torch.no_grad():
        layer.weight.copy_(torch.tensor(weight, dtype=torch.float32))
        layer.bias.copy_(torch.tensor(bias, dtype=torch.float32))


def set_net(net: nn.Module, weight: Sequence[Sequence[float]], bias: Sequence[float]) -> None:
    (layer,) = linears(net)  # the single Linear(2, n_actions) of make_policy's default
    set_linear(layer, weight, bias)


def params(net: nn.Module) -> list[np.ndarray]:
    return [p.detach().cpu().numpy().copy() for p in net.parameters()]


def batch(
    actions: Sequence[int],
    rewards: Sequence[float],
    next_obs: Sequence[Sequence[float]],
    discounts: Sequence[float],
    weights: Sequence[float] | None = None,
) -> dict[str, np.ndarray]:
    """A learner batch; every observation is the origin, where q(s, a) is the net's bias."""
    rows = len(actions)
    return {
        "obs": np.zeros((rows, 2), np.float32),
        "actions": np.asarray(actions, np.int64),
        "rewards": np.asarray(rewards, np.float32),
        "next_obs": np.asarray(next_obs, np.float32),
        "discounts": np.asarray(discounts, np.float32),
        "weights": np.asarray(weights if weights is not None else np.ones(rows), np.float32),
    }


# ----- targets -----


@pytest.mark.parametrize(
    ("name", "expected"),
    [("DQN", 3.5), ("DoubleDQN", 2.0)],
    ids=["dqn-target-argmax", "double-online-argmax"],
)
def test_double_q_picks_with_online_net_and_values_with_target(name: str, expected: float) -> None:
    # At s' = [1, 0]: online Q = [1, 0] (argmax 0), target Q = [2, 5] (argmax 1).
    # DQN: y = 1 + 0.5 * max target = 3.5. Double Q: y = 1 + 0.5 * target[online argmax 0] = 2.
    # (Valuing with the online net instead would give 1.5.) q(s=0, a) = 0, so priority = y.
    algo = make_policy(name=name)
    set_net(algo.policy.q_net, [[1, 0], [0, 1]], [0, 0])
    set_net(algo.target_net, [[2, 0], [5, 0]], [0, 0])
    result = algo.learn(batch([0], [1.0], [[1, 0]], [0.5]))
    np.testing.assert_allclose(result.priorities, [expected], rtol=1e-6)


def test_nstep_target_uses_the_batch_discounts_as_given() -> None:
    # The worker folds n steps: rewards is the discounted sum, discounts is gamma**k or 0
    # after a terminal state. The learner must use discounts as they are: no extra gamma.
    gamma = 0.9
    algo = make_policy(gamma=gamma, n_step=3)
    set_net(algo.policy.q_net, [[0, 0], [0, 0]], [0.25, -1.0])  # q(s, 0) = 0.25, q(s, 1) = -1
    set_net(algo.target_net, [[4, 0], [1, 0]], [0, 0])  # max target Q(s') = 4 * s'[0]
    rows = batch(
        actions=[0, 1, 0],
        rewards=[1.0 + gamma * 0.5 + gamma**2 * 1.0, 2.0, 0.5],
        next_obs=[[1, 0], [2, 0], [3, 0]],
        # 3 full steps; a terminal state inside the window; a 2-step tail cut by a time
        # limit (truncation still bootstraps)
        discounts=[gamma**3, 0.0, gamma**2],
    )
    result = algo.learn(rows)
    y = [1.0 + 0.45 + 0.81 + 0.729 * 4.0, 2.0, 0.5 + 0.81 * 12.0]
    q = [0.25, -1.0, 0.25]
    np.testing.assert_allclose(result.priorities, np.abs(np.subtract(q, y)), rtol=1e-5)


def test_terminal_rows_do_not_bootstrap() -> None:
    algo = make_policy()
    set_net(algo.policy.q_net, [[0, 0], [0, 0]], [0, 0])
    set_net(algo.target_net, [[100, 0], [100, 0]], [100, 100])
    result = algo.learn(batch([0, 1], [1.5, -2.0], [[1, 1], [5, 5]], [0.0, 0.0]))
    np.testing.assert_allclose(result.priorities, [1.5, 2.0], rtol=1e-6)


# ----- dueling head -----


def test_dueling_head_is_value_plus_mean_subtracted_advantages() -> None:
    # Trunk Linear(2, 2) = identity, no activation; V(f) = f0 + f1 + 0.5; A(f) = W f + b.
    algo = make_policy(n_actions=3, name="DuelingDQN", layers=[LayerConfig("linear", [2], "none")])
    by_width = {layer.out_features: layer for layer in linears(algo.policy.q_net)}
    assert sorted(by_width) == [1, 2, 3], "expected trunk (2), value (1), advantage (3) layers"
    set_linear(by_width[2], [[1, 0], [0, 1]], [0, 0])
    set_linear(by_width[1], [[1, 1]], [0.5])
    set_linear(by_width[3], [[1, 0], [0, 1], [1, 1]], [0, 0, 3])
    obs = np.array([[1, 2], [0, 0]], np.float32)
    # obs [1, 2]: V = 3.5, A = [1, 2, 6], mean 3 -> Q = [1.5, 2.5, 6.5]
    # obs [0, 0]: V = 0.5, A = [0, 0, 3], mean 1 -> Q = [-0.5, -0.5, 2.5]
    np.testing.assert_allclose(algo.policy.q_values(obs), [[1.5, 2.5, 6.5], [-0.5, -0.5, 2.5]])
    # Shifting every advantage by the same constant leaves Q unchanged.
    set_linear(by_width[3], [[1, 0], [0, 1], [1, 1]], [7, 7, 10])
    np.testing.assert_allclose(algo.policy.q_values(obs), [[1.5, 2.5, 6.5], [-0.5, -0.5, 2.5]])


# ----- target network sync -----


@pytest.mark.parametrize("tau", [1.0, 0.25])
def test_target_syncs_every_target_update_updates(tau: float) -> None:
    algo = make_policy(target_update=3, tau=tau)
    set_net(algo.policy.q_net, [[1, 2], [3, 4]], [5, 6])
    set_net(algo.target_net, [[-1, -1], [-1, -1]], [-1, -1])
    online, target = params(algo.policy.q_net), params(algo.target_net)
    rows = batch([0, 1], [1.0, 0.0], [[1, 0], [0, 1]], [0.9, 0.9])
    for update in (1, 2):
        algo.learn(rows)
        for got, want in zip(params(algo.target_net), target, strict=True):
            np.testing.assert_array_equal(got, want, err_msg=f"target moved at update {update}")
    algo.learn(rows)  # update 3: sync
    for got, t0, o in zip(params(algo.target_net), target, online, strict=True):
        np.testing.assert_allclose(got, (1 - tau) * t0 + tau * o, rtol=1e-6)
    for got, o in zip(params(algo.policy.q_net), online, strict=True):
        np.testing.assert_array_equal(got, o)  # lr=0: the online net did not move


def test_polyak_averages_at_every_sync() -> None:
    # tau = 0.25, sync every update: T1 = 0.75 * T0 + 0.25 * O, T2 = 0.75 * T1 + 0.25 * O.
    algo = make_policy(target_update=1, tau=0.25)
    set_net(algo.policy.q_net, [[4, 0], [0, 4]], [8, -8])
    set_net(algo.target_net, [[0, 0], [0, 0]], [0, 0])
    rows = batch([0], [0.0], [[0, 0]], [0.0])
    algo.learn(rows)
    weight, bias = params(algo.target_net)
    np.testing.assert_allclose(weight, [[1, 0], [0, 1]])
    np.testing.assert_allclose(bias, [2, -2])
    algo.learn(rows)
    weight, bias = params(algo.target_net)
    np.testing.assert_allclose(weight, [[1.75, 0], [0, 1.75]])
    np.testing.assert_allclose(bias, [3.5, -3.5])


# ----- losses -----


@pytest.mark.parametrize(
    ("loss", "td", "expected"),
    [("huber", 0.5, 0.125), ("huber", 3.0, 2.5), ("mse", 0.5, 0.25), ("mse", 3.0, 9.0)],
)
def test_huber_and_mse_losses(loss: str, td: float, expected: float) -> None:
    # q(s, 0) = bias 0 = 0; y = reward (terminal) = -td, so the TD error is td.
    algo = make_policy(loss=loss)
    set_net(algo.policy.q_net, [[0, 0], [0, 0]], [0, 0])
    result = algo.learn(batch([0], [-td], [[0, 0]], [0.0]))
    assert result.metrics["loss"] == pytest.approx(expected, rel=1e-6)
    np.testing.assert_allclose(result.priorities, [td], rtol=1e-6)


def test_importance_weights_scale_per_sample_losses() -> None:
    # TD errors 3 (huber 2.5) and 0.5 (huber 0.125); loss = mean(w * per-sample loss).
    algo = make_policy()
    set_net(algo.policy.q_net, [[0, 0], [0, 0]], [0, 0])
    rows = batch([0, 1], [-3.0, -0.5], [[0, 0], [0, 0]], [0.0, 0.0], weights=[0.2, 4.0])
    result = algo.learn(rows)
    assert result.metrics["loss"] == pytest.approx((0.2 * 2.5 + 4.0 * 0.125) / 2, rel=1e-6)
    # Priorities are |TD error|, not weighted.
    np.testing.assert_allclose(result.priorities, [3.0, 0.5], rtol=1e-6)


@pytest.mark.parametrize(
    ("weights", "moved"), [([1.0, 0.0], [True, False]), ([0, 1], [False, True])]
)
def test_zero_weight_sample_does_not_move_its_q_value(
    weights: list[float], moved: list[bool]
) -> None:
    # obs = 0, so only the bias of the taken action gets a gradient; a sample whose
    # importance weight is 0 must contribute none.
    algo = make_policy(lr=0.1)
    zero = np.zeros((1, 2), np.float32)
    before = algo.policy.q_values(zero)[0]
    algo.learn(batch([0, 1], [-3.0, 2.0], [[0, 0], [0, 0]], [0.0, 0.0], weights=weights))
    after = algo.policy.q_values(zero)[0]
    assert list(after != before) == moved, (before, after)
