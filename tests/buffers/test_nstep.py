"""N-step folding across a vector of envs, hand-worked at episode ends."""

import numpy as np
import pytest

from joyrl_ray.data.buffers.nstep import NStepFolder

GAMMA = 0.9


def step(obs, rewards, terminated=(False, False), truncated=(False, False), next_obs=None):
    obs = np.array(obs, dtype=np.float32)[:, None].repeat(2, axis=1)  # obs shape (2,)
    next_obs = obs + 1 if next_obs is None else np.array(next_obs, np.float32)[:, None].repeat(2, 1)
    return {
        "obs": obs,
        "actions": obs[:, 0].astype(np.int64),
        "rewards": np.array(rewards, dtype=np.float64),
        "next_obs": next_obs,
        "terminated": np.array(terminated),
        "truncated": np.array(truncated),
        "log_probs": -obs[:, 0].astype(np.float32),  # an extra column, from the first step
    }


def check(out, obs, rewards, next_obs, discounts):
    assert out["obs"].shape == (len(obs), 2) and out["obs"].dtype == np.float32
    assert np.array_equal(out["obs"][:, 0], obs)
    assert np.array_equal(out["actions"], np.array(obs, dtype=np.int64))
    assert np.array_equal(out["log_probs"], -np.array(obs, dtype=np.float32))
    assert np.allclose(out["rewards"], rewards)
    assert np.array_equal(out["next_obs"][:, 0], next_obs)
    assert np.allclose(out["discounts"], discounts)
    assert out["rewards"].dtype == np.float32 and out["discounts"].dtype == np.float32
    assert set(out) == {"obs", "actions", "rewards", "next_obs", "discounts", "log_probs"}


def test_two_envs_three_steps_hand_worked() -> None:
    folder = NStepFolder(n_envs=2, n_step=3, gamma=GAMMA)
    # env 0 runs on; env 1 terminates at t=1, restarts, and is truncated at t=3.
    out = folder.add(step([0, 100], [1.0, 10.0]))
    check(out, [], [], [], [])  # nothing complete, but every column is there

    out = folder.add(step([1, 101], [2.0, 20.0], terminated=(False, True)))
    # env 1 terminated with 2 queued: shortened sums, no bootstrap
    check(out, [100, 101], [10 + 0.9 * 20, 20], [102, 102], [0.0, 0.0])

    out = folder.add(step([2, 200], [3.0, 30.0]))
    # env 0 has a full queue: 1 + 0.9*2 + 0.81*3
    check(out, [0], [5.23], [3], [0.729])

    out = folder.add(step([3, 201], [4.0, 40.0], truncated=(False, True), next_obs=[4, 250]))
    # env 0 folds 2 + 0.9*3 + 0.81*4; env 1 was truncated: bootstrap from its final obs 250
    check(out, [1, 200, 201], [7.94, 30 + 0.9 * 40, 40], [4, 250, 250], [0.729, 0.81, 0.9])


def test_termination_with_a_full_queue_flushes_all() -> None:
    folder = NStepFolder(n_envs=1, n_step=2, gamma=GAMMA)
    folder.add(step([0], [1.0], (False,), (False,)))
    out = folder.add(step([1], [2.0], (True,), (True,)))  # terminated wins over truncated
    check(out, [0, 1], [1 + 0.9 * 2, 2], [2, 2], [0.0, 0.0])
    out = folder.add(step([5], [1.0], (False,), (False,)))  # queue was cleared
    check(out, [], [], [], [])


def test_n_step_one_is_identity_plus_discounts() -> None:
    rng = np.random.default_rng(0)
    folder = NStepFolder(n_envs=3, n_step=1, gamma=0.99)
    for _ in range(5):
        s = {
            "obs": rng.normal(size=(3, 4)).astype(np.float32),
            "actions": rng.integers(0, 5, size=3),
            "rewards": rng.normal(size=3).astype(np.float32),
            "next_obs": rng.normal(size=(3, 4)).astype(np.float32),
            "terminated": rng.random(3) < 0.3,
            "truncated": rng.random(3) < 0.3,
            "q": rng.normal(size=(3, 5)).astype(np.float32),
        }
        out = folder.add(s)
        for key in ("obs", "actions", "rewards", "next_obs", "q"):
            assert out[key].dtype == s[key].dtype
            assert np.array_equal(out[key], s[key])
        assert np.allclose(out["discounts"], 0.99 * (1 - s["terminated"]))


def test_input_arrays_may_be_reused_by_the_caller() -> None:
    folder = NStepFolder(n_envs=1, n_step=2, gamma=GAMMA)
    s = step([0], [1.0], (False,), (False,))
    folder.add(s)
    s["obs"][:] = 7  # a vector env overwriting its buffers in place
    out = folder.add(step([1], [2.0], (False,), (False,)))
    assert np.array_equal(out["obs"][:, 0], [0])


def test_rejects_wrong_env_count() -> None:
    with pytest.raises(ValueError):
        NStepFolder(n_envs=3, n_step=2, gamma=GAMMA).add(step([0, 1], [1.0, 1.0]))
