"""Ring behaviour of the uniform ReplayBuffer and the SumTree it is prioritized with."""

import numpy as np
import pytest

from joyrl_ray.data.buffers.replay import ReplayBuffer
from joyrl_ray.data.buffers.sum_tree import SumTree


def rows(start: int, stop: int) -> dict[str, np.ndarray]:
    ids = np.arange(start, stop)
    return {
        "obs": np.stack([ids, -ids], axis=1).astype(np.float32),
        "actions": ids.astype(np.int64),
        "terminated": ids % 2 == 0,
    }


def test_wrap_overwrites_oldest_in_order_and_caps_size() -> None:
    buf = ReplayBuffer(5, seed=0)
    assert list(buf.add(rows(0, 3))) == [0, 1, 2]
    assert list(buf.add(rows(3, 7))) == [3, 4, 0, 1]
    assert len(buf) == 5 and buf.cursor == 2 and buf.total_added == 7
    assert list(buf.columns["actions"]) == [5, 6, 2, 3, 4]
    assert list(buf.generations) == [2, 2, 1, 1, 1]
    buf.add(rows(7, 10))
    assert len(buf) == 5
    assert list(buf.columns["actions"]) == [5, 6, 7, 8, 9]
    assert list(buf.generations) == [2, 2, 2, 2, 2]


def test_sample_only_filled_slots_and_keeps_dtypes() -> None:
    buf = ReplayBuffer(10, seed=0)
    buf.add(rows(0, 3))
    batch = buf.sample(1000)
    assert set(batch["slots"].tolist()) == {0, 1, 2}
    assert batch["obs"].dtype == np.float32 and batch["obs"].shape == (1000, 2)
    assert batch["actions"].dtype == np.int64
    assert batch["terminated"].dtype == np.bool_
    assert np.array_equal(batch["actions"], batch["slots"])  # row i was written to slot i
    assert np.array_equal(batch["generations"], np.ones(1000))
    assert batch["weights"].dtype == np.float32 and np.all(batch["weights"] == 1)


def test_batch_larger_than_capacity_keeps_newest_rows() -> None:
    buf = ReplayBuffer(4, seed=0)
    buf.add(rows(0, 1))
    slots = buf.add(rows(1, 11))
    assert list(slots) == [1, 2, 3, 0]
    assert list(buf.columns["actions"]) == [10, 7, 8, 9]
    assert len(buf) == 4 and buf.total_added == 5
    assert list(buf.generations) == [2, 1, 1, 1]


def test_empty_buffer_refuses_to_sample() -> None:
    with pytest.raises(ValueError):
        ReplayBuffer(3).sample(1)


@pytest.mark.parametrize("capacity", [1, 5, 8, 1000])
def test_sum_tree_matches_brute_force(capacity: int) -> None:
    rng = np.random.default_rng(capacity)
    tree = SumTree(capacity)
    values = np.zeros(capacity)
    written = np.zeros(capacity, dtype=bool)
    largest = 0.0
    for _ in range(5):  # several partial, overlapping updates
        idx = rng.choice(capacity, size=max(1, capacity // 2), replace=False)
        values[idx] = rng.random(len(idx)) * 10
        written[idx] = True
        largest = max(largest, values[idx].max())
        tree.update(idx, values[idx])
    assert tree.total() == pytest.approx(values.sum())
    assert tree.min() == values[written].min()
    assert tree.max() == largest  # a running max over everything written
    assert np.array_equal(tree.get(np.arange(capacity)), values)
    prefixes = rng.random(10_000) * values.sum()
    expected = np.searchsorted(np.cumsum(values), prefixes, side="right")
    assert np.array_equal(tree.find_prefix_sum(prefixes), expected)


def test_sum_tree_never_finds_empty_leaves() -> None:
    tree = SumTree(6)
    tree.update(np.array([0, 2]), np.array([1.0, 3.0]))
    found = tree.find_prefix_sum(np.array([0.0, 0.999, 1.0, 3.99, 4.0, 5.0]))
    assert list(found) == [0, 0, 2, 2, 2, 2]  # at or past the total: the last non-empty leaf
    assert tree.min() == 1.0 and tree.max() == 3.0
