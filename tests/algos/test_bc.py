"""Behaviour cloning: its losses against hand-computed figures, its acting, and cloning an
expert CartPole dataset in one process (no runtime, no Ray).

The nets of the loss checks are linear with hand-set weights and ``lr=0``, and every check
goes through ``learn()``'s ``loss`` metric, so they hold however ``learn()`` is arranged.
"""

from __future__ import annotations

import math
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch import nn

from algos import get_algorithm
from algos.bc.policy import BC
from algos.layers import LayerConfig
from joyrl_ray.data.dataset_rows import read_trajectory_files
from joyrl_ray.run.trajectories import trajectory_files
from tests.algos.mask_support import masked_space, packed, random_masks
from tests.support.cartpole_data import (
    cartpole_episodes,
    greedy_returns,
    learn_offline,
    write_task_dir,
)

CPU = torch.device("cpu")
OBS = gym.spaces.Box(-10.0, 10.0, (2,), np.float32)
BOX = gym.spaces.Box(np.array([-2.0, 0.0], np.float32), np.array([2.0, 4.0], np.float32))
CARTPOLE_OBS = gym.spaces.Box(-np.inf, np.inf, (4,), np.float32)


def make_bc(action_space: gym.Space, obs_space: gym.Space = OBS, **cfg: object) -> BC:
    """No hidden layer unless ``actor_layers``; ``lr=0`` keeps the actor where a test puts it."""
    spec = get_algorithm("BC")
    settings = {"actor_layers": [], "lr": 0.0, **cfg}
    algo = spec.algorithm_cls(spec.config_cls(**settings), obs_space, action_space, CPU)
    assert isinstance(algo, BC)
    algo.policy.seed(0)
    return algo


def set_linear(actor: nn.Module, weight: list[list[float]], bias: list[float]) -> None:
    (layer,) = [m for m in actor.modules() if isinstance(m, nn.Linear)]
    with torch.no_grad():
        layer.weight.copy_(torch.tensor(weight))
        layer.bias.copy_(torch.tensor(bias))


def batch(obs: list[list[float]], actions: np.ndarray) -> dict[str, np.ndarray]:
    rows = len(obs)
    return {
        "obs": np.asarray(obs, np.float32),
        "actions": actions,
        "weights": np.ones(rows, np.float32),
    }


# ----- losses -----


def test_discrete_loss_is_the_cross_entropy_of_the_data_actions() -> None:
    # logits = W obs + b: row 1 [1, 0, 1] took action 0, row 2 [0, 2, 1] took action 2.
    algo = make_bc(gym.spaces.Discrete(3))
    set_linear(algo.policy.actor, [[1, 0], [0, 1], [0, 0]], [0, 0, 1])
    result = algo.learn(batch([[1, 0], [0, 2]], np.array([0, 2])))
    e = math.e
    row_1 = math.log(e + 1 + e) - 1.0
    row_2 = math.log(1 + e * e + e) - 1.0
    assert result.metrics["loss"] == pytest.approx((row_1 + row_2) / 2, rel=1e-6)
    # The argmax of row 1 (the first of its two maxima) is its action; row 2's is not.
    assert result.metrics["accuracy"] == 0.5


def test_box_loss_is_the_squared_error_to_the_data_actions_in_normalised_units() -> None:
    # The actor gives tanh(b) = [0.5, -0.5] everywhere. Bounds [-2, 2] x [0, 4]: the data's
    # [1, 2] is [0.5, 0] normalised, [-2, 4] is [-1, 1]. Squared errors [0, 0.25] and
    # [2.25, 2.25]: per-row means 0.125 and 2.25.
    algo = make_bc(BOX)
    set_linear(algo.policy.actor, [[0, 0], [0, 0]], [math.atanh(0.5), math.atanh(-0.5)])
    result = algo.learn(batch([[3, 1], [-1, 7]], np.array([[1, 2], [-2, 4]], np.float32)))
    assert result.metrics["loss"] == pytest.approx((0.125 + 2.25) / 2, rel=1e-5)


def test_per_is_refused_in_one_line_naming_the_key_and_what_is_allowed() -> None:
    spec = get_algorithm("BC")
    with pytest.raises(ValueError) as refused:
        spec.config_cls(buffer_type="PER").check()
    message = str(refused.value)
    assert "\n" not in message
    assert "algo_cfg.buffer_type='PER'" in message and "allowed: REPLAY_QUE" in message


# ----- acting -----


def test_box_acting_stays_in_bounds_and_is_deterministic_unless_exploring() -> None:
    hidden = [LayerConfig("linear", [16])]
    torch.manual_seed(0)
    algo = make_bc(BOX, actor_layers=hidden)
    obs = np.random.default_rng(0).uniform(-10, 10, (256, 2)).astype(np.float32)
    greedy, extras = algo.policy.act(obs, explore=False, env_steps=0)
    again, _ = algo.policy.act(obs, explore=False, env_steps=0)
    explored, _ = algo.policy.act(obs, explore=True, env_steps=0)
    assert extras == {} and greedy.shape == (256, 2) and greedy.dtype == np.float32
    np.testing.assert_array_equal(greedy, again)
    assert not np.array_equal(explored, greedy)
    for actions in (greedy, explored):
        assert np.all(actions >= BOX.low) and np.all(actions <= BOX.high)
    quiet = make_bc(BOX, actor_layers=hidden, expl_noise=0.0)
    quiet.policy.actor.load_state_dict(algo.policy.actor.state_dict())
    np.testing.assert_array_equal(quiet.policy.act(obs, explore=True, env_steps=0)[0], greedy)


def test_discrete_acting_takes_the_argmax_and_samples_the_softmax_when_exploring() -> None:
    # Logits [log 0.8, log 0.2] everywhere: greedy is always 0, exploring draws 1 a fifth
    # of the time.
    algo = make_bc(gym.spaces.Discrete(2))
    set_linear(algo.policy.actor, [[0, 0], [0, 0]], [math.log(0.8), math.log(0.2)])
    obs = np.zeros((4000, 2), np.float32)
    greedy, _ = algo.policy.act(obs, explore=False, env_steps=0)
    sampled, _ = algo.policy.act(obs, explore=True, env_steps=0)
    assert greedy.dtype == np.int64 and not greedy.any()
    assert sampled.mean() == pytest.approx(0.2, abs=0.02)


def test_greedy_and_sampled_actions_keep_to_the_legal_ones() -> None:
    n = 5
    torch.manual_seed(0)
    algo = make_bc(gym.spaces.Discrete(n), masked_space(n))
    rng = np.random.default_rng(0)
    masks = random_masks(rng, (512,), n)
    obs = packed(masked_space(n), rng.normal(size=(512, 2)).astype(np.float32), masks)
    for explore in (False, True):
        actions, _ = algo.policy.act(obs, explore=explore, env_steps=0)
        assert masks[np.arange(512), actions].all(), explore


# ----- learning from a dataset -----


def test_expert_dataset_round_trips_through_a_task_directory(tmp_path: Path) -> None:
    episodes = cartpole_episodes(1200, random_rate=0.0, seed=0)  # two whole, one cut off
    write_task_dir(episodes, tmp_path)
    loaded = read_trajectory_files(trajectory_files(tmp_path))
    assert len(loaded) == len(episodes) == 3
    for got, want in zip(loaded, episodes, strict=True):
        assert got.keys() == want.keys()
        for key in want:
            np.testing.assert_array_equal(got[key], want[key])
            assert got[key].dtype == want[key].dtype


def test_bc_clones_a_20k_step_expert_dataset_to_a_mean_return_of_475() -> None:
    torch.set_num_threads(1)
    episodes = cartpole_episodes(20_000, random_rate=0.0, seed=0)
    torch.manual_seed(0)
    spec = get_algorithm("BC")
    algo = spec.algorithm_cls(spec.config_cls(), CARTPOLE_OBS, gym.spaces.Discrete(2), CPU)
    metrics = learn_offline(algo, episodes, updates=1000, seed=0)
    returns = greedy_returns(algo.policy, seeds=list(range(100, 110)))
    assert returns.mean() >= 475, (returns, metrics)
