"""R2D2 by hand: burn-in steps warm the memory without taking gradient, n-step targets
inside a sequence stop at the episode's end and at padding, value rescaling learns
``h(return + gamma^k h^-1(Q'))``, a sequence's priority mixes the max and mean |TD| of
its learnt steps, the policy carries each env's memory, a dueling head after the LSTM gives
``V + A - mean(A)``, and a config without a recurrent layer is refused."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from omegaconf import OmegaConf

from algos import get_algorithm
from algos.layers import LayerConfig
from algos.r2d2.policy import R2D2
from algos.r2d2.targets import nstep_targets, rescale, sequence_priorities, unrescale
from joyrl_ray.batch import (
    ACTIONS,
    MASK,
    MEMORY,
    NEXT_OBS,
    OBS,
    REWARDS,
    TERMINATED,
    TRUNCATED,
    WEIGHTS,
)

CPU = torch.device("cpu")
OBS_SPACE = gym.spaces.Box(-5, 5, (3,), np.float32)
BURN_IN, SEQUENCE_LEN, BATCH = 4, 6, 5


def r2d2_cfg(**overrides):
    cfg = OmegaConf.structured(get_algorithm("R2D2").config_cls())
    cfg.value_layers = [LayerConfig("linear", [16], "relu"), LayerConfig("lstm", [8], "none")]
    cfg.burn_in, cfg.sequence_len = BURN_IN, SEQUENCE_LEN
    for key, value in overrides.items():
        cfg[key] = value
    return cfg


def algorithm(**overrides) -> R2D2:
    torch.manual_seed(0)
    algo = R2D2(r2d2_cfg(**overrides), OBS_SPACE, gym.spaces.Discrete(2), CPU)
    assert isinstance(algo, R2D2)
    return algo


def sampled_batch(seed: int = 0) -> dict[str, np.ndarray]:
    """``BATCH`` sampled sequences ``[B, L, ...]``; the last one's episode ends (terminated)
    two steps into its learning part, the rest is padding."""
    rng = np.random.default_rng(seed)
    length = BURN_IN + SEQUENCE_LEN
    mask = np.ones((BATCH, length), bool)
    terminated = np.zeros((BATCH, length), bool)
    mask[-1, BURN_IN + 2 :] = False
    terminated[-1, BURN_IN + 1] = True
    return {
        OBS: rng.normal(size=(BATCH, length, 3)).astype(np.float32),
        NEXT_OBS: rng.normal(size=(BATCH, length, 3)).astype(np.float32),
        ACTIONS: rng.integers(0, 2, (BATCH, length)),
        REWARDS: rng.normal(size=(BATCH, length)).astype(np.float32),
        TERMINATED: terminated,
        TRUNCATED: np.zeros((BATCH, length), bool),
        MASK: mask,
        MEMORY: rng.normal(size=(BATCH, 2, 8)).astype(np.float32),
        WEIGHTS: np.ones(BATCH, np.float32),
    }


def test_burn_in_steps_take_no_gradient_and_learning_steps_do() -> None:
    algo = algorithm()
    seen: list[torch.Tensor] = []
    obs_tensor = algo.policy.obs_tensor

    def leaf(obs: np.ndarray, dtype: torch.dtype | None = None) -> torch.Tensor:
        tensor = obs_tensor(obs, dtype).clone().requires_grad_(True)
        seen.append(tensor)
        return tensor

    algo.policy.obs_tensor = leaf  # type: ignore[method-assign]
    algo.sequence_loss(sampled_batch()).loss.backward()
    obs = seen[0]  # [L, B, 3]: the sequences' observations, burn-in first
    assert obs.grad is not None
    burn_in_grad = obs.grad[:BURN_IN].abs().sum(dim=(1, 2))
    learning_grad = obs.grad[BURN_IN:].abs().sum(dim=(1, 2))
    assert torch.all(burn_in_grad == 0), burn_in_grad
    assert torch.all(learning_grad[:2] > 0), learning_grad
    # The padding after the last sequence's episode end takes none either.
    assert torch.all(obs.grad[BURN_IN + 2 :, -1] == 0)


def test_a_learn_step_returns_one_priority_per_sequence_and_moves_the_weights() -> None:
    algo = algorithm()
    before = [p.detach().clone() for p in algo.policy.q_net.parameters()]
    result = algo.learn(sampled_batch())
    assert result.priorities is not None and result.priorities.shape == (BATCH,)
    assert np.all(np.isfinite(result.priorities)) and np.all(result.priorities > 0)
    after = list(algo.policy.q_net.parameters())
    assert any(not torch.equal(a, b) for a, b in zip(after, before, strict=True))
    assert algo.updates == 1


def test_a_dueling_r2d2_q_is_the_value_plus_the_centred_advantage_of_the_lstm_features() -> None:
    algo = algorithm(dueling=True)
    q_net = algo.policy.q_net
    head = q_net.head[-1]
    with torch.no_grad():
        head.value.weight.copy_(torch.tensor([[1.0] + [0.0] * 7]))
        head.value.bias.fill_(0.5)
        head.advantage.weight.zero_()
        head.advantage.weight[1, 0] = 2.0
        head.advantage.bias.copy_(torch.tensor([3.0, 7.0]))
        obs = torch.tensor(np.random.default_rng(0).normal(size=(4, 3)), dtype=torch.float32)
        q, features, _ = q_net.step(obs, q_net.initial_memory(4))
    f = features[:, 0]
    value = f + 0.5
    advantage = torch.stack([torch.full_like(f, 3.0), 2.0 * f + 7.0], dim=-1)
    expected = value[:, None] + advantage - advantage.mean(dim=-1, keepdim=True)
    torch.testing.assert_close(q, expected)
    # It learns as the plain head does: one priority per sequence, the target net a copy.
    result = algo.learn(sampled_batch())
    assert result.priorities is not None and result.priorities.shape == (BATCH,)


GAMMA = 0.5


def test_nstep_targets_inside_a_sequence_stop_at_the_episode_end_and_padding() -> None:
    # Columns: 0 runs on past the sequence (its end bootstraps from the stored next_obs);
    # 1 terminates at step 4 (then 2 padding steps); 2 is truncated at step 4 (bootstraps).
    steps = 7
    rewards = torch.ones(steps, 3)
    valid = torch.ones(steps, 3, dtype=torch.bool)
    valid[5:, 1:] = False
    terminated = torch.zeros(steps, 3, dtype=torch.bool)
    terminated[4, 1] = True
    bootstrap = torch.arange(1.0, steps + 1)[:, None].repeat(1, 3) * 10  # V(next_obs_t) = 10(t+1)
    target = nstep_targets(rewards, terminated, valid, bootstrap, GAMMA, n_step=3)
    three = 1 + GAMMA + GAMMA**2
    expected = torch.tensor(
        [
            # t: running on                terminated at 4      truncated at 4
            [three + GAMMA**3 * 30, three + GAMMA**3 * 30, three + GAMMA**3 * 30],
            [three + GAMMA**3 * 40, three + GAMMA**3 * 40, three + GAMMA**3 * 40],
            [three + GAMMA**3 * 50, three, three + GAMMA**3 * 50],
            [three + GAMMA**3 * 60, 1 + GAMMA, 1 + GAMMA + GAMMA**2 * 50],
            [three + GAMMA**3 * 70, 1.0, 1 + GAMMA * 50],
            [1 + GAMMA + GAMMA**2 * 70, 0.0, 0.0],  # padding: no target
            [1 + GAMMA * 70, 0.0, 0.0],
        ]
    )
    torch.testing.assert_close(target, expected)


def test_h_inverse_undoes_h_and_h_squashes_large_values() -> None:
    x = torch.linspace(-1000.0, 1000.0, 2001, dtype=torch.float64)
    torch.testing.assert_close(unrescale(rescale(x)), x)
    torch.testing.assert_close(
        rescale(torch.tensor([0.0, 3.0, -8.0])), torch.tensor([0.0, 1.003, -2.008])
    )
    assert float(rescale(torch.tensor(500.0))) < 22.0  # a CartPole return, squashed


def _target_net_values(algo: R2D2, value: float) -> None:
    """Make the target net value every action of every observation at ``value``."""
    last = algo.target_net.head[-1]
    assert isinstance(last, torch.nn.Linear)
    with torch.no_grad():
        last.weight.zero_()
        last.bias.fill_(value)


def test_rescaled_targets_are_h_of_the_n_step_return_bootstrapped_from_h_inverse() -> None:
    batch = sampled_batch(seed=4)
    plain = algorithm(value_rescale=False, n_step=3)
    _target_net_values(plain, 10.0)
    scaled = algorithm(value_rescale=True, n_step=3)
    _target_net_values(scaled, float(rescale(torch.tensor(10.0))))  # the same value, h scale
    out_plain, out_scaled = plain.sequence_loss(batch), scaled.sequence_loss(batch)
    target_plain = out_plain.q - out_plain.td_error
    target_scaled = out_scaled.q - out_scaled.td_error
    valid = out_plain.valid
    expected = rescale(target_plain[valid])  # float32: h^-1(h(10)) is 10 to about 1e-6
    torch.testing.assert_close(target_scaled[valid], expected, rtol=1e-4, atol=1e-4)
    assert not torch.allclose(target_scaled[valid], target_plain[valid])


def test_sequence_priority_is_eta_max_plus_one_minus_eta_mean_over_valid_steps() -> None:
    td_abs = torch.tensor([[1.0, 2.0], [4.0, 9.0], [1.0, 100.0]])  # [L=3, B=2]
    valid = torch.tensor([[True, True], [True, True], [True, False]])  # 100 is padding
    got = sequence_priorities(td_abs, valid, eta=0.9)
    expected = torch.tensor([0.9 * 4 + 0.1 * 2.0, 0.9 * 9 + 0.1 * 5.5])
    torch.testing.assert_close(got, expected)


def test_learn_returns_the_priorities_of_its_own_td_errors() -> None:
    algo = algorithm(priority_eta=0.9)
    batch = sampled_batch(seed=3)
    out = algo.sequence_loss(batch)
    td_abs = out.td_error.detach().abs()
    valid = out.valid
    expected = [
        0.9 * td_abs[valid[:, b], b].max() + 0.1 * td_abs[valid[:, b], b].mean()
        for b in range(BATCH)
    ]
    result = algo.learn(batch)
    assert result.priorities is not None
    np.testing.assert_allclose(result.priorities, torch.stack(expected).numpy(), rtol=1e-5)


def test_the_policy_stores_the_memory_each_step_was_acted_from_and_resets_ended_episodes():
    algo = algorithm()
    policy = algo.policy
    policy.reset_memory(2)
    obs = np.ones((2, 3), np.float32)
    _, first = policy.act(obs, explore=False, env_steps=0)
    assert np.all(first[MEMORY] == 0) and first[MEMORY].shape == (2, 2, 8)
    _, second = policy.act(obs, explore=False, env_steps=1)
    assert np.any(second[MEMORY] != 0)
    policy.episodes_ended(np.array([True, False]))
    _, third = policy.act(obs, explore=False, env_steps=2)
    assert np.all(third[MEMORY][0] == 0) and np.any(third[MEMORY][1] != 0)


def test_r2d2_without_a_recurrent_layer_is_refused_in_one_line() -> None:
    cfg = get_algorithm("R2D2").config_cls()
    cfg.value_layers = [LayerConfig("linear", [16], "relu")]
    with pytest.raises(ValueError, match=r"value_layers has no recurrent layer") as info:
        cfg.check()
    assert "\n" not in str(info.value)


def test_an_episodes_first_row_learns_its_first_steps_from_a_zero_memory() -> None:
    algo = algorithm()
    batch = sampled_batch(seed=4)
    batch[MASK][0, :BURN_IN] = False  # row 0: lead padding, then the episode's first steps
    batch[MEMORY][0] = 0.0
    out = algo.sequence_loss(batch)
    assert out.valid[:, 0].all()
    obs = torch.as_tensor(np.swapaxes(batch[OBS], 0, 1)[BURN_IN:, :1])
    with torch.no_grad():
        fresh, _, _ = algo.policy.q_net.unroll(obs, algo.policy.q_net.initial_memory(1))
    actions = torch.as_tensor(batch[ACTIONS][0, BURN_IN:])
    expected = fresh[:, 0].gather(-1, actions[:, None]).squeeze(-1)
    torch.testing.assert_close(out.q[:, 0].detach(), expected)


def test_learnt_q_values_are_unrolled_from_the_memory_the_burn_in_warmed() -> None:
    algo = algorithm()
    batch = sampled_batch(seed=5)
    out = algo.sequence_loss(batch)
    q_net = algo.policy.q_net
    obs = torch.as_tensor(np.swapaxes(batch[OBS], 0, 1))
    stored = torch.as_tensor(batch[MEMORY])
    actions = torch.as_tensor(np.swapaxes(batch[ACTIONS], 0, 1)[BURN_IN:])

    def q_taken(memory: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            q_all, _, _ = q_net.unroll(obs[BURN_IN:], memory)
        return q_all.gather(-1, actions[..., None]).squeeze(-1)[out.valid]

    warmed = q_taken(q_net.advance(obs[:BURN_IN], stored))
    torch.testing.assert_close(out.q.detach()[out.valid], warmed)
    # The stored memory is where the burn-in starts, not where learning does.
    assert not torch.allclose(out.q.detach()[out.valid], q_taken(stored), atol=1e-3)
