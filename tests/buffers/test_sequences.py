"""The sequence cutter (sequence replay's worker side), hand-worked: rows of burn-in +
learning steps start every stride steps of an episode, carry the memory their first step
was acted from, never cross an episode end (the tail is padded, ``mask``), and their
``new_steps`` count every env step exactly once."""

from __future__ import annotations

import numpy as np
import pytest

from joyrl_ray.batch import MASK, MEMORY, NEW_STEPS, TERMINATED, TRUNCATED
from joyrl_ray.data.buffers.sequences import SequenceCutter


def steps(first: int, count: int, n_envs: int = 1, done_at: dict[int, list[int]] | None = None):
    """``count`` vector steps: obs (and the memory acted from) = the env's running step
    number ``first + t`` (env e adds 1000 * e); episodes end where ``done_at[e]`` says."""
    t = np.arange(first, first + count)[:, None] + 1000 * np.arange(n_envs)[None]
    done = np.zeros((count, n_envs), bool)
    for e, ends in (done_at or {}).items():
        done[[s - first for s in ends if first <= s < first + count], e] = True
    return {
        "obs": t.astype(np.float32)[..., None],
        "actions": (t % 2).astype(np.int64),
        "rewards": np.ones((count, n_envs), np.float32),
        "next_obs": (t + 1).astype(np.float32)[..., None],
        "terminated": done,
        "truncated": np.zeros((count, n_envs), bool),
        MEMORY: np.repeat(t.astype(np.float32)[..., None, None], 2, axis=2),  # [T, N, k=2, H=1]
    }


def first_steps(rows) -> list[int]:
    return [int(x) for x in rows["obs"][:, 0, 0]]


def test_overlapping_sequences_start_every_stride_with_the_memory_of_their_first_step() -> None:
    cutter = SequenceCutter(n_envs=1, length=6, stride=3)
    rows = cutter.cut(steps(0, 13))
    assert first_steps(rows) == [0, 3, 6]
    for row_obs, memory in zip(rows["obs"], rows[MEMORY], strict=True):
        assert np.array_equal(row_obs[:, 0], np.arange(row_obs[0, 0], row_obs[0, 0] + 6))
        assert memory.shape == (2, 1) and np.all(memory == row_obs[0, 0])
    assert rows[MASK].all()
    assert rows[NEW_STEPS].tolist() == [6, 3, 3]  # overlapping steps are counted once
    assert cutter.pending == 1  # step 12 waits for the row (from step 9) that stores it


def test_a_sequence_never_crosses_an_episode_end_and_the_tail_is_padded_with_a_mask() -> None:
    cutter = SequenceCutter(n_envs=1, length=6, stride=3)
    rows = cutter.cut(steps(0, 12, done_at={0: [7]}))  # episode 0..7, then 8..11 runs on
    assert first_steps(rows) == [0, 3]
    tail = {key: value[1] for key, value in rows.items()}
    assert tail["obs"][:, 0].tolist() == [3, 4, 5, 6, 7, 0]  # padded with zeros
    assert tail[MASK].tolist() == [True] * 5 + [False]
    assert tail[TERMINATED].tolist() == [False] * 4 + [True, False]
    assert rows[NEW_STEPS].tolist() == [6, 2]
    assert cutter.pending == 4  # the next episode's steps 8..11
    later = cutter.cut(steps(12, 2))
    assert first_steps(later) == [8]  # the next episode starts its own rows
    assert later[MEMORY][0, 0, 0] == 8


def test_an_episode_shorter_than_a_sequence_is_one_padded_row() -> None:
    cutter = SequenceCutter(n_envs=1, length=6, stride=3)
    rows = cutter.cut(steps(0, 3, done_at={0: [1]}))
    assert first_steps(rows) == [0]
    assert rows[MASK][0].tolist() == [True, True, False, False, False, False]
    assert rows[NEW_STEPS].tolist() == [2]


def test_chunk_boundaries_do_not_change_the_rows() -> None:
    done_at = {0: [4, 20, 21], 1: [13]}
    whole = SequenceCutter(n_envs=2, length=5, stride=3).cut(steps(0, 30, 2, done_at))
    cutter = SequenceCutter(n_envs=2, length=5, stride=3)
    pieces = [cutter.cut(steps(t, 5, 2, done_at)) for t in range(0, 30, 5)]
    parts = [p for p in pieces if p]
    joined = {key: np.concatenate([p[key] for p in parts]) for key in whole}
    order = lambda rows: np.lexsort((rows["obs"][:, 0, 0],))  # noqa: E731 (env-major vs time)
    for key in whole:
        assert np.array_equal(whole[key][order(whole)], joined[key][order(joined)]), key


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_new_step_counts_sum_to_the_env_steps(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n_envs, length, stride = 3, 7, int(rng.integers(1, 8))
    cutter = SequenceCutter(n_envs, length, stride)
    total, counted = 0, 0
    for t in range(0, 200, 10):
        chunk = steps(t, 10, n_envs)
        chunk[TERMINATED] = rng.random((10, n_envs)) < 0.05
        chunk[TRUNCATED] = rng.random((10, n_envs)) < 0.02
        rows = cutter.cut(chunk)
        total += 10 * n_envs
        if rows:
            counted += int(rows[NEW_STEPS].sum())
            done = rows[TERMINATED] | rows[TRUNCATED]
            # an episode ends at most once in a row, at its last real step
            last = rows[MASK].sum(axis=1) - 1
            assert (done.sum(axis=1) <= 1).all()
            ends = done.any(axis=1)
            assert done[ends, last[ends]].all()
            assert (rows[MASK].sum(axis=1) >= rows[NEW_STEPS]).all()
        assert counted + cutter.pending == total
    assert cutter.reset() + counted == total and cutter.pending == 0


def test_an_episodes_first_row_leads_with_padding_so_its_first_steps_follow_a_burn_in() -> None:
    cutter = SequenceCutter(n_envs=1, length=6, stride=3, lead=2)
    rows = cutter.cut(steps(0, 11, done_at={0: [7]}))
    # Rows start at positions 0, 3 of [pad, pad, 0, 1, ..., 7]: steps -2 (padding) and 1,
    # then the tail from step 4; the first row's memory is the padding's: zeros.
    assert rows["obs"][:, :, 0].tolist() == [
        [0, 0, 0, 1, 2, 3],
        [1, 2, 3, 4, 5, 6],
        [4, 5, 6, 7, 0, 0],
    ]
    assert rows[MASK].tolist() == [
        [False, False, True, True, True, True],
        [True] * 6,
        [True] * 4 + [False] * 2,
    ]
    assert np.all(rows[MEMORY][0] == 0) and np.all(rows[MEMORY][1] == 1)
    assert rows[NEW_STEPS].tolist() == [4, 3, 1]
    assert cutter.pending == 3  # the next episode's steps 8..10, behind its own padding
    assert first_steps(cutter.cut(steps(11, 1))) == [0]  # 2 padding + 4 steps: a full row
    assert cutter.pending == 0
