"""Opponent tables and draws: PFSP meets hard snapshots more often, the other rules as named."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from joyrl_ray.league.draws import OPPONENT_RULES, draw, opponent_table, pfsp_weight
from joyrl_ray.league.league import Game, League, LeagueSettings

#: main's wins and losses against each snapshot: win rates 0.9, 0.5 and 0.1.
RECORDS = {"main@10": (9, 1), "main@20": (5, 5), "main@30": (1, 9)}
WIN_RATES = {"main@10": 0.9, "main@20": 0.5, "main@30": 0.1}


def league_with_three_snapshots(**settings: Any) -> League:
    """A league whose main has played real games against three snapshots (no decay, so the
    win rates are exactly WIN_RATES)."""
    league = League(LeagueSettings(main="main", payoff_decay=1.0, **settings))
    for updates in (10, 20, 30):
        league.freeze(version=updates, updates=updates, env_steps=100 * updates)
    for name, (wins, losses) in RECORDS.items():
        league.record([Game("main", name, 1.0)] * wins + [Game(name, "main", 1.0)] * losses)
    return league


def frequencies(table: dict[str, float], n: int, seed: int = 0) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    drawn = [draw(table, rng) for _ in range(n)]
    return {name: drawn.count(name) / n for name in table}


@pytest.mark.parametrize("weighting", ["squared", "variance"])
def test_pfsp_draws_each_snapshot_as_often_as_its_weighting_says(weighting: str) -> None:
    league = league_with_three_snapshots(
        opponents="pfsp", pfsp_weighting=weighting, self_play_share=0.2
    )
    for name, p in WIN_RATES.items():
        assert league.payoff.win_rate("main", name) == pytest.approx(p)
    weights = {name: pfsp_weight(p, weighting) for name, p in WIN_RATES.items()}
    expected = {"main": 0.2} | {n: 0.8 * w / sum(weights.values()) for n, w in weights.items()}

    table = league.opponent_table()
    assert table == pytest.approx(expected)
    seen = frequencies(table, 20_000)
    for name, share in expected.items():
        assert seen[name] == pytest.approx(share, abs=0.01), (name, seen)


def test_pfsp_squared_draws_the_hardest_snapshot_most_often() -> None:
    league = league_with_three_snapshots(pfsp_weighting="squared", self_play_share=0.2)
    seen = frequencies(league.opponent_table(), 20_000)
    assert max(seen, key=seen.__getitem__) == "main@30"
    assert seen["main@30"] > seen["main@20"] > seen["main@10"]


def test_pfsp_variance_prefers_the_even_match() -> None:
    league = league_with_three_snapshots(pfsp_weighting="variance")
    table = league.opponent_table()
    assert table["main@20"] > table["main@10"] == pytest.approx(table["main@30"])


def test_uniform_spreads_what_self_play_leaves_evenly_over_the_snapshots() -> None:
    league = league_with_three_snapshots(opponents="uniform", self_play_share=0.4)
    table = league.opponent_table()
    assert table == pytest.approx({"main": 0.4, "main@10": 0.2, "main@20": 0.2, "main@30": 0.2})
    seen = frequencies(table, 20_000)
    for name, share in table.items():
        assert seen[name] == pytest.approx(share, abs=0.01)


def test_the_self_play_rule_meets_only_the_live_weights() -> None:
    league = league_with_three_snapshots(opponents="self_play")
    assert league.opponent_table() == {"main": 1.0}
    assert set(frequencies(league.opponent_table(), 1000)) == {"main"}


@pytest.mark.parametrize("rule", OPPONENT_RULES)
def test_with_no_snapshots_every_rule_meets_itself(rule: str) -> None:
    league = League(LeagueSettings(main="main", opponents=rule, self_play_share=0.0))
    assert league.opponent_table() == {"main": 1.0}
    rng = np.random.default_rng(0)
    assert {draw(league.opponent_table(), rng) for _ in range(100)} == {"main"}


def test_pfsp_spreads_evenly_once_every_snapshot_is_beaten_for_good() -> None:
    table = opponent_table(
        {"main@10": 1.0, "main@20": 1.0},
        rule="pfsp",
        weighting="squared",
        self_play_share=0.5,
        self_name="main",
    )
    assert table == pytest.approx({"main": 0.5, "main@10": 0.25, "main@20": 0.25})


def test_a_table_sums_to_one_and_leaves_out_what_is_never_drawn() -> None:
    table = opponent_table(
        {"main@10": 1.0, "main@20": 0.25},
        rule="pfsp",
        weighting="squared",
        self_play_share=0.0,
        self_name="main",
    )
    assert table == {"main@20": 1.0}
    table = opponent_table(
        {"main@10": 0.3, "main@20": 0.6, "main@30": 0.8},
        rule="pfsp",
        weighting="variance",
        self_play_share=0.1,
        self_name="main",
    )
    assert sum(table.values()) == pytest.approx(1.0)


def test_pfsp_weights_follow_their_formulas() -> None:
    assert pfsp_weight(0.25, "squared") == pytest.approx(0.5625)
    assert pfsp_weight(0.25, "variance") == pytest.approx(0.1875)
    with pytest.raises(ValueError, match="one of squared, variance"):
        pfsp_weight(0.5, "linear")
    with pytest.raises(ValueError, match="one of self_play, uniform, pfsp"):
        opponent_table({}, rule="league", weighting="squared", self_play_share=0.2, self_name="m")


def test_a_draw_depends_only_on_the_rng_state() -> None:
    table = {"main": 0.2, "main@10": 0.5, "main@20": 0.3}
    first = [draw(table, np.random.default_rng(7)) for _ in range(5)]
    assert len(set(first)) == 1
    rng_a, rng_b = np.random.default_rng(3), np.random.default_rng(3)
    assert [draw(table, rng_a) for _ in range(200)] == [draw(table, rng_b) for _ in range(200)]


def test_an_entry_of_probability_zero_is_never_drawn() -> None:
    rng = np.random.default_rng(0)
    table = {"main": 0.0, "main@10": 1.0, "main@20": 0.0}
    assert {draw(table, rng) for _ in range(1000)} == {"main@10"}
    with pytest.raises(ValueError, match="positive probability"):
        draw({"main": 0.0}, rng)
