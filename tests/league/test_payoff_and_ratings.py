"""The payoff's decayed counts and the Elo ratings: what each result does to them."""

from __future__ import annotations

import json

import pytest

from joyrl_ray.league.payoff import Payoff
from joyrl_ray.league.ratings import EloRatings


def test_a_result_is_counted_for_both_players_mirrored() -> None:
    payoff = Payoff(decay=1.0)
    payoff.record("main", "main@10", 1.0)
    payoff.record("main", "main@10", 0.5)
    payoff.record("main@10", "main", 1.0)
    assert payoff.counts("main", "main@10") == (1.0, 1.0, 1.0)
    assert payoff.counts("main@10", "main") == (1.0, 1.0, 1.0)
    assert payoff.games("main", "main@10") == payoff.games("main@10", "main") == 3.0


def test_win_rate_counts_a_draw_as_half_and_is_the_prior_before_any_game() -> None:
    payoff = Payoff(decay=1.0)
    payoff.record("a", "b", 1.0)
    payoff.record("a", "b", 0.5)
    assert payoff.win_rate("a", "b") == pytest.approx(0.75)
    assert payoff.win_rate("b", "a") == pytest.approx(0.25)
    assert payoff.counts("a", "c") == (0.0, 0.0, 0.0)
    assert payoff.games("a", "c") == 0.0
    assert payoff.win_rate("a", "c") == 0.5
    assert payoff.win_rate("a", "c", prior=0.3) == 0.3


def test_with_decay_recent_losses_outweigh_a_thousand_older_wins() -> None:
    payoff = Payoff(decay=0.99)
    for _ in range(1000):
        payoff.record("main", "main@10", 1.0)
    for _ in range(100):
        payoff.record("main", "main@10", 0.0)
    # wins ~ 100 * 0.99^100 ~ 36.6, losses ~ 100 * (1 - 0.99^100) ~ 63.4
    assert payoff.win_rate("main", "main@10") < 0.4
    assert payoff.games("main", "main@10") == pytest.approx(100.0, abs=0.01)


def test_without_decay_the_win_rate_is_the_plain_ratio() -> None:
    payoff = Payoff(decay=1.0)
    for _ in range(1000):
        payoff.record("main", "main@10", 1.0)
    for _ in range(100):
        payoff.record("main", "main@10", 0.0)
    assert payoff.win_rate("main", "main@10") == pytest.approx(1000 / 1100)
    assert payoff.counts("main", "main@10") == (1000.0, 0.0, 100.0)


def test_decay_touches_only_the_pair_that_played() -> None:
    payoff = Payoff(decay=0.5)
    payoff.record("main", "main@10", 1.0)
    payoff.record("main", "main@20", 0.0)
    payoff.record("main", "main@20", 0.0)
    assert payoff.counts("main", "main@10") == (1.0, 0.0, 0.0)
    assert payoff.counts("main", "main@20") == (0.0, 0.0, 1.5)


def test_players_are_listed_first_seen_first() -> None:
    payoff = Payoff()
    payoff.record("main", "main@10", 1.0)
    payoff.record("exploiter", "main", 0.0)
    payoff.record("main@10", "main", 0.5)
    assert payoff.players() == ["main", "main@10", "exploiter"]


def test_a_game_against_oneself_or_an_odd_score_is_refused() -> None:
    payoff = Payoff()
    with pytest.raises(ValueError, match="against itself"):
        payoff.record("main", "main", 1.0)
    with pytest.raises(ValueError, match="score must be 1.0"):
        payoff.record("main", "main@10", 0.7)
    with pytest.raises(ValueError, match="decay must be in"):
        Payoff(decay=0.0)
    assert payoff.players() == []


def test_the_payoff_comes_back_from_its_json_state() -> None:
    payoff = Payoff(decay=0.9)
    for score in (1.0, 0.0, 0.5, 1.0):
        payoff.record("main", "main@10", score)
    payoff.record("exploiter", "main", 1.0)
    back = Payoff.from_state(json.loads(json.dumps(payoff.state())))
    assert back.state() == payoff.state()
    assert back.players() == payoff.players()
    assert back.counts("main@10", "main") == payoff.counts("main@10", "main")
    back.record("main", "main@10", 1.0)
    payoff.record("main", "main@10", 1.0)
    assert back.win_rate("main", "main@10") == payoff.win_rate("main", "main@10")


def test_the_winner_gains_exactly_what_the_loser_loses() -> None:
    elo = EloRatings(k=16.0)
    elo.add("a", 1100.0)
    elo.add("b", 1000.0)
    elo.record("b", "a", 1.0)
    gain, loss = elo.rating("b") - 1000.0, 1100.0 - elo.rating("a")
    assert gain > 0.0
    assert gain == pytest.approx(loss)
    # The underdog won: more than half of k.
    assert gain == pytest.approx(16.0 * (1.0 - 1.0 / (1.0 + 10.0 ** (100.0 / 400.0))))


def test_between_equals_a_win_moves_half_of_k_and_a_draw_nothing() -> None:
    elo = EloRatings(k=16.0)
    elo.record("a", "b", 0.5)
    assert elo.ratings() == {"a": 1000.0, "b": 1000.0}
    elo.record("a", "b", 1.0)
    assert elo.ratings() == {"a": 1008.0, "b": 992.0}


def test_a_player_that_keeps_beating_another_ends_rated_higher() -> None:
    elo = EloRatings()
    for _ in range(50):
        elo.record("main", "main@10", 1.0)
    assert elo.rating("main") > elo.rating("main@10")
    assert elo.rating("main") + elo.rating("main@10") == pytest.approx(2000.0)


def test_a_snapshot_added_at_its_parents_rating_keeps_it() -> None:
    elo = EloRatings()
    for _ in range(5):
        elo.record("main", "exploiter", 1.0)
    elo.add("main@10", elo.rating("main"))
    assert elo.rating("main@10") == elo.rating("main") > 1000.0
    elo.add("main@10", 500.0)  # known: no-op
    assert elo.rating("main@10") == elo.rating("main")


def test_an_unknown_player_is_rated_initial_until_its_first_game_adds_it() -> None:
    elo = EloRatings(initial=1200.0)
    assert elo.rating("nobody") == 1200.0
    assert elo.ratings() == {}
    elo.record("main", "main@10", 0.0)
    assert list(elo.ratings()) == ["main", "main@10"]


def test_the_ratings_come_back_from_their_json_state() -> None:
    elo = EloRatings(k=24.0, initial=1500.0)
    elo.record("main", "main@10", 1.0)
    elo.add("main@20", 1600.0)
    back = EloRatings.from_state(json.loads(json.dumps(elo.state())))
    assert back.state() == elo.state()
    assert back.k == 24.0 and back.initial == 1500.0
