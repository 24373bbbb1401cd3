"""A replay column of packed observations, kept as one array per field.

Nested (Dict, Tuple) observations travel as numpy structured arrays, a field per leaf (see
``envs/observations.py``). A ring of them stores each field in an array of its own: every
key of the observation is one contiguous column, the way the plain columns are, and a
sample gathers each field and packs the rows again for the learner.
"""

from __future__ import annotations

from typing import Any

import numpy as np


class FieldColumns:
    """``capacity`` rows of a structured dtype, each row ``row_shape`` of them (a sequence's
    steps), stored field by field; indexed like the array it stands for (``column[slots] =
    rows``, ``column[slots]``, ``column[:size]``)."""

    def __init__(self, capacity: int, dtype: np.dtype, row_shape: tuple[int, ...] = ()) -> None:
        assert dtype.names is not None
        self.dtype = dtype
        self.shape = (capacity, *row_shape)
        self.fields = {
            name: np.zeros((*self.shape, *dtype[name].shape), dtype=dtype[name].base)
            for name in dtype.names
        }

    def __len__(self) -> int:
        return self.shape[0]

    def __setitem__(self, index: Any, rows: np.ndarray) -> None:
        for name, field in self.fields.items():
            field[index] = rows[name]

    def __getitem__(self, index: Any) -> np.ndarray:
        picked = np.empty(self.shape[:1], dtype=bool)[index].shape
        rows = np.empty((*picked, *self.shape[1:]), dtype=self.dtype)
        for name, field in self.fields.items():
            rows[name] = field[index]
        return rows


def empty_column(capacity: int, like: np.ndarray) -> np.ndarray | FieldColumns:
    """A zeroed column of ``capacity`` rows shaped like the rows of ``like``."""
    if like.dtype.names is not None:
        return FieldColumns(capacity, like.dtype, like.shape[1:])
    return np.zeros((capacity, *like.shape[1:]), dtype=like.dtype)
