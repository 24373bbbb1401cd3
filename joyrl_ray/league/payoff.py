"""Decayed win / draw / loss counts between players, the league's memory of who beats whom.

Why decayed: a learning policy changes, so a result from long ago says little about the
weights of today. As in DI-engine's payoff, each new result of a pair first multiplies that
pair's counts by ``decay``, so the recent games of a pair dominate its win rate.
"""

from __future__ import annotations

from typing import Any

#: Index into a pair's [wins, draws, losses] by the score of its first player.
_SLOT = {1.0: 0, 0.5: 1, 0.0: 2}


def slot_of(score: float) -> int:
    """Where a score counts: 0 a win, 1 a draw, 2 a loss; a ValueError for any other score."""
    if score not in _SLOT:
        raise ValueError(f"a game's score must be 1.0 (win), 0.5 (draw) or 0.0 (loss): {score!r}")
    return _SLOT[float(score)]


class Payoff:
    """Decayed win / draw / loss counts per ordered pair of players (DI-engine's payoff: each
    new result of a pair first multiplies that pair's counts by ``decay``)."""

    def __init__(self, decay: float = 0.99) -> None:
        if not 0.0 < decay <= 1.0:
            raise ValueError(f"Payoff decay must be in (0, 1], got {decay!r}")
        self.decay = decay
        self._counts: dict[tuple[str, str], list[float]] = {}
        # A dict keeps first-seen order and answers membership in O(1).
        self._players: dict[str, None] = {}

    def record(self, a: str, b: str, score: float) -> None:
        """One game; ``score`` is a's (1.0 win, 0.5 draw, 0.0 loss). (b, a) gets the mirror."""
        if a == b:
            raise ValueError(f"a game of {a!r} against itself has no opponent to count it for")
        slot = slot_of(score)
        self._add(a, b, slot)
        self._add(b, a, 2 - slot)

    def _add(self, a: str, b: str, slot: int) -> None:
        self._players.setdefault(a)
        counts = self._counts.setdefault((a, b), [0.0, 0.0, 0.0])
        for i in range(3):
            counts[i] *= self.decay
        counts[slot] += 1.0

    def counts(self, a: str, b: str) -> tuple[float, float, float]:
        """Decayed wins, draws and losses of a against b; zeros if they never played."""
        wins, draws, losses = self._counts.get((a, b), (0.0, 0.0, 0.0))
        return wins, draws, losses

    def games(self, a: str, b: str) -> float:
        """Decayed number of games between a and b."""
        return sum(self.counts(a, b))

    def win_rate(self, a: str, b: str, prior: float = 0.5) -> float:
        """(wins + draws / 2) / games of a against b; ``prior`` when they never played."""
        wins, draws, losses = self.counts(a, b)
        games = wins + draws + losses
        return prior if games <= 0.0 else (wins + 0.5 * draws) / games

    def players(self) -> list[str]:
        """Everyone with a result, first seen first."""
        return list(self._players)

    def state(self) -> dict[str, Any]:
        """JSON-serialisable state: the decay, the players and each ordered pair's counts."""
        return {
            "decay": self.decay,
            "players": list(self._players),
            "pairs": [[a, b, *counts] for (a, b), counts in self._counts.items()],
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> Payoff:
        """The payoff that wrote ``state``."""
        payoff = cls(decay=float(state["decay"]))
        payoff._players = dict.fromkeys(state["players"])
        for a, b, wins, draws, losses in state["pairs"]:
            payoff._counts[(a, b)] = [float(wins), float(draws), float(losses)]
        return payoff
