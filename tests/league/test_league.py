"""The league: when main is frozen, who is evicted, what version workers see, and its state."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from joyrl_ray.league.league import Game, League, LeagueSettings, Member


def wins(a: str, b: str, n: int) -> list[Game]:
    return [Game(a, b, 1.0)] * n


def test_a_freeze_makes_a_member_named_by_policy_and_updates_at_mains_rating() -> None:
    league = League(LeagueSettings(main="main", exploiters=("exploiter",)))
    league.record(wins("main", "exploiter", 3))
    member, evicted = league.freeze(version=7, updates=40, env_steps=4000)
    assert member == Member("main@40", "main", version=7, updates=40, env_steps=4000)
    assert evicted == []
    assert league.members == {"main@40": member}
    assert league.active() == [member]
    assert league.ratings.rating("main@40") == league.ratings.rating("main") > 1000.0
    assert league.version == 1


def test_freezing_main_twice_at_one_update_count_is_refused() -> None:
    league = League(LeagueSettings(main="main", snapshot_every_updates=10))
    league.freeze(version=1, updates=10, env_steps=100)
    assert not league.snapshot_due(10)
    with pytest.raises(ValueError, match="'main@10' is frozen already"):
        league.freeze(version=2, updates=10, env_steps=200)
    assert list(league.members) == ["main@10"] and league.version == 1


def test_a_snapshot_is_due_every_n_updates_counted_from_the_last_freeze() -> None:
    league = League(LeagueSettings(main="main", snapshot_every_updates=10))
    assert not league.snapshot_due(9)
    assert league.snapshot_due(10)
    league.freeze(version=1, updates=12, env_steps=120)
    assert not league.snapshot_due(21)
    assert league.snapshot_due(22)
    assert not League(LeagueSettings(main="main")).snapshot_due(10_000)


def test_a_snapshot_by_win_rate_waits_for_a_full_window_and_starts_over_after_a_freeze() -> None:
    settings = LeagueSettings(main="main", snapshot_win_rate=0.7, snapshot_window=10)
    league = League(settings)
    league.freeze(version=1, updates=5, env_steps=50)
    league.record(wins("main", "main@5", 9))
    assert not league.snapshot_due(6)  # 9 wins of 9, but the window is not full
    league.record(wins("main@5", "main", 4))  # the last 10: 6 wins, 4 losses
    assert not league.snapshot_due(6)
    league.record(wins("main", "main@5", 6))  # the last 10: 4 losses, 6 wins
    assert not league.snapshot_due(6)
    league.record(wins("main", "main@5", 1))  # the last 10: 3 losses, 7 wins
    assert league.snapshot_due(6)

    league.freeze(version=2, updates=6, env_steps=60)
    assert not league.snapshot_due(7)
    league.record(wins("main", "main@6", 9))
    assert not league.snapshot_due(7)
    league.record(wins("main", "main@5", 1))
    assert league.snapshot_due(7)


def test_self_play_and_exploiter_games_stay_out_of_the_win_rate_window() -> None:
    settings = LeagueSettings(
        main="main", exploiters=("exploiter",), snapshot_win_rate=0.5, snapshot_window=3
    )
    league = League(settings)
    league.freeze(version=1, updates=5, env_steps=50)
    league.record(wins("main", "main", 5) + wins("main", "exploiter", 5))
    league.record(wins("main", "main@5", 2))
    assert not league.snapshot_due(6)
    assert league.payoff.games("main", "main") == 0.0
    assert league.ratings.rating("main@5") < 1000.0 < league.ratings.rating("main")


def test_past_max_snapshots_the_lowest_rated_but_newest_is_evicted_and_its_record_kept() -> None:
    league = League(LeagueSettings(main="main", max_snapshots=2, payoff_decay=1.0))
    league.freeze(version=1, updates=10, env_steps=100)
    league.freeze(version=2, updates=20, env_steps=200)
    league.record(wins("main", "main@10", 5) + wins("main@20", "main", 5))
    counts = league.payoff.counts("main@10", "main")

    member, evicted = league.freeze(version=3, updates=30, env_steps=300)
    assert [m.name for m in evicted] == ["main@10"]
    assert [m.name for m in league.active()] == ["main@20", "main@30"]
    assert list(league.members) == ["main@10", "main@20", "main@30"]
    assert league.members["main@10"].active is False
    assert "main@10" not in league.opponent_table()
    assert league.payoff.counts("main@10", "main") == counts
    row = next(r for r in league.rows() if r["name"] == "main@10")
    assert row["status"] == "evicted"
    assert row["games"] == 5.0 and row["vs main"] == 0.0
    assert row["rating"] == round(league.ratings.rating("main@10"), 1)


def test_the_newest_member_is_kept_even_when_it_is_rated_lowest() -> None:
    league = League(LeagueSettings(main="main", max_snapshots=1))
    league.freeze(version=1, updates=10, env_steps=100)
    league.record(wins("main@10", "main", 10))
    _, evicted = league.freeze(version=2, updates=20, env_steps=200)
    assert league.ratings.rating("main@20") < league.ratings.rating("main@10")
    assert [m.name for m in evicted] == ["main@10"]
    assert [m.name for m in league.active()] == ["main@20"]


def test_a_freeze_publishes_the_table_without_the_evicted() -> None:
    league = League(LeagueSettings(main="main", max_snapshots=1, self_play_share=0.2))
    league.freeze(version=1, updates=10, env_steps=100)
    league.freeze(version=2, updates=20, env_steps=200)
    assert league.version == 2
    assert league.opponent_table() == pytest.approx({"main": 0.2, "main@20": 0.8})
    assert not league.table_changed()
    assert league.version == 2


def test_the_table_is_republished_only_when_it_moves_past_the_tolerance() -> None:
    league = League(LeagueSettings(main="main", payoff_decay=1.0, self_play_share=0.2))
    league.freeze(version=1, updates=10, env_steps=100)
    league.freeze(version=2, updates=20, env_steps=200)
    for name in ("main@10", "main@20"):  # win rate 0.5, as the prior assumed
        league.record(wins("main", name, 50) + wins(name, "main", 50))
    assert not league.table_changed() and league.version == 2

    league.record(wins("main", "main@10", 1))  # 51 of 101: the table moves by ~0.004
    assert not league.table_changed() and league.version == 2

    league.record(wins("main", "main@10", 100))  # main@10 is easy now: most games to main@20
    assert not league.table_changed(tolerance=0.5)  # moved, but by less than 0.5
    assert league.version == 2
    assert league.table_changed()
    assert league.version == 3
    assert not league.table_changed()
    assert league.opponent_table()["main@20"] > 0.6


def test_the_strongest_is_the_highest_rated_live_policy_or_active_member() -> None:
    league = League(LeagueSettings(main="main", exploiters=("exploiter",), max_snapshots=1))
    assert league.strongest() == "main"  # all equal: main first
    league.record(wins("exploiter", "main", 5))
    assert league.strongest() == "exploiter"
    league.freeze(version=1, updates=10, env_steps=100)
    league.record(wins("main@10", "main", 30))
    assert league.strongest() == "main@10"
    league.freeze(version=2, updates=20, env_steps=200)  # main@10 evicted
    assert league.strongest() == "exploiter"


def test_rows_list_every_member_then_the_live_policies() -> None:
    league = League(LeagueSettings(main="main", exploiters=("exploiter",), payoff_decay=1.0))
    league.freeze(version=3, updates=10, env_steps=100)
    league.record(wins("main@10", "main", 3) + wins("main", "main@10", 1))
    league.record(wins("exploiter", "main", 2))
    rows = league.rows()
    assert [r["name"] for r in rows] == ["main@10", "main", "exploiter"]
    assert rows[0] == {
        "name": "main@10",
        "policy": "main",
        "status": "active",
        "frozen_at_updates": 10,
        "frozen_at_env_steps": 100,
        "rating": round(league.ratings.rating("main@10"), 1),
        "games": 4.0,
        "vs main": 0.75,
    }
    assert rows[1]["status"] == "training" and rows[1]["frozen_at_updates"] == ""
    assert rows[1]["games"] == 6.0 and rows[1]["vs main"] == ""
    assert rows[2]["policy"] == "exploiter" and rows[2]["vs main"] == 1.0


def test_games_naming_strangers_or_an_exploiter_off_main_are_refused_whole() -> None:
    league = League(LeagueSettings(main="main", exploiters=("exploiter",)))
    league.freeze(version=1, updates=10, env_steps=100)
    with pytest.raises(ValueError, match="'main@99' is not in the league"):
        league.record(wins("main", "main@10", 1) + wins("main", "main@99", 1))
    with pytest.raises(ValueError, match="exploiter 'exploiter' plays only against 'main'"):
        league.record(wins("main@10", "exploiter", 1))
    with pytest.raises(ValueError, match="score must be"):
        Game("main", "main@10", 2.0)
    assert league.payoff.players() == []


def busy_league(settings: LeagueSettings) -> League:
    """Games, three freezes with an eviction, a half-full window and a republished table."""
    league = League(settings)
    league.freeze(version=1, updates=10, env_steps=1000)
    league.record(wins("main", "main@10", 7) + wins("main@10", "main", 2))
    league.record(wins("exploiter", "main", 3) + [Game("main", "exploiter", 0.5)])
    league.freeze(version=2, updates=20, env_steps=2000)
    league.record(wins("main@20", "main", 4) + [Game("main", "main@20", 0.5)])
    league.freeze(version=3, updates=30, env_steps=3000)
    league.record(wins("main", "main@30", 2) + wins("main@20", "main@30", 1))
    league.table_changed(tolerance=0.0)
    return league


def test_a_league_comes_back_whole_from_its_json_state() -> None:
    settings = LeagueSettings(
        main="main",
        exploiters=("exploiter",),
        snapshot_win_rate=0.6,
        snapshot_window=4,
        max_snapshots=2,
        pfsp_weighting="variance",
    )
    league = busy_league(settings)
    assert [m.name for m in league.members.values() if not m.active] == ["main@10"]
    state = league.state()
    back = League.from_state(settings, json.loads(json.dumps(state)))

    assert back.state() == state
    assert back.rows() == league.rows()
    assert back.opponent_table() == league.opponent_table()
    assert back.strongest() == league.strongest()
    assert back.version == league.version
    # ... and both go on alike: the window, the published table and the freeze count.
    for lg in (league, back):
        lg.record(wins("main", "main@30", 2))
    assert back.snapshot_due(31) == league.snapshot_due(31) is True
    assert back.table_changed() == league.table_changed()
    for lg in (league, back):
        lg.freeze(version=4, updates=31, env_steps=3100)
    assert back.state() == league.state()


def test_exploiters_given_as_a_list_become_a_tuple() -> None:
    settings = LeagueSettings(main="main", exploiters=["exploiter"])  # type: ignore[arg-type]
    assert settings.exploiters == ("exploiter",)


@pytest.mark.parametrize(
    ("field", "value", "allowed"),
    [
        ("opponents", "league", "opponents must be one of self_play, uniform, pfsp"),
        ("pfsp_weighting", "linear", "pfsp_weighting must be one of squared, variance"),
        ("self_play_share", 1.5, "self_play_share must be in [0, 1]"),
        ("self_play_share", -0.1, "self_play_share must be in [0, 1]"),
        ("max_snapshots", 0, "max_snapshots must be >= 1"),
        ("snapshot_window", 0, "snapshot_window must be >= 1"),
        ("payoff_decay", 0.0, "payoff_decay must be in (0, 1]"),
        ("payoff_decay", 1.01, "payoff_decay must be in (0, 1]"),
        ("snapshot_win_rate", 0.0, "snapshot_win_rate must be in (0, 1] or None"),
        ("snapshot_every_updates", -1, "snapshot_every_updates must be >= 0"),
        ("elo_k", 0.0, "elo_k must be > 0"),
        ("exploiters", ("main",), "exploiters must be distinct policies other than main"),
        ("exploiters", ("x", "x"), "exploiters must be distinct policies other than main"),
        ("exploiters", ("x@1",), "exploiters must be policy ids non-empty and without '@'"),
        ("main", "", "main must be a policy id non-empty and without '@'"),
    ],
)
def test_bad_settings_are_refused_naming_the_field_and_what_is_allowed(
    field: str, value: Any, allowed: str
) -> None:
    kwargs: dict[str, Any] = {"main": "main", field: value}
    with pytest.raises(ValueError, match=re.escape(f"LeagueSettings.{allowed}")) as raised:
        LeagueSettings(**kwargs)
    message = str(raised.value)
    assert "\n" not in message and repr(value) in message
