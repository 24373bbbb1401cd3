"""The ``league`` section: self-play against frozen copies of a learning policy.

A league needs a multi-agent game (its ``multi_agent`` section names the policies) and a
``main`` policy that learns. The league freezes ``main``'s weights as a snapshot every
``snapshot_every_updates`` of its updates (or once its win rate over the last
``snapshot_window`` games against its opponents reaches ``snapshot_win_rate``), and deals
each game's seats: ``main`` in one seat (drawn per game), its opponent in the others, drawn
from its newest weights (self-play) and the snapshots by ``opponents``::

    league:
      main: main
      snapshot_every_updates: 20
      opponents: pfsp          # self_play, uniform or pfsp
      pfsp_weighting: squared  # (1 - p)^2: the opponents it beats least most often
      self_play_share: 0.2
      max_snapshots: 20        # past it the lowest-rated snapshot is evicted (results kept)

The checks that need the env's agents run with the plan (:func:`league_settings`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from joyrl_ray.league.league import LeagueSettings


@dataclass
class LeagueConfig:
    """Self-play with frozen snapshots of ``main`` (see the module docstring)."""

    main: str | None = None  # the learning policy the league trains
    snapshot_every_updates: int = 0  # freeze main every N of its updates (0: not by count)
    snapshot_win_rate: float | None = None  # ... or when its recent win rate reaches this
    snapshot_window: int = 100  # ... over this many of its last games (self-play left out)
    opponents: str = "pfsp"  # self_play, uniform or pfsp
    pfsp_weighting: str = "squared"  # pfsp: squared (1-p)^2 or variance p(1-p)
    self_play_share: float = 0.2  # of main's games, against its own newest weights
    max_snapshots: int = 20  # snapshots kept in play; past it the lowest-rated goes
    payoff_decay: float = 0.99  # each new result of a pair first scales its counts by this
    elo_k: float = 16.0  # the Elo K factor: the most rating points one game moves
    exploiters: list[str] = field(default_factory=list)  # learning policies that play only main
    exploiter_share: float = 0.25  # of all games, an exploiter's against main's newest weights
    test_opponent: str | None = None  # test mode: a snapshot of load_path's run main plays
    test_player: str | None = None  # test mode: a snapshot of that run to play in main's place
    test_opening_moves: int = 2  # test mode: a game's first moves at random (greedy games differ)


class LeagueConfigError(ValueError):
    """A ``league`` section that does not fit the run; the one line to show."""


def league_settings(
    section: LeagueConfig,
    policies: dict[str, bool],
    agents: tuple[str, ...],
    same_spaces: bool,
) -> LeagueSettings:
    """The checked settings of ``section`` for a game with ``agents`` and ``policies``
    (name -> whether it learns); ``same_spaces``: every agent has the same spaces, so that
    ``main`` can take any seat."""
    learning = [p for p, learns in policies.items() if learns]
    if section.main is None:
        raise LeagueConfigError(
            "league.main is not set: a league freezes and plays copies of one learning "
            f"policy; allowed: {', '.join(learning)}"
        )
    if section.main not in learning:
        raise LeagueConfigError(
            f"league.main={section.main!r} is not a learning policy; allowed: {', '.join(learning)}"
        )
    for exploiter in section.exploiters:
        if exploiter == section.main or exploiter not in learning:
            allowed = [p for p in learning if p != section.main]
            raise LeagueConfigError(
                f"league.exploiters: {exploiter!r} is not a learning policy beside main; "
                f"allowed: {', '.join(allowed) or 'none (add one to multi_agent.policies)'}"
            )
    if section.exploiters and section.exploiter_share <= 0:
        raise LeagueConfigError(
            f"league.exploiters={list(section.exploiters)} with league.exploiter_share="
            f"{section.exploiter_share}: an exploiter plays only main, in that share of the "
            "games, so it would never play; allowed: a share in (0, 1]"
        )
    if section.snapshot_every_updates <= 0 and section.snapshot_win_rate is None:
        raise LeagueConfigError(
            "league: no snapshot rule, so the league would never grow; set "
            "league.snapshot_every_updates (e.g. 20) or league.snapshot_win_rate (e.g. 0.7)"
        )
    if len(agents) < 2:
        raise LeagueConfigError(
            f"league: the env has one agent ({', '.join(agents)}); a league needs a game of "
            "two seats or more"
        )
    if not same_spaces:
        raise LeagueConfigError(
            "league: the env's agents have different spaces, so a policy cannot take every "
            "seat; a league needs a symmetric game (e.g. connect_four_v3, tictactoe_v3)"
        )
    others = [p for p in policies if p != section.main and p not in section.exploiters]
    if others:
        raise LeagueConfigError(
            f"league: multi_agent.policies has {', '.join(others)} beside league.main="
            f"{section.main}; in a league main takes one seat and the league deals the others "
            "(its snapshots and newest weights): remove them (multi_agent.eval_opponents: "
            "[random] still evaluates against random play)"
        )
    try:
        shared = {f.name for f in fields(LeagueSettings)}  # the section's keys of that name
        return LeagueSettings(**{key: getattr(section, key) for key in shared})
    except ValueError as exc:  # "LeagueSettings.<field> ...": the section's key
        raise LeagueConfigError(str(exc).replace("LeagueSettings.", "league.", 1)) from None
