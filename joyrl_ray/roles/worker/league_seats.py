"""Who plays each seat of a worker's games in a league run.

At each env's reset the league's main policy takes one seat, drawn at random, and its
opponent, drawn from the league's table (:func:`~joyrl_ray.league.draws.draw`), takes the
others: the main policy's own newest weights (self-play: the main policy in every seat, each
seat's decisions learned from) or a frozen snapshot, which acts with the snapshot's weights
and is never learned from; or, in ``exploiter_share`` of the games, an exploiter: a learning
policy that plays only main, both seats learned from. In test mode every game is the one
pairing asked for. When a game
ends, main's result against a snapshot (a win when its return is above every other seat's,
a draw when level) goes to the league with the worker's next exchange; self-play games
teach the policy but rate nobody.

The draws follow the worker's own random stream (seeded like its envs' and policies'), so a
seeded run deals the same games for the same table.
"""

from __future__ import annotations

import numpy as np

from joyrl_ray.league.draws import draw
from joyrl_ray.league.league import Game
from joyrl_ray.wire.messages import LeagueView


class LeagueSeats:
    """Each env's seats this game: agent -> player (a learning policy or a snapshot)."""

    def __init__(
        self, main: str, agents: tuple[str, ...], n_envs: int, *, label: str | None = None
    ) -> None:
        """``label``: the name main's results go under (test mode: a snapshot playing in main's
        place), main's own by default."""
        self.main = main
        self.label = label or main
        self.agents = agents
        self.view: LeagueView | None = None
        self.rng = np.random.default_rng()
        self.players = [dict.fromkeys(agents, main) for _ in range(n_envs)]
        self.opponents = [main] * n_envs
        self.returns = [dict.fromkeys(agents, 0.0) for _ in range(n_envs)]
        self.games: list[Game] = []  # finished, not yet sent
        self.openings = 0  # test mode: each game's first moves are made at random
        # The learning policies that play only main, and the share of games they play.
        self.exploiters: tuple[tuple[str, ...], float] = ((), 0.0)
        self.moves = [0] * n_envs

    def seed(self, seed: int | None) -> None:
        self.rng = np.random.default_rng(seed)

    @property
    def version(self) -> int:
        return self.view.version if self.view is not None else 0

    def deal(self, i: int) -> None:
        """Seat env ``i``'s next game."""
        exploiters, share = self.exploiters
        if exploiters and self.rng.random() < share:
            opponent = exploiters[int(self.rng.integers(len(exploiters)))]
        else:
            table = self.view.table if self.view is not None else {self.main: 1.0}
            opponent = draw(table, self.rng)
        seat = self.agents[int(self.rng.integers(len(self.agents)))]
        self.players[i] = {a: self.main if a == seat else opponent for a in self.agents}
        self.opponents[i] = opponent
        self.returns[i] = dict.fromkeys(self.agents, 0.0)
        self.moves[i] = 0

    def opening(self, i: int) -> bool:
        """Whether env ``i``'s next move is one of its game's random opening moves (and
        count it)."""
        self.moves[i] += 1
        return self.moves[i] <= self.openings

    def player(self, i: int, agent: str) -> str:
        return self.players[i][agent]

    def rewarded(self, i: int, agent: str, reward: float) -> None:
        self.returns[i][agent] += reward

    def game_over(self, i: int) -> None:
        """Env ``i``'s game ended: main's result against a snapshot, for the league."""
        opponent = self.opponents[i]
        if opponent == self.main:
            return
        players, returns = self.players[i], self.returns[i]
        mine = max(r for a, r in returns.items() if players[a] == self.main)
        theirs = max(r for a, r in returns.items() if players[a] != self.main)
        score = 1.0 if mine > theirs else 0.5 if mine == theirs else 0.0
        self.games.append(Game(self.label, opponent, score))

    def take_games(self) -> list[Game]:
        games, self.games = self.games, []
        return games
