"""Elo ratings of the league's players, the yardstick for eviction and for "the strongest".

Why Elo beside the payoff: the payoff only knows pairs that met, while a rating ranks every
player on one scale, including two snapshots that never played each other.
"""

from __future__ import annotations

from typing import Any

from joyrl_ray.league.payoff import slot_of

#: Rating points at which the stronger player is expected to score 10 times as often.
ELO_SCALE = 400.0


class EloRatings:
    """Elo ratings updated after every game."""

    def __init__(self, k: float = 16.0, initial: float = 1000.0) -> None:
        if k <= 0.0:
            raise ValueError(f"Elo k must be > 0, got {k!r}")
        self.k = k
        self.initial = initial
        self._ratings: dict[str, float] = {}

    def add(self, name: str, rating: float | None = None) -> None:
        """A new player at ``rating`` (``initial`` if None): a snapshot starts at its policy's
        rating, since it is those very weights. A known name keeps its rating."""
        if name not in self._ratings:
            self._ratings[name] = self.initial if rating is None else float(rating)

    def rating(self, name: str) -> float:
        """The player's rating; ``initial`` for an unknown name."""
        return self._ratings.get(name, self.initial)

    def expected(self, a: str, b: str) -> float:
        """a's expected score against b."""
        return 1.0 / (1.0 + 10.0 ** ((self.rating(b) - self.rating(a)) / ELO_SCALE))

    def record(self, a: str, b: str, score: float) -> None:
        """One game; ``score`` is a's. Both move by the same amount in opposite directions;
        unknown names are added at ``initial`` first."""
        slot_of(score)  # the same scores the payoff takes
        self.add(a)
        self.add(b)
        if a == b:
            return
        delta = self.k * (score - self.expected(a, b))
        self._ratings[a] += delta
        self._ratings[b] -= delta

    def ratings(self) -> dict[str, float]:
        """Every known player's rating, first added first."""
        return dict(self._ratings)

    def state(self) -> dict[str, Any]:
        """JSON-serialisable state."""
        return {"k": self.k, "initial": self.initial, "ratings": dict(self._ratings)}

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> EloRatings:
        """The ratings that wrote ``state``."""
        ratings = cls(k=float(state["k"]), initial=float(state["initial"]))
        ratings._ratings = {name: float(r) for name, r in state["ratings"].items()}
        return ratings
