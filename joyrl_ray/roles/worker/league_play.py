"""A multi-agent worker's part in a league: its games' seats, the snapshots it acts with,
and its exchanges with the league.

The worker asks :class:`LeaguePlay` who acts for each seat (a learning policy, a snapshot,
or in a test game's first moves a uniform-random player) and tells it each reward and each
game's end. Every ``LEAGUE_EVERY`` vector steps (when the last exchange was answered), with
each push and at the stop, the finished games go to the coordinator's league desk, whose
answer, when the league changed, is a new table to deal from and the snapshots in play
(their weights fetched from the object store once each).
"""

from __future__ import annotations

import torch

from algos.base import Policy
from algos.scripted import RandomPolicy
from joyrl_ray.control.client import CoordinatorClient
from joyrl_ray.multi_agent_plan import MultiAgentPlan
from joyrl_ray.roles.acting import acting_policy
from joyrl_ray.roles.worker.channel import ACK_TIMEOUT_S
from joyrl_ray.roles.worker.league_seats import LeagueSeats
from joyrl_ray.wire.handles import Call, ObjectStore
from joyrl_ray.wire.messages import LeagueView

#: Who makes a league test game's random opening moves (see LeagueSeats.opening).
OPENING = "opening"
#: A league run's worker exchanges games for the league's table every this many vector steps
#: (when its last exchange was answered), and with each push: a chunk may be long.
LEAGUE_EVERY = 64


class LeaguePlay:
    """The seats of a worker's games and the snapshots that fill some of them."""

    def __init__(self, plan: MultiAgentPlan, seats: LeagueSeats, store: ObjectStore, train: bool):
        self.plan = plan
        self.seats = seats
        self.store = store
        self.train = train
        self.snapshots: dict[str, Policy] = {}  # snapshot name -> the policy it acts with
        self.call: Call[LeagueView | None] | None = None  # the exchange awaiting its answer

    @classmethod
    def of(
        cls, plan: MultiAgentPlan, n_envs: int, store: ObjectStore, *, train: bool
    ) -> LeaguePlay | None:
        """A league run's (training: main against its drawn opponent, whose snapshot acts;
        test mode: the player asked for against the opponent asked for); else None."""
        league, test = plan.league, plan.league_test
        if league is None or not (train or test):
            return None
        if train or test is None:
            seats = LeagueSeats(league.main, plan.agents, n_envs)
            seats.exploiters = (league.exploiters, league.exploiter_share)
            return cls(plan, seats, store, train)
        player, opponent = test
        seats = LeagueSeats(league.main, plan.agents, n_envs, label=player)
        seats.view = LeagueView(0, {opponent: 1.0}, {})
        # Two greedy policies play the same game over and over: openings make them differ.
        seats.openings = plan.league_test_openings
        play = cls(plan, seats, store, train)
        main = plan.policies[league.main]
        play.snapshots[OPENING] = RandomPolicy(main.obs_space, main.action_space)
        return play

    def acting(self, i: int, agent: str) -> str:
        """Who makes ``agent``'s move in env ``i`` now (and count a test game's opening)."""
        opening = self.seats.openings and self.seats.opening(i)
        return OPENING if opening else self.seats.player(i, agent)

    def plan_of(self, player: str) -> str:
        """The policy ``player`` is (a snapshot, or a test game's random opening move: the
        league's main policy, whose spaces it has)."""
        return player if player in self.plan.policies else self.seats.main

    def exchange(
        self,
        coordinator: CoordinatorClient,
        worker_id: int,
        incarnation: int,
        *,
        wait: bool,
        if_answered: bool = False,
    ) -> None:
        """Send the games finished since the last exchange; take the league's answer to the
        previous one (``wait``: to this one too; ``if_answered``: nothing while the previous
        one is unanswered). An answer already in is taken at once."""
        if self.call is not None:
            if if_answered and not self.call.done():
                return
            self._take_view(self.call.result(timeout_s=ACK_TIMEOUT_S))
        games = self.seats.take_games()
        call = coordinator.league_games(worker_id, incarnation, games, self.seats.version)
        self.call = call
        if wait or call.done():  # one process: answered as it is made
            self.call = None
            self._take_view(call.result(timeout_s=ACK_TIMEOUT_S))

    def _take_view(self, view: LeagueView | None) -> None:
        """A newer league: its table, and the snapshots in play (new ones fetched)."""
        if view is None or view.version <= self.seats.version:
            return
        if not self.train:  # test mode plays the one opponent it was given
            return
        self.seats.view = view
        main = self.plan.policies[self.seats.main]
        for name, weights in view.members.items():
            if name not in self.snapshots:
                with torch.random.fork_rng():  # a new net must not move the worker's stream
                    policy = acting_policy(main)
                policy.set_weights(self.store.get(weights.box, timeout_s=ACK_TIMEOUT_S))
                self.snapshots[name] = policy
        playing = set(self.seats.opponents)
        for name in [n for n in self.snapshots if n not in view.members and n not in playing]:
            del self.snapshots[name]  # evicted, and in no game: no game deals it any more
