"""The league's place in the control plane: the league itself and its snapshots' weights.

The coordinator keeps one desk for a run with a ``league``. Workers send it the results of
the games they finished and get back what they need to deal the next ones
(:class:`~joyrl_ray.wire.messages.LeagueView`: the opponents' odds and the snapshots'
weights by reference), only when it changed. When the main policy's learner reports, the
desk freezes that policy's newest weights as a snapshot if one is due: a reference into the
object store, dropped when the snapshot is evicted, so a long run keeps the store bounded.
The driver writes each new snapshot's weights to the task directory (``frozen``), and the
main policy's learner puts the league's state in every checkpoint.
"""

from __future__ import annotations

from typing import Any

from joyrl_ray.league.league import Game, League, LeagueSettings
from joyrl_ray.league.payoff import slot_of
from joyrl_ray.wire.handles import ObjectStore
from joyrl_ray.wire.messages import LeagueView, Weights


class LeagueDesk:
    """A run's league, its snapshots' weights in the store, and the snapshots not yet
    written by the driver."""

    def __init__(
        self,
        settings: LeagueSettings,
        store: ObjectStore,
        start: dict[str, Any] | None = None,
        *,
        test_games: int | None = None,
    ) -> None:
        """``start``: a resumed run's league (``state``, and ``weights`` by snapshot name).
        ``test_games``: test mode's, which counts its first this many games (its episodes;
        -1: all) and rates nobody: only what it played counts."""
        self.settings = settings
        self.store = store
        if start is None:
            self.league = League(settings)
            self.weights: dict[str, Weights] = {}
        else:
            self.league = League.from_state(settings, start["state"])
            self.weights = {
                m.name: Weights(m.version, store.put(start["weights"][m.name]))
                for m in self.league.active()
            }
        self.frozen: list[tuple[str, Weights]] = []  # for the driver to write
        # This run's games, counted whole (the payoff's counts decay): "a vs b" -> won, drew,
        # lost (a's).
        self.tally: dict[str, list[int]] = {}
        self.tallied = 0
        self.test_games = test_games
        # What a resume started from, for its summary: the checkpoint's league, as it was.
        self.resumed = None if start is None else start["state"]

    def record(self, games: list[Game]) -> None:
        if games and self.test_games is None:
            self.league.record(games)
        limit = self.test_games or -1
        for game in games:
            if 0 < limit <= self.tallied:
                break
            self.tally.setdefault(f"{game.a} vs {game.b}", [0, 0, 0])[slot_of(game.score)] += 1
            self.tallied += 1

    def view(self, known_version: int) -> LeagueView | None:
        """What workers deal games from, if newer than ``known_version``."""
        league = self.league
        league.table_changed()
        if league.version <= known_version:
            return None
        return LeagueView(league.version, league.opponent_table(), dict(self.weights))

    def main_reported(self, updates: int, newest: Weights | None, env_steps: int) -> bool:
        """The main policy is at ``updates``: freeze ``newest`` if a snapshot is due.
        Whether one was frozen."""
        if newest is None or not self.league.snapshot_due(updates):
            return False
        member, evicted = self.league.freeze(newest.version, updates, env_steps)
        self.weights[member.name] = newest
        self.frozen.append((member.name, newest))
        for gone in evicted:
            self.weights.pop(gone.name, None)
        return True

    def take_frozen(self) -> list[tuple[str, Weights]]:
        frozen, self.frozen = self.frozen, []
        return frozen

    def state(self) -> dict[str, Any]:
        return self.league.state()

    def ratings(self) -> dict[str, float]:
        return self.league.ratings.ratings()

    def summary(self) -> dict[str, Any]:
        """For ``summary.json`` (and ``rows``: ``league.csv``'s)."""
        summary = self.league.standing()
        summary["games"] = {
            pair: dict(zip(("won", "drew", "lost"), counts, strict=True))
            for pair, counts in self.tally.items()
        }
        if self.resumed is not None:
            summary["resumed"] = self.resumed
        return summary
