"""Multi-agent envs behind one interface: PettingZoo's turn-based games and parallel worlds,
real envs (tic-tac-toe, MPE's simple_spread, a world whose agents leave early)."""

from __future__ import annotations

import numpy as np

from envs.agent_toys import RelayWorld
from envs.config import EnvConfig
from envs.multi_agent import MultiAgentEnv, make_multi_agent_env
from envs.probe import probe_spaces
from tests.support.runs import needs_extra

TICTACTOE = "pettingzoo.classic.tictactoe_v3:env"


def legal(obs: dict) -> int:
    return int(np.flatnonzero(obs["action_mask"])[0])


def test_a_turn_based_game_asks_one_agent_at_a_time_and_hands_each_its_reward_on_its_next_turn():
    needs_extra("pettingzoo", "requirements-multiagent.txt")
    env = make_multi_agent_env(EnvConfig(id=TICTACTOE))
    env.reset(seed=1)
    assert list(env.deciding) == ["player_1"]
    outcomes = env.step({"player_1": legal(env.deciding["player_1"])})
    assert outcomes == []  # player_1's move is not complete until its next turn
    assert list(env.deciding) == ["player_2"]
    outcomes = env.step({"player_2": legal(env.deciding["player_2"])})
    assert [o.agent for o in outcomes] == ["player_1"]  # player_1 moves again: its turn is done
    assert not outcomes[0].terminated
    # Play the first legal square each turn: player_1 wins on the diagonal column (0, 1, 2
    # taken in turn leaves player_1 with 0, 2, 4, 6: a win on 2-4-6).
    ended = []
    while not env.over:
        (agent,) = env.deciding
        ended += [o for o in env.step({agent: legal(env.deciding[agent])}) if o.terminated]
    rewards = {o.agent: o.reward for o in ended}
    assert sorted(rewards.values()) == [-1.0, 1.0]  # the winner and the loser, both told
    assert env.open == set()


def test_max_steps_truncates_every_agent_still_in_the_game_with_its_pending_reward() -> None:
    needs_extra("pettingzoo", "requirements-multiagent.txt")
    env = make_multi_agent_env(EnvConfig(id=TICTACTOE), max_steps=3)
    env.reset(seed=1)
    outcomes = []
    while not env.over:
        (agent,) = env.deciding
        outcomes += env.step({agent: legal(env.deciding[agent])})
    assert env.steps == 3
    last = {o.agent: o for o in outcomes}
    assert set(last) == {"player_1", "player_2"}
    assert all(o.truncated and not o.terminated for o in last.values())


def test_a_parallel_world_asks_every_agent_each_step_and_answers_at_once() -> None:
    needs_extra("mpe2", "requirements-multiagent.txt")
    env = make_multi_agent_env(EnvConfig(id="mpe2.simple_spread_v3:parallel_env"))
    env.reset(seed=0)
    assert list(env.deciding) == ["agent_0", "agent_1", "agent_2"]
    outcomes = env.step(dict.fromkeys(env.deciding, 0))
    assert [o.agent for o in outcomes] == ["agent_0", "agent_1", "agent_2"]
    assert all(o.next_obs.shape == (18,) for o in outcomes)


def test_an_agent_that_leaves_early_is_told_once_and_the_others_play_on() -> None:
    env = MultiAgentEnv(RelayWorld(n_agents=3, lifetime=2, stagger=2))
    env.reset()
    ended: dict[str, int] = {}
    steps = 0
    while not env.over:
        outcomes = env.step(dict.fromkeys(env.deciding, 0))
        steps += 1
        for outcome in outcomes:
            assert outcome.agent not in ended  # nothing after its end
            if outcome.terminated:
                ended[outcome.agent] = steps
    assert ended == {"agent_0": 2, "agent_1": 4, "agent_2": 6}


def test_the_probe_gives_each_agents_spaces_and_whether_the_env_is_turn_based() -> None:
    needs_extra("pettingzoo", "requirements-multiagent.txt")
    spaces = probe_spaces(EnvConfig(id=TICTACTOE))
    assert spaces.agents == ("player_1", "player_2")
    assert spaces.turn_based
    assert "action_mask" in spaces.observation["player_1"].spaces
