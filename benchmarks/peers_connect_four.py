"""Connect Four for ``benchmarks/vs_peers.py --cases connect_four``: the peer, and the games
that measure both sides the same way.

The peer is sb3-contrib's MaskablePPO trained by self-play with the settings of PettingZoo's
own SB3 tutorial (tutorials/SB3/connect_four/sb3_connect_four_action_mask.py):
MaskableActorCriticPolicy, SB3's default hyperparameters (one env, 2048 steps per rollout,
10 epochs of 64, learning rate 3e-4), legal moves masked, and PettingZoo's ``connect_four_v3``
seen as a single-agent env (:class:`SelfPlayConnectFour`) whose every step is the move of
whichever seat is to play: the model being trained plays both seats, each from the board as
that seat sees it (its own pieces, then the other's). The reward of a step is the mover's,
as the tutorial's wrapper hands it back: +1 for the winning move, 0 for any other; the game
ends on the winning move, so the loser's -1 never reaches the model, and GAE carries the +1
back through the moves of both seats. The tutorial reports 0.86 wins against random after
20k steps.

Env steps: one step of :class:`SelfPlayConnectFour` is one move of either player, which is
how joyrl-ray counts a turn-based game's env steps (``general_cfg.max_env_steps``), so N env
steps a side is ``total_timesteps=N`` here. SB3 finishes the rollout it is in (2048 steps),
and ours the chunks it is in, so each side may pass N a little; the figures carry the count
each side reached.

The games (:func:`against_random`, :func:`head_to_head`) are this module's, not either
side's evaluator: both sides act greedily (the mode of their masked distribution), as a
:data:`Player` that maps the seat to move's observation ``{"observation", "action_mask"}`` to
a legal move. Against random: 100 games, the first half with the evaluated side as
player_0, the second half as player_1, the random opponent's moves drawn uniformly among the
legal ones from a generator seeded by the game's number (the same games for both sides).
Head-to-head: two greedy players would play one game over and over, so each game starts from
an opening of ``OPENING_MOVES`` uniformly random moves; the openings are distinct (drawn
without repeats, seeded), and each is played twice, once from each seat.

    python benchmarks/peers_connect_four.py --seed 1 --env-steps 20480 --save /tmp/peer.zip
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

SEATS = ("player_0", "player_1")
N_COLUMNS = 7
OPENING_MOVES = 3  # 7**3 = 343 openings (2 moves give only 49: too few for 50 distinct)
GAMES = 100  # per measurement, half from each seat

#: A side's greedy move from the seat to move's observation ``{"observation", "action_mask"}``.
Player = Callable[[dict[str, np.ndarray]], int]


def connect_four() -> Any:
    """PettingZoo's Connect Four (an AEC env), as ours plays it (``env_cfg.id``)."""
    from pettingzoo.classic import connect_four_v3

    return connect_four_v3.env()


# ----- the peer -----
class SelfPlayConnectFour(gym.Env):
    """Connect Four as one agent: each step plays the seat to move, the observation is the
    next seat's board (without its mask: :meth:`action_masks`, where MaskablePPO looks), the
    reward and the episode's end are the mover's."""

    def __init__(self) -> None:
        self.game = connect_four()
        self.observation_space = self.game.observation_space(SEATS[0])["observation"]
        self.action_space = self.game.action_space(SEATS[0])

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        self.game.reset(seed=seed)
        return self._board(), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        mover = self.game.agent_selection
        self.game.step(int(action))
        reward = float(self.game.rewards[mover])
        ended = bool(self.game.terminations[mover]), bool(self.game.truncations[mover])
        return self._board(), reward, *ended, {}

    def action_masks(self) -> np.ndarray:
        return self.game.observe(self.game.agent_selection)["action_mask"].astype(bool)

    def _board(self) -> np.ndarray:
        return self.game.observe(self.game.agent_selection)["observation"]


def train_peer(seed: int, env_steps: int, save: Path) -> dict[str, int]:
    """MaskablePPO by self-play for ``env_steps`` moves (both seats'), saved to ``save``."""
    from sb3_contrib import MaskablePPO
    from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy

    env = SelfPlayConnectFour()
    env.reset(seed=seed)
    model = MaskablePPO(MaskableActorCriticPolicy, env, seed=seed, device="cpu", verbose=0)
    model.learn(total_timesteps=env_steps)
    model.save(save)
    return {"env_steps": int(model.num_timesteps)}


def peer_player(path: Path) -> Player:
    """The saved peer, greedy, illegal moves masked."""
    from sb3_contrib import MaskablePPO

    model = MaskablePPO.load(path, device="cpu")

    def act(obs: dict[str, np.ndarray]) -> int:
        mask = obs["action_mask"].astype(bool)
        action, _ = model.predict(obs["observation"], action_masks=mask, deterministic=True)
        return int(action)

    return act


# ----- ours -----
def ours_player(task_dir: Path) -> Player:
    """Our league's main policy from a run's task directory, greedy: its final acting
    weights (``models/<main>/last.pt``) in the acting policy test mode builds for a
    multi-agent run (``acting_policy``, then ``load_acting_state``), with the run's config."""
    from joyrl_ray.config.loading import RunConfig, load_config
    from joyrl_ray.multi_agent_plan import PolicyPlan
    from joyrl_ray.roles.acting import Observations, acting_policy
    from joyrl_ray.run.checkpoint import find_checkpoint

    cfg = RunConfig.from_omegaconf(load_config(str(task_dir / "config.yaml"), []))
    assert cfg.league is not None and cfg.league.main and cfg.multi_agent is not None
    main = cfg.league.main
    game = connect_four()
    obs_space, action_space = game.observation_space(SEATS[0]), game.action_space(SEATS[0])
    algo_name = cfg.multi_agent.policies[main].algo_name or cfg.general.algo_name
    plan = PolicyPlan(main, obs_space, action_space, algo_name, cfg.policy_algos[main])
    policy = acting_policy(plan)
    policy.load_acting_state(find_checkpoint(task_dir, "last", policy=main).state["policy"])
    observations = Observations(obs_space)

    def act(obs: dict[str, np.ndarray]) -> int:
        actions, _ = policy.act(observations.many([obs]), explore=False, env_steps=0)
        return int(actions[0])

    return act


# ----- the games -----
@dataclass(frozen=True)
class Record:
    """One side's games: won, drawn, lost."""

    won: int = 0
    drawn: int = 0
    lost: int = 0

    @property
    def games(self) -> int:
        return self.won + self.drawn + self.lost

    @property
    def win_rate(self) -> float:
        return self.won / self.games if self.games else 0.0

    def __add__(self, other: Record) -> Record:
        return Record(self.won + other.won, self.drawn + other.drawn, self.lost + other.lost)

    def scored(self, reward: float) -> Record:
        """This record and one more game, whose final reward for the side was ``reward``."""
        return self + Record(int(reward > 0), int(reward == 0), int(reward < 0))

    def as_dict(self) -> dict[str, int]:
        return asdict(self)

    def __str__(self) -> str:
        return f"won {self.won}, drawn {self.drawn}, lost {self.lost}"


def random_player(rng: np.random.Generator) -> Player:
    return lambda obs: int(rng.choice(np.flatnonzero(obs["action_mask"])))


def play(game: Any, players: dict[str, Player], opening: Sequence[int] = ()) -> dict[str, float]:
    """One game from ``opening`` (moves played first, seats alternating from player_0);
    each seat's final reward (+1 won, -1 lost, 0 drawn)."""
    game.reset()
    for move in opening:
        game.step(int(move))
    while not any(game.terminations.values()) and not any(game.truncations.values()):
        seat = game.agent_selection
        game.step(players[seat](game.observe(seat)))
    return {seat: float(game.rewards[seat]) for seat in SEATS}


def _seat(game_index: int, games: int) -> str:
    """The first half of the games from player_0, the rest from player_1."""
    return SEATS[0] if game_index < games // 2 else SEATS[1]


def _other(seat: str) -> str:
    return SEATS[1] if seat == SEATS[0] else SEATS[0]


def against_random(player: Player, seed: int, games: int = GAMES) -> Record:
    """``player``'s record against uniform-random legal moves; game ``i``'s random moves
    come from a generator seeded by (``seed``, ``i``)."""
    game, record = connect_four(), Record()
    for i in range(games):
        seat = _seat(i, games)
        opponent = random_player(np.random.default_rng([seed, i]))
        rewards = play(game, {seat: player, _other(seat): opponent})
        record = record.scored(rewards[seat])
    game.close()
    return record


def openings(count: int, seed: int) -> list[tuple[int, ...]]:
    """``count`` distinct openings of ``OPENING_MOVES`` moves (none can fill a column or win)."""
    rng = np.random.default_rng([seed, OPENING_MOVES])
    codes = rng.choice(N_COLUMNS**OPENING_MOVES, size=count, replace=False)
    return [
        tuple(int(code) // N_COLUMNS**k % N_COLUMNS for k in range(OPENING_MOVES)) for code in codes
    ]


def head_to_head(first: Player, second: Player, seed: int, games: int = GAMES) -> Record:
    """``first``'s record against ``second``: ``games // 2`` distinct openings, each played
    with ``first`` as player_0, then again with ``first`` as player_1."""
    game, record = connect_four(), Record()
    starts = openings(games // 2, seed)
    for i in range(games):
        seat = _seat(i, games)
        rewards = play(game, {seat: first, _other(seat): second}, starts[i % len(starts)])
        record = record.scored(rewards[seat])
    game.close()
    return record


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--env-steps", type=int, required=True, help="moves, both seats'")
    parser.add_argument("--save", type=Path, required=True, help="the model's .zip")
    args = parser.parse_args()
    print(json.dumps(train_peer(args.seed, args.env_steps, args.save)))


if __name__ == "__main__":
    main()
