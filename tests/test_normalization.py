"""Normalization statistics: merging, the worker's view, fencing, the checkpoint form."""

from __future__ import annotations

import numpy as np
import pytest

from joyrl_ray.control.run_normalization import RunNormalization
from joyrl_ray.normalization import (
    CHECKPOINT_KEY,
    FrozenObsNorm,
    NormSettings,
    NormStats,
    RunningMeanStd,
    obs_transform,
)
from joyrl_ray.roles.worker.normalizer import WorkerNormalizer

SETTINGS = NormSettings(obs=True, reward=True)


def data(rng: np.random.Generator, rows: int) -> np.ndarray:
    """Badly scaled columns: means and spreads orders of magnitude apart."""
    return rng.normal([1000.0, -3.0, 0.01], [500.0, 0.1, 1e-3], size=(rows, 3))


@pytest.mark.parametrize("k", [1, 2, 3, 4, 5])
def test_merged_workers_equal_one_pass_over_all_data(k: int) -> None:
    rng = np.random.default_rng(k)
    parts = [data(rng, int(n)) for n in rng.integers(1, 400, size=k)]
    merged = RunningMeanStd.zeros((3,))
    for part in parts:
        worker = RunningMeanStd.zeros((3,))
        for batch in np.array_split(part, 3):  # each worker sees its data in several steps
            worker.update(batch)
        merged.merge(worker)
    every = np.concatenate(parts)
    assert merged.count == len(every)
    np.testing.assert_allclose(merged.mean, every.mean(axis=0), rtol=1e-10)
    np.testing.assert_allclose(merged.var, every.var(axis=0), rtol=1e-8)


def coordinator() -> RunNormalization:
    return RunNormalization(SETTINGS, None)


def worker(worker_id: int) -> WorkerNormalizer:
    return WorkerNormalizer(worker_id, SETTINGS, (3,), 2, 0.9, frozen=False)


def test_worker_holds_global_plus_its_unacknowledged_deltas_without_double_counting() -> None:
    """Two workers, acks that arrive late and out of order: a worker's statistics always
    count every sample once, whatever it has been told."""
    rng = np.random.default_rng(0)
    run = coordinator()
    w0, w1 = worker(0), worker(1)
    seen: dict[int, list[np.ndarray]] = {0: [], 1: []}

    def step(w: WorkerNormalizer, rows: int) -> None:
        batch = data(rng, rows)
        seen[w.worker_id].append(batch)
        w.observe(batch)

    step(w0, 5)
    d0a = w0.take_delta()  # sent, merged below
    step(w0, 7)
    d0b = w0.take_delta()  # sent, still travelling when the ack comes
    step(w0, 3)  # not sent yet
    step(w1, 11)
    d1 = w1.take_delta()
    assert d0a is not None and d0b is not None and d1 is not None
    run.take(0, d0a)
    run.take(1, d1)
    old = run.shared()
    run.take(0, d0a)  # the same delta again (a report forwarded twice): not counted twice
    assert run.shared() is old
    w0.take_shared(old)  # holds d0a and d1, not d0b nor the unsent rows
    everything = np.concatenate(seen[0] + seen[1])
    stats = w0.stats.obs
    assert stats is not None and stats.count == len(everything)
    np.testing.assert_allclose(stats.mean, everything.mean(axis=0), rtol=1e-10)
    np.testing.assert_allclose(stats.var, everything.var(axis=0), rtol=1e-8)
    run.take(0, d0b)
    newer = run.shared()
    assert newer is not None and old is not None and newer.version > old.version
    w0.take_shared(newer)
    w0.take_shared(old)  # an older version never replaces a newer one
    assert w0.version == newer.version
    assert w0.stats.obs is not None and w0.stats.obs.count == len(everything)
    assert [d.seq for d in w0.unmerged] == []  # both merged: nothing kept to add again


def test_merged_statistics_count_every_worker_once() -> None:
    rng = np.random.default_rng(1)
    run = coordinator()
    workers = [worker(i) for i in range(3)]
    total = 0
    for round_ in range(4):
        for w in workers:
            rows = 2 + round_ + w.worker_id
            w.observe(data(rng, rows))
            total += rows
            delta = w.take_delta()
            assert delta is not None
            run.take(w.worker_id, delta)
            w.take_shared(run.shared())
    shared = run.shared()
    assert shared is not None and shared.stats.obs is not None
    assert shared.stats.obs.count == total and shared.version == 12


def test_restarted_worker_numbers_deltas_again_and_stale_ones_stay_out() -> None:
    rng = np.random.default_rng(2)
    run = coordinator()
    old = worker(0)
    old.observe(data(rng, 4))
    first = old.take_delta()
    assert first is not None
    run.take(0, first)
    run.restarted(0)
    new = worker(0)
    new.take_shared(run.shared())
    new.observe(data(rng, 6))
    again = new.take_delta()
    assert again is not None and again.seq == 1
    run.take(0, again)
    shared = run.shared()
    assert shared is not None and shared.stats.obs is not None and shared.stats.obs.count == 10


def test_reward_scale_is_the_std_of_the_discounted_return() -> None:
    norm = WorkerNormalizer(0, NormSettings(reward=True), (3,), 2, 0.5, frozen=False)
    rewards = np.array([[1.0, 2.0], [1.0, 2.0], [1.0, 2.0]], np.float32)
    ended = np.array([[False, False], [True, False], [False, False]])
    scaled = norm.rewards(rewards, ended)
    returns = np.array([1.0, 2.0, 1.5, 3.0, 1.0, 3.5])  # env 0's return restarts after row 1
    np.testing.assert_allclose(scaled, rewards / np.sqrt(returns.var() + 1e-8), rtol=1e-6)
    assert scaled.dtype == np.float32


def test_frozen_worker_applies_and_never_updates() -> None:
    rng = np.random.default_rng(3)
    run = coordinator()
    learner_side = worker(0)
    learner_side.observe(data(rng, 50))
    delta = learner_side.take_delta()
    assert delta is not None
    run.take(0, delta)
    frozen = WorkerNormalizer(1, SETTINGS, (3,), 2, 0.9, frozen=True)
    frozen.take_shared(run.shared())
    before = frozen.stats.obs.copy() if frozen.stats.obs is not None else None
    out = frozen.observe(data(rng, 20))
    assert before is not None and frozen.stats.obs is not None
    assert frozen.stats.obs.count == before.count == 50
    np.testing.assert_array_equal(frozen.stats.obs.mean, before.mean)
    assert frozen.take_delta() is None
    assert out.dtype == np.float32 and np.abs(out).max() <= SETTINGS.clip_obs


def test_checkpoint_round_trip_is_exact_and_gives_the_export_transform(tmp_path) -> None:
    import torch

    rng = np.random.default_rng(4)
    stats = NormStats.zeros(SETTINGS, (3,))
    assert stats.obs is not None and stats.ret is not None
    stats.obs.update(data(rng, 123))
    stats.ret.update(rng.normal(size=77))
    path = tmp_path / "last.pt"
    torch.save({CHECKPOINT_KEY: stats.to_checkpoint(SETTINGS, 9)}, path)
    state = torch.load(path, weights_only=True)
    back = RunNormalization(SETTINGS, state[CHECKPOINT_KEY])
    assert back.version == 9 and back.stats.obs is not None and back.stats.ret is not None
    np.testing.assert_array_equal(back.stats.obs.mean, stats.obs.mean)
    np.testing.assert_array_equal(back.stats.obs.var, stats.obs.var)
    assert back.stats.obs.count == 123 and back.stats.ret.count == 77
    transform = obs_transform(state)
    assert transform is not None
    mean, std, clip = transform
    obs = data(rng, 4)
    expected = np.clip((obs - mean) / std, -clip, clip)
    frozen = FrozenObsNorm.of(state[CHECKPOINT_KEY])
    assert frozen is not None
    np.testing.assert_allclose(frozen(obs), expected, rtol=1e-5)
    assert obs_transform({"policy": {}}) is None  # a checkpoint from before normalization
