"""Stacked frames stored once each: the replay rebuilds exactly the observations it was given."""

from __future__ import annotations

import numpy as np
from gymnasium.vector import AutoresetMode, SyncVectorEnv
from gymnasium.wrappers import FrameStackObservation

from joyrl_ray.batch import NEXT_OBS, OBS
from joyrl_ray.data.buffers.frames import FrameEncoder, FrameStore, frame_capacity
from joyrl_ray.data.buffers.nstep import NStepFolder
from joyrl_ray.data.buffers.replay import ReplayBuffer
from tests.support.frame_envs import CountingFramesEnv

STACK, N_ENVS, N_STEP, GAMMA = 4, 3, 3, 0.9


def chunks(n_chunks: int, length: int, seed: int = 0):
    """``[time, env]`` chunks as a worker writes them (true final obs in ``next_obs``)."""
    envs = SyncVectorEnv(
        [
            lambda i=i: FrameStackObservation(CountingFramesEnv(length=4 + i), STACK)
            for i in range(N_ENVS)
        ],
        autoreset_mode=AutoresetMode.SAME_STEP,
    )
    obs, _ = envs.reset(seed=seed)
    rng = np.random.default_rng(seed)
    for _ in range(n_chunks):
        steps = []
        for _ in range(length):
            actions = rng.integers(0, 2, N_ENVS)
            nxt, rewards, term, trunc, info = envs.step(actions)
            true_next = nxt.copy()
            for i in np.flatnonzero(term | trunc):
                true_next[i] = info["final_obs"][i]
            steps.append(
                {
                    "obs": obs,
                    "actions": actions,
                    "rewards": rewards,
                    "next_obs": true_next,
                    "terminated": term,
                    "truncated": trunc,
                }
            )
            obs = nxt
        yield {k: np.stack([s[k] for s in steps]) for k in steps[0]}


def test_frames_sent_once_rebuild_every_observation_exactly() -> None:
    plain, framed = NStepFolder(N_ENVS, N_STEP, GAMMA), NStepFolder(N_ENVS, N_STEP, GAMMA)
    encoder, store = FrameEncoder(N_ENVS, STACK), FrameStore(capacity=10_000)
    expected, rebuilt, frames_sent, steps = [], [], 0, 0
    for chunk in chunks(n_chunks=6, length=7):
        expected.append(plain.fold(chunk))
        encoded, ids, pixels = encoder.encode(chunk)
        store.add(source=0, ids=ids, pixels=pixels)
        out = framed.fold(encoded)
        out[OBS] = store.gather(store.translate(0, out[OBS]))
        out[NEXT_OBS] = store.gather(store.translate(0, out[NEXT_OBS]))
        rebuilt.append(out)
        frames_sent += len(ids)
        steps += chunk["rewards"].size
    for want, got in zip(expected, rebuilt, strict=True):
        assert want.keys() == got.keys()
        for key in want:
            np.testing.assert_array_equal(want[key], got[key], err_msg=key)
    # One new frame per env step, plus a whole stack per episode start: far below the
    # 2 x STACK frames per transition that storing obs and next_obs would take.
    assert steps <= frames_sent < 2.5 * steps


def test_a_restarted_worker_starts_a_new_stream_of_ids() -> None:
    store = FrameStore(capacity=100)
    pixels = np.arange(5 * 2 * 2, dtype=np.uint8).reshape(5, 2, 2)
    store.add(0, np.arange(5), pixels)
    store.add(0, np.arange(3), pixels[:3] + 100)  # the restarted worker counts from 0 again
    np.testing.assert_array_equal(
        store.gather(store.translate(0, np.array([0, 2]))), pixels[[0, 2]] + 100
    )


def test_an_atari_replay_of_100k_transitions_allocates_under_1_5_gb() -> None:
    """The arrays a 100k replay of 84x84 stacks really allocates (pages stay untouched).

    Storing both stacks per transition would allocate 5.6 GB here.
    """
    side, steps = 84, 8
    rng = np.random.default_rng(0)
    new_frames = rng.integers(0, 256, (steps + STACK, 1, side, side), dtype=np.uint8)
    stacks = np.stack([new_frames[t : t + STACK] for t in range(steps + 1)])  # [T+1, E, k, H, W]
    stacks = stacks.transpose(0, 2, 1, 3, 4).reshape(steps + 1, 1, STACK, side, side)
    chunk = {
        OBS: stacks[:-1],
        NEXT_OBS: stacks[1:],
        "actions": np.zeros((steps, 1), np.int64),
        "rewards": np.zeros((steps, 1), np.float32),
        "terminated": np.zeros((steps, 1), bool),
        "truncated": np.zeros((steps, 1), bool),
    }
    encoded, ids, pixels = FrameEncoder(n_envs=1, stack=STACK).encode(chunk)
    store, replay = FrameStore(frame_capacity(100_000)), ReplayBuffer(100_000)
    store.add(0, ids, pixels)
    replay.add({key: np.asarray(value)[:, 0] for key, value in encoded.items()})
    assert store.frames is not None
    allocated = store.frames.nbytes + sum(c.nbytes for c in replay.columns.values())
    assert allocated < 1.5e9, allocated
