"""Replay of packed (Dict, Tuple) observations: each key is a column of its own in the ring,
a sample gives back the rows that were added, and a saved replay loads back the same."""

from __future__ import annotations

import numpy as np
import pytest

from envs.goal_grid import GoalGridEnv
from envs.observations import PackedLayout
from joyrl_ray.data.buffers.prioritized import PrioritizedReplayBuffer
from joyrl_ray.data.buffers.replay import ReplayBuffer


def packed_rows(n: int, seed: int) -> np.ndarray:
    space = GoalGridEnv().observation_space
    space.seed(seed)
    layout = PackedLayout(space)
    rows = np.empty(n, dtype=layout.dtype)
    for i in range(n):
        rows[i] = layout.pack(space.sample())
    return rows


def transitions(n: int, seed: int) -> dict[str, np.ndarray]:
    return {
        "obs": packed_rows(n, seed),
        "actions": np.arange(n) % 4,
        "next_obs": packed_rows(n, seed + 1),
    }


@pytest.mark.parametrize(
    "make", [lambda: ReplayBuffer(50, seed=0), lambda: PrioritizedReplayBuffer(50, seed=0)]
)
def test_each_key_is_a_column_and_samples_give_back_the_rows_added(make) -> None:
    buffer = make()
    added = transitions(80, seed=1)  # more than the capacity: the ring wraps
    buffer.add(added)
    column = buffer.columns["obs"]
    assert set(column.fields) == {"goal", "pos"}
    assert column.fields["pos"].shape == (50, 2) and column.fields["pos"].flags.c_contiguous
    batch = buffer.sample(32)
    assert batch["obs"].dtype == added["obs"].dtype
    rows = 30 + batch["slots"]  # only the newest 50 rows fit: slot s holds row 30 + s
    np.testing.assert_array_equal(batch["obs"], added["obs"][rows])
    np.testing.assert_array_equal(batch["next_obs"], added["next_obs"][rows])
    np.testing.assert_array_equal(batch["actions"], added["actions"][rows])


def test_a_saved_replay_of_packed_observations_loads_back_the_same() -> None:
    buffer = ReplayBuffer(50, seed=0)
    buffer.add(transitions(20, seed=3))
    state = buffer.state_dict()
    assert state["column.obs"].dtype.names == ("goal", "pos")
    restored = ReplayBuffer(50, seed=0)
    restored.load_state_dict(state)
    for key in ("obs", "next_obs", "actions"):
        np.testing.assert_array_equal(restored.columns[key][:20], buffer.columns[key][:20])


def test_rows_that_are_sequences_of_packed_observations_sample_back_whole() -> None:
    steps = 6  # a sequence replay's row: steps of one episode
    buffer = ReplayBuffer(10, seed=0)
    added = {"obs": packed_rows(12 * steps, seed=4).reshape(12, steps), "actions": np.arange(12)}
    buffer.add(added)
    assert buffer.columns["obs"].fields["pos"].shape == (10, steps, 2)
    batch = buffer.sample(8)
    assert batch["obs"].shape == (8, steps)
    np.testing.assert_array_equal(batch["obs"], added["obs"][2 + batch["slots"]])
