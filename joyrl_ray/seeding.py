"""Independent, reproducible seeds for every env, policy and buffer of a run."""

from __future__ import annotations

import zlib

import numpy as np


def derive_seed(seed: int, *keys: str | int) -> int | None:
    """A 31-bit seed for the stream named by ``keys``; None when the run is unseeded (seed 0)."""
    if not seed:
        return None
    words = [int(seed)] + [zlib.crc32(str(k).encode()) for k in keys]
    return int(np.random.SeedSequence(words).generate_state(1)[0] & 0x7FFFFFFF)
