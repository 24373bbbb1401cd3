"""Whom the main policy meets: the opponent table and one draw from it.

Prioritised fictitious self-play (PFSP, AlphaStar) weights each frozen snapshot by how hard
it still is for the learner, so games go where there is something left to learn; a share of
self-play keeps the learner facing its own live weights too.
"""

from __future__ import annotations

import numpy as np

OPPONENT_RULES = ("self_play", "uniform", "pfsp")
PFSP_WEIGHTINGS = ("squared", "variance")


def pfsp_weight(win_rate: float, weighting: str) -> float:
    """A snapshot's PFSP weight from the learner's win rate ``p`` against it.

    ``squared``, (1 - p)^2: the hardest opponents first. ``variance``, p (1 - p): the
    opponents of about equal strength first, where a game's result is least certain.
    """
    if weighting == "squared":
        return (1.0 - win_rate) ** 2
    if weighting == "variance":
        return win_rate * (1.0 - win_rate)
    allowed = ", ".join(PFSP_WEIGHTINGS)
    raise ValueError(f"pfsp weighting must be one of {allowed}, got {weighting!r}")


def opponent_table(
    win_rates: dict[str, float],
    *,
    rule: str,
    weighting: str,
    self_play_share: float,
    self_name: str,
) -> dict[str, float]:
    """The probability with which ``self_name`` meets each opponent in a game.

    ``win_rates`` holds the learner's win rate against each frozen snapshot. Entries of
    probability 0 are left out; the rest sum to 1.
    """
    if rule not in OPPONENT_RULES:
        raise ValueError(f"opponent rule must be one of {', '.join(OPPONENT_RULES)}, got {rule!r}")
    if not 0.0 <= self_play_share <= 1.0:
        raise ValueError(f"self_play_share must be in [0, 1], got {self_play_share!r}")
    if self_name in win_rates:
        raise ValueError(f"{self_name!r} is the learner itself, not one of its snapshots")
    if rule == "self_play" or not win_rates or self_play_share >= 1.0:
        return {self_name: 1.0}
    if rule == "pfsp":
        weights = {name: pfsp_weight(p, weighting) for name, p in win_rates.items()}
    else:
        weights = dict.fromkeys(win_rates, 1.0)
    total = sum(weights.values())
    if total <= 0.0:  # every snapshot beaten for good: no preference left, so spread evenly
        weights, total = dict.fromkeys(win_rates, 1.0), float(len(win_rates))
    rest = 1.0 - self_play_share
    table = {self_name: self_play_share} if self_play_share > 0.0 else {}
    table.update({name: rest * w / total for name, w in weights.items() if w > 0.0})
    return table


def draw(table: dict[str, float], rng: np.random.Generator) -> str:
    """One opponent by the table's probabilities (in the table's order, so one rng state
    always gives the same opponent)."""
    names = [name for name, p in table.items() if p > 0.0]
    if not names:
        raise ValueError("an opponent table needs at least one entry of positive probability")
    u = rng.random() * sum(table[name] for name in names)
    cumulative = 0.0
    for name in names:
        cumulative += table[name]
        if u < cumulative:
            return name
    return names[-1]  # u landed on the total through rounding
