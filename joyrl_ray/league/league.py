"""The league: a main policy, its exploiters and the frozen snapshots of main they meet.

It decides, from game results alone, when main is frozen, which snapshots stay active and
with which probabilities main meets each of them. It holds no weights and starts nothing:
the runtime asks it and moves the weights. Players are named by strings: a trained policy's
id (``main``, its live weights) or a snapshot's member name (``main@40``, main's weights at
40 updates).
"""

from __future__ import annotations

from collections import deque
from dataclasses import asdict, dataclass
from typing import Any

from joyrl_ray.league.draws import OPPONENT_RULES, PFSP_WEIGHTINGS, opponent_table
from joyrl_ray.league.payoff import Payoff, slot_of
from joyrl_ray.league.ratings import EloRatings

#: Between a policy id and its update count in a member's name.
MEMBER_SEPARATOR = "@"


@dataclass(frozen=True)
class LeagueSettings:
    """What shapes a league; the run's config gives them, so a league's state leaves them out."""

    main: str
    """The trained policy the league is built around."""
    exploiters: tuple[str, ...] = ()
    """Trained policies that play only against ``main``'s live weights."""
    exploiter_share: float = 0.25
    """The share of games an exploiter (drawn evenly among them) plays against main."""
    snapshot_every_updates: int = 0
    """Freeze ``main`` every this many of its updates (0: never by count)."""
    snapshot_win_rate: float | None = None
    """Or freeze ``main`` once its win rate over its last ``snapshot_window`` games against
    snapshots reaches this (None: never by win rate)."""
    snapshot_window: int = 100
    """Games in the window of the win-rate rule."""
    opponents: str = "pfsp"
    """How main's opponents are drawn: one of ``draws.OPPONENT_RULES``."""
    pfsp_weighting: str = "squared"
    """The PFSP weighting: one of ``draws.PFSP_WEIGHTINGS``."""
    self_play_share: float = 0.2
    """The share of main's games against its own live weights once snapshots exist."""
    max_snapshots: int = 20
    """Active snapshots kept; past it the lowest-rated one other than the newest is evicted."""
    payoff_decay: float = 0.99
    """Each new result of a pair first multiplies that pair's counts by this."""
    elo_k: float = 16.0
    """The Elo K factor: the most rating points one game moves."""

    def __post_init__(self) -> None:
        # A yaml list becomes the tuple the field promises.
        object.__setattr__(self, "exploiters", tuple(self.exploiters))
        problems = _settings_problems(self)
        if problems:
            raise ValueError(f"LeagueSettings.{problems[0]}")


def _settings_problems(s: LeagueSettings) -> list[str]:
    """One line per bad field: the field, what is allowed and what was given."""
    problems = []
    rule = f"non-empty and without {MEMBER_SEPARATOR!r} (it marks a snapshot's name)"
    if not s.main or MEMBER_SEPARATOR in s.main:
        problems.append(f"main must be a policy id {rule}, got {s.main!r}")
    if any(not name or MEMBER_SEPARATOR in name for name in s.exploiters):
        problems.append(f"exploiters must be policy ids {rule}, got {s.exploiters!r}")
    if s.main in s.exploiters or len(set(s.exploiters)) != len(s.exploiters):
        problems.append(
            f"exploiters must be distinct policies other than main {s.main!r}, got {s.exploiters!r}"
        )
    if not 0.0 <= s.exploiter_share <= 1.0:
        problems.append(f"exploiter_share must be in [0, 1], got {s.exploiter_share!r}")
    if s.snapshot_every_updates < 0:
        problems.append(f"snapshot_every_updates must be >= 0, got {s.snapshot_every_updates!r}")
    if s.snapshot_win_rate is not None and not 0.0 < s.snapshot_win_rate <= 1.0:
        problems.append(f"snapshot_win_rate must be in (0, 1] or None, got {s.snapshot_win_rate!r}")
    if s.snapshot_window < 1:
        problems.append(f"snapshot_window must be >= 1, got {s.snapshot_window!r}")
    if s.opponents not in OPPONENT_RULES:
        problems.append(
            f"opponents must be one of {', '.join(OPPONENT_RULES)}, got {s.opponents!r}"
        )
    if s.pfsp_weighting not in PFSP_WEIGHTINGS:
        problems.append(
            f"pfsp_weighting must be one of {', '.join(PFSP_WEIGHTINGS)}, got {s.pfsp_weighting!r}"
        )
    if not 0.0 <= s.self_play_share <= 1.0:
        problems.append(f"self_play_share must be in [0, 1], got {s.self_play_share!r}")
    if s.max_snapshots < 1:
        problems.append(f"max_snapshots must be >= 1, got {s.max_snapshots!r}")
    if not 0.0 < s.payoff_decay <= 1.0:
        problems.append(f"payoff_decay must be in (0, 1], got {s.payoff_decay!r}")
    if not s.elo_k > 0.0:
        problems.append(f"elo_k must be > 0, got {s.elo_k!r}")
    return problems


@dataclass
class Member:
    """A frozen snapshot of a trained policy: fixed weights the league keeps as an opponent."""

    name: str
    """``f"{policy}@{updates}"``."""
    policy: str
    """The trained policy it is a snapshot of."""
    version: int
    """That policy's weights version when frozen."""
    updates: int
    env_steps: int
    active: bool = True
    """False once evicted: no longer drawn, but its results and rating stay."""


@dataclass(frozen=True)
class Game:
    """One finished game between two players; ``score`` is a's (1 win, 0.5 draw, 0 loss)."""

    a: str
    b: str
    score: float

    def __post_init__(self) -> None:
        slot_of(self.score)


class League:
    """A main policy, its exploiters and the frozen snapshots of main they play against.

    ``version`` grows by one whenever what workers must know changes: a freeze (with the
    evictions it causes) or an opponent table that moved past ``table_changed``'s tolerance.
    """

    def __init__(self, settings: LeagueSettings) -> None:
        self.settings = settings
        self.members: dict[str, Member] = {}
        self.payoff = Payoff(decay=settings.payoff_decay)
        self.ratings = EloRatings(k=settings.elo_k)
        for name in (settings.main, *settings.exploiters):
            self.ratings.add(name)
        self.version = 0
        # main's scores in its latest games against snapshots, for the win-rate rule.
        self._window: deque[float] = deque(maxlen=settings.snapshot_window)
        self._last_freeze_updates = 0
        self._published = self.opponent_table()

    def active(self) -> list[Member]:
        """The snapshots still drawn as opponents, in freezing order."""
        return [m for m in self.members.values() if m.active]

    def record(self, games: list[Game]) -> None:
        """Results into the payoff, the ratings and main's win-rate window.

        Main against its own live weights is left out: it tells nothing of anyone's
        strength. A game naming a player the league does not know, or an exploiter against
        anyone but main, is refused before any game of the list is counted.
        """
        for game in games:
            self._check(game)
        for game in games:
            if game.a == game.b:
                continue
            self.payoff.record(game.a, game.b, game.score)
            self.ratings.record(game.a, game.b, game.score)
            main_score = self._main_score(game)
            if main_score is not None:
                self._window.append(main_score)

    def _check(self, game: Game) -> None:
        trained = (self.settings.main, *self.settings.exploiters)
        for name in (game.a, game.b):
            if name not in trained and name not in self.members:
                raise ValueError(
                    f"game {game.a} vs {game.b}: {name!r} is not in the league "
                    f"(trained: {', '.join(trained)}; or a frozen member's name)"
                )
        for one, other in ((game.a, game.b), (game.b, game.a)):
            if one in self.settings.exploiters and other != self.settings.main:
                raise ValueError(
                    f"game {game.a} vs {game.b}: exploiter {one!r} plays only against "
                    f"{self.settings.main!r}"
                )

    def _main_score(self, game: Game) -> float | None:
        """main's score in a game against one of its snapshots; None for any other game."""
        main = self.settings.main
        if game.a == main and game.b in self.members:
            return game.score
        if game.b == main and game.a in self.members:
            return 1.0 - game.score
        return None

    def snapshot_due(self, updates: int) -> bool:
        """Whether main is to be frozen at ``updates`` of its updates: by count since the last
        freeze, or by a full window's win rate; never twice at one update count."""
        if self._member_name(updates) in self.members:
            return False
        every = self.settings.snapshot_every_updates
        if every > 0 and updates - self._last_freeze_updates >= every:
            return True
        threshold = self.settings.snapshot_win_rate
        if threshold is None or len(self._window) < self.settings.snapshot_window:
            return False
        return sum(self._window) / len(self._window) >= threshold

    def _member_name(self, updates: int) -> str:
        return f"{self.settings.main}{MEMBER_SEPARATOR}{updates}"

    def freeze(self, version: int, updates: int, env_steps: int) -> tuple[Member, list[Member]]:
        """Freeze main's weights ``version`` at ``updates``: a new member at main's rating,
        an empty win-rate window, evictions past ``max_snapshots``, and the new opponent
        table marked published (it lost the evicted, which must never be drawn again).
        Returns the new member and the members evicted now."""
        name = self._member_name(updates)
        if name in self.members:
            raise ValueError(f"{name!r} is frozen already: main frozen twice at {updates} updates")
        member = Member(name, self.settings.main, version, updates, env_steps)
        self.members[name] = member
        self.ratings.add(name, self.ratings.rating(self.settings.main))
        self._window.clear()
        self._last_freeze_updates = updates
        evicted = self._evict()
        self._published = self.opponent_table()
        self.version += 1
        return member, evicted

    def _evict(self) -> list[Member]:
        """Past ``max_snapshots``, the lowest-rated active member other than the newest goes
        (the newest has not played yet, so its rating says nothing)."""
        active, evicted = self.active(), []
        while len(active) > self.settings.max_snapshots:
            victim = min(active[:-1], key=lambda m: self.ratings.rating(m.name))
            victim.active = False
            active.remove(victim)
            evicted.append(victim)
        return evicted

    def opponent_table(self) -> dict[str, float]:
        """The probability with which main meets each opponent, from its current win rates
        against the active snapshots."""
        main = self.settings.main
        win_rates = {m.name: self.payoff.win_rate(main, m.name) for m in self.active()}
        return opponent_table(
            win_rates,
            rule=self.settings.opponents,
            weighting=self.settings.pfsp_weighting,
            self_play_share=self.settings.self_play_share,
            self_name=main,
        )

    def table_changed(self, tolerance: float = 0.05) -> bool:
        """Whether the opponent table moved by more than ``tolerance`` (the largest change of
        one entry) since it was last published; if so it is published now and ``version``
        grows, so the caller resends a table only when the change matters."""
        table, published = self.opponent_table(), self._published
        moved = max(
            (abs(table.get(k, 0.0) - published.get(k, 0.0)) for k in table.keys() | published),
            default=0.0,
        )
        if moved <= tolerance:
            return False
        self._published = table
        self.version += 1
        return True

    def strongest(self) -> str:
        """The highest-rated of main, the exploiters and the active members (first on ties)."""
        names = [self.settings.main, *self.settings.exploiters, *(m.name for m in self.active())]
        return max(names, key=self.ratings.rating)

    def standing(self) -> dict[str, Any]:
        """For ``summary.json``: the strongest player, the members, the ratings, each
        player's decayed win rate against each one it played, and ``rows`` (league.csv's)."""
        payoff = self.payoff
        players = payoff.players()
        return {
            "strongest": self.strongest(),
            "snapshots": list(self.members),
            "active": [m.name for m in self.active()],
            "ratings": self.ratings.ratings(),
            "payoff": {
                a: {b: round(payoff.win_rate(a, b), 3) for b in players if payoff.games(a, b) > 0}
                for a in players
            },
            "rows": self.rows(),
        }

    def rows(self) -> list[dict[str, Any]]:
        """league.csv's rows: every member ever frozen, then main and the exploiters."""
        rows = [
            self._row(m.name, m.policy, "active" if m.active else "evicted", m.updates, m.env_steps)
            for m in self.members.values()
        ]
        for name in (self.settings.main, *self.settings.exploiters):
            rows.append(self._row(name, name, "training", "", ""))
        return rows

    def _row(
        self, name: str, policy: str, status: str, updates: int | str, env_steps: int | str
    ) -> dict[str, Any]:
        main = self.settings.main
        played = name != main and self.payoff.games(name, main) > 0.0
        return {
            "name": name,
            "policy": policy,
            "status": status,
            "frozen_at_updates": updates,
            "frozen_at_env_steps": env_steps,
            "rating": round(self.ratings.rating(name), 1),
            "games": round(sum(self.payoff.games(name, p) for p in self.payoff.players()), 1),
            f"vs {main}": round(self.payoff.win_rate(name, main), 3) if played else "",
        }

    def state(self) -> dict[str, Any]:
        """JSON-serialisable state; the settings are not in it (the run's config gives them)."""
        return {
            "version": self.version,
            "members": [asdict(m) for m in self.members.values()],
            "payoff": self.payoff.state(),
            "ratings": self.ratings.state(),
            "window": list(self._window),
            "last_freeze_updates": self._last_freeze_updates,
            "published_table": dict(self._published),
        }

    @classmethod
    def from_state(cls, settings: LeagueSettings, state: dict[str, Any]) -> League:
        """The league that wrote ``state``, under ``settings`` (whose decay and K win)."""
        league = cls(settings)
        league.members = {m["name"]: Member(**m) for m in state["members"]}
        league.payoff = Payoff.from_state({**state["payoff"], "decay": settings.payoff_decay})
        league.ratings = EloRatings.from_state({**state["ratings"], "k": settings.elo_k})
        for name in (settings.main, *settings.exploiters):  # an exploiter new to the config
            league.ratings.add(name)
        league._window.extend(float(s) for s in state["window"])
        league._last_freeze_updates = int(state["last_freeze_updates"])
        league._published = {k: float(p) for k, p in state["published_table"].items()}
        league.version = int(state["version"])
        return league
