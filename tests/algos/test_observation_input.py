"""What the networks are given for nested observations: each leaf encoded (one-hot where
discrete), side by side in the space's order, for any number of packed rows, whatever
the packed row's byte layout."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

from algos.observations import ObservationInput
from envs.observations import PackedLayout

# Fields of 2, 16, 8 and 12 bytes: a 38-byte row, not a multiple of 8 or 4.
SPACE = gym.spaces.Dict(
    {
        "bits": gym.spaces.MultiBinary(2),
        "grid": gym.spaces.MultiDiscrete([3, 3]),
        "nested": gym.spaces.Tuple(
            (gym.spaces.Discrete(4, start=1), gym.spaces.Box(-1, 1, (3,), np.float32))
        ),
    }
)


@pytest.mark.parametrize("rows", [1, 3])
def test_every_leaf_is_encoded_in_order_whatever_the_row_layout(rows: int) -> None:
    layout = PackedLayout(SPACE)
    assert layout.dtype.itemsize == 38
    SPACE.seed(rows)
    samples = [SPACE.sample() for _ in range(rows)]
    packed = np.stack([layout.pack(sample) for sample in samples])
    encoded = ObservationInput(SPACE).tensor(packed, torch.device("cpu"))
    assert encoded.shape == (rows, 2 + 6 + 4 + 3)
    for row, sample in zip(encoded.numpy(), samples, strict=True):
        np.testing.assert_array_equal(row[:2], sample["bits"])
        np.testing.assert_array_equal(
            row[2:8], np.concatenate([np.eye(3)[v] for v in sample["grid"]])
        )
        np.testing.assert_array_equal(row[8:12], np.eye(4)[sample["nested"][0] - 1])
        np.testing.assert_allclose(row[12:], sample["nested"][1])
