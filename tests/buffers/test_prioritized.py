"""Proportional prioritized replay: sampling frequencies, IS weights, beta, stale write-backs."""

import numpy as np
import pytest

from joyrl_ray.data.buffers import PrioritizedReplayBuffer


def rows(n: int, start: int = 0) -> dict[str, np.ndarray]:
    return {"actions": np.arange(start, start + n, dtype=np.int64)}


def test_new_rows_get_max_priority_or_given_priorities() -> None:
    buf = PrioritizedReplayBuffer(8, alpha=0.5, eps=0.0, seed=0)
    buf.add(rows(2))
    assert np.allclose(buf.tree.get(np.arange(2)), 1.0)
    buf.add(rows(2, 2), priorities=np.array([16.0, -4.0]))  # Ape-X initial |td| priorities
    assert np.allclose(buf.tree.get(np.arange(4)), [1.0, 1.0, 4.0, 2.0])
    assert buf.max_priority == 4.0
    buf.add(rows(1, 4))
    assert buf.tree.get(np.array([4]))[0] == 4.0
    stats = buf.stats()
    assert stats["max_priority"] == 4.0 and stats["beta"] == pytest.approx(0.4)
    assert stats["size"] == 5


def test_oversized_add_keeps_newest_priorities() -> None:
    buf = PrioritizedReplayBuffer(3, alpha=1.0, eps=0.0, seed=0)
    slots = buf.add(rows(5), priorities=np.arange(1.0, 6.0))
    assert np.allclose(buf.tree.get(slots), [3.0, 4.0, 5.0])
    assert list(buf.columns["actions"][slots]) == [2, 3, 4]


def test_sampling_frequencies_follow_priority_alpha() -> None:
    alpha = 0.6
    raw = np.array([0.1, 0.5, 1.0, 2.0, 4.0, 8.0, 0.3, 3.0])
    buf = PrioritizedReplayBuffer(8, alpha=alpha, eps=0.0, seed=123)
    buf.add(rows(8), priorities=raw)
    draws = np.concatenate([buf.sample_slots(1000)[0] for _ in range(200)])
    counts = np.bincount(draws, minlength=8)
    expected = raw**alpha / (raw**alpha).sum() * len(draws)
    # stratification only lowers the variance below multinomial; 5 sigma of that is loose
    assert np.all(np.abs(counts - expected) < 5 * np.sqrt(expected))
    assert np.all(np.abs(counts / expected - 1) < 0.03)


def test_is_weights_match_hand_computation() -> None:
    # priorities 1, 4, 9, 16 with alpha = 0.5 -> p = 1, 2, 3, 4; total 10; N = 4; beta = 0.4
    buf = PrioritizedReplayBuffer(4, alpha=0.5, beta_start=0.4, eps=0.0, seed=0)
    buf.add(rows(4), priorities=np.array([1.0, 4.0, 9.0, 16.0]))
    slots, weights = buf.sample_slots(400)
    assert weights.dtype == np.float32
    assert set(slots.tolist()) == {0, 1, 2, 3}
    probs = np.array([0.1, 0.2, 0.3, 0.4])
    raw_w = (4 * probs) ** -0.4  # (N P(i))^-beta
    expected = raw_w / raw_w.max()  # max weight is that of the least likely row
    assert np.allclose(expected, [1.0, 2**-0.4, 3**-0.4, 4**-0.4])
    assert np.allclose(weights, expected[slots], rtol=1e-6)


def test_beta_anneals_to_one_over_sampled_rows() -> None:
    buf = PrioritizedReplayBuffer(16, beta_start=0.4, beta_annealing_samples=1000, seed=0)
    buf.add(rows(16))
    assert buf.beta == pytest.approx(0.4)
    buf.sample(500)
    assert buf.beta == pytest.approx(0.7)
    buf.sample(500)
    assert buf.beta == 1.0
    buf.sample(500)
    assert buf.beta == 1.0 and buf.stats()["beta"] == 1.0


def test_stale_priority_write_back_is_ignored() -> None:
    buf = PrioritizedReplayBuffer(4, alpha=1.0, eps=0.0, seed=0)
    buf.add(rows(4))
    old = buf.sample(8)
    buf.add(rows(4, 4), priorities=np.array([2.0, 3.0, 4.0, 5.0]))  # overwrites every slot
    applied = buf.update_priorities(old["slots"], old["generations"], np.full(8, 100.0))
    assert applied == 0
    assert np.allclose(buf.tree.get(np.arange(4)), [2.0, 3.0, 4.0, 5.0])
    assert buf.max_priority == 5.0

    fresh = buf.sample(8)
    applied = buf.update_priorities(fresh["slots"], fresh["generations"], np.full(8, 7.0))
    assert applied == 8
    assert np.allclose(buf.tree.get(np.unique(fresh["slots"])), 7.0)
    assert buf.max_priority == 7.0


def test_partially_stale_write_back() -> None:
    buf = PrioritizedReplayBuffer(4, alpha=1.0, eps=0.5, seed=0)
    buf.add(rows(4))
    slots, gens = np.arange(4), buf.generations.copy()
    buf.add(rows(1, 4))  # overwrites slot 0 only
    applied = buf.update_priorities(slots, gens, np.array([-9.0, -1.0, 0.0, 2.0]))
    assert applied == 3
    assert np.allclose(buf.tree.get(slots), [1.0, 1.5, 0.5, 2.5])  # slot 0 keeps max prio


def test_one_write_back_of_several_batches_ends_as_one_write_back_per_batch() -> None:
    # A learner sends one round's batches in one call; a row sampled in two of them must
    # end with its later priority, as two calls in a row would leave it.
    per_batch = PrioritizedReplayBuffer(16, alpha=1.0, eps=0.0, seed=0)
    per_round = PrioritizedReplayBuffer(16, alpha=1.0, eps=0.0, seed=0)
    for buf in (per_batch, per_round):
        buf.add(rows(16))
    gens = per_batch.generations.copy()
    first, second = np.array([3, 5, 3, 9]), np.array([5, 9, 12, 3])
    first_prio, second_prio = np.array([2.0, 8.0, 4.0, 1.0]), np.array([6.0, 0.5, 3.0, 7.0])
    per_batch.update_priorities(first, gens[first], first_prio)
    per_batch.update_priorities(second, gens[second], second_prio)
    both = np.concatenate([first, second])
    applied = per_round.update_priorities(
        both, gens[both], np.concatenate([first_prio, second_prio])
    )
    assert applied == 8
    assert np.array_equal(per_round.tree.get(np.arange(16)), per_batch.tree.get(np.arange(16)))
    assert per_round.tree.total() == per_batch.tree.total()
    assert per_round.max_priority == per_batch.max_priority == 8.0
