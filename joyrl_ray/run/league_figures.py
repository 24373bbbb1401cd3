"""A league's figures for ``figs/``: its payoff as a heat map and its ratings over the run.

``figs/league_payoff.png``: each row player's decayed win rate against each column player
(blank where the two never met: snapshots meet the main policy, not each other).
``figs/league_ratings.png``: each member's Elo rating at every freeze and at the end, against
env steps (a snapshot's line starts where it was frozen).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from joyrl_ray.run.figures import new_figure


def save_league_figures(
    figs: Path,
    payoff: dict[str, dict[str, float]],
    ratings: list[tuple[int, dict[str, float]]],
) -> list[Path]:
    """Write both figures; the paths written."""
    figs.mkdir(parents=True, exist_ok=True)
    written = []
    if payoff:
        written.append(_payoff_figure(figs / "league_payoff.png", payoff))
    if ratings:
        written.append(_ratings_figure(figs / "league_ratings.png", ratings))
    return written


def _payoff_figure(path: Path, payoff: dict[str, dict[str, float]]) -> Path:
    players = list(payoff)
    grid = np.full((len(players), len(players)), np.nan)
    for i, a in enumerate(players):
        for j, b in enumerate(players):
            grid[i, j] = payoff[a].get(b, np.nan)
    fig, ax = new_figure()
    image = ax.imshow(grid, cmap="RdYlGn", vmin=0.0, vmax=1.0)
    ax.set_xticks(range(len(players)), players, rotation=60, ha="right", fontsize=7)
    ax.set_yticks(range(len(players)), players, fontsize=7)
    ax.set_title("league payoff: row's win rate against column (decayed)")
    fig.colorbar(image, ax=ax)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return path


def _ratings_figure(path: Path, ratings: list[tuple[int, dict[str, float]]]) -> Path:
    fig, ax = new_figure()
    names = list(dict.fromkeys(name for _, row in ratings for name in row))
    for name in names:
        points = [(steps, row[name]) for steps, row in ratings if name in row]
        steps, values = zip(*points, strict=True)
        ax.plot(steps, values, marker="o", ms=3, lw=1.8 if "@" not in name else 0.8, label=name)
    ax.set_xlabel("env steps")
    ax.set_ylabel("Elo rating")
    ax.set_title("league ratings")
    if len(names) <= 12:
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return path
