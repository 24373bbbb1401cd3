"""Several agents in one env learn: MPE's simple_spread with one shared PPO policy beats a
random policy by a margin, and with a policy per agent each of the three trains, checkpoints
and resumes; Connect Four's league beats random play and the league's first snapshot."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from tests.support.cli_runs import train_in_process
from tests.support.procs import task_dirs

SPREAD_KWARGS = {"N": 3, "max_cycles": 25, "continuous_actions": False}
#: Mean episode return (per agent) the shared policy must beat a random one's by.
MARGIN = 7.5  # an untrained greedy policy's evaluation may come within 5 of it


def random_return(episodes: int = 300) -> float:
    """simple_spread's mean episode return per agent when every agent acts at random."""
    from mpe2 import simple_spread_v3

    env = simple_spread_v3.parallel_env(**SPREAD_KWARGS)
    returns = []
    for episode in range(episodes):
        env.reset(seed=episode)
        totals = dict.fromkeys(env.possible_agents, 0.0)
        while env.agents:
            actions = {a: env.action_space(a).sample() for a in env.agents}
            _, rewards, _, _, _ = env.step(actions)
            for agent, reward in rewards.items():
                totals[agent] += reward
        returns.extend(totals.values())
    env.close()
    return float(np.mean(returns))


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_simple_spread_with_a_shared_ppo_policy_beats_a_random_policy_by_a_margin(
    tmp_path: Path,
) -> None:
    baseline = random_return()  # about -27.7
    summary = train_in_process(
        tmp_path,
        "simple_spread_ppo_shared",
        # Seed 2 reached -20 at 24k env steps, seeds 1 and 3 at 56k and 52k (learning_matrix).
        ("general_cfg.mp_backend=single", "general_cfg.max_env_steps=100000", "general_cfg.seed=2"),
        baseline + MARGIN,
    )
    shared = summary["policies"]["shared"]
    best = max(e["return_mean"] for e in summary["eval_history"])
    assert best >= baseline + MARGIN, (
        baseline,
        [e["return_mean"] for e in summary["eval_history"]],
    )
    assert summary["solved"] and shared["best_eval_return"] == best
    assert shared["transitions_collected"] == 3 * summary["env_steps"]  # every agent's rows


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_simple_spread_with_a_policy_per_agent_trains_each_checkpoints_and_resumes_all_three(
    tmp_path: Path, ray_session
) -> None:
    policies = ("agent_0", "agent_1", "agent_2")
    short = ("general_cfg.online_eval=false", "general_cfg.n_workers=2")
    first = train_in_process(
        tmp_path / "first",
        "simple_spread_ppo_per_agent",
        (*short, "general_cfg.max_env_steps=8000"),
        None,
    )
    (first_task,) = task_dirs(tmp_path / "first")
    assert sorted(first["policies"]) == list(policies)
    for name in policies:
        figures = first["policies"][name]
        # The three policies keep in step: each takes every rollout (8000 / (2 x 4 x 100)),
        # one agent's rows of every env step.
        assert figures["updates"] == 10, figures
        assert figures["transitions_collected"] == first["env_steps"] == 8000, figures
        assert (first_task / "models" / name / "last.pt").is_file()
    # progress.csv follows each policy: its updates (as its learner last reported them).
    with (first_task / "results" / "progress.csv").open(newline="") as f:
        last_row = list(csv.DictReader(f))[-1]
    for name in policies:
        assert 0 < int(last_row[f"updates/{name}"]) <= first["policies"][name]["updates"]
    digests = {first["policies"][n]["params_digest"] for n in policies}
    assert len(digests) == 3  # three policies, each trained apart

    resumed = train_in_process(
        tmp_path / "resumed",
        "simple_spread_ppo_per_agent",
        (
            *short,
            "general_cfg.max_env_steps=16000",
            "general_cfg.load_checkpoint=true",
            f"general_cfg.load_path={first_task}",
        ),
        None,
    )
    (task,) = task_dirs(tmp_path / "resumed")
    assert resumed["resumed_from"] == str(first_task)
    assert resumed["env_steps"] == 16000
    for name in policies:
        # Each policy counts on from its own checkpoint: its checkpoints go on past it.
        at_stop = first["policies"][name]["updates"]
        assert resumed["policies"][name]["updates"] == at_stop + 10, resumed["policies"][name]
        numbered = sorted(int(p.stem) for p in (task / "models" / name).glob("[0-9]*.pt"))
        assert numbered and numbered[0] > at_stop, (name, at_stop, numbered)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_tictactoe_dqn_playing_both_seats_beats_a_random_opponent_on_ray(
    tmp_path: Path, ray_session
) -> None:
    # Self-play on Ray (2 workers): one DQN policy plays both seats, illegal moves masked;
    # evaluated against uniform-random play, half the games in each seat. An untrained
    # masked policy scores about 0.55 there. A policy allowed an illegal move loses the game
    # with it; DQN learns to avoid most such moves unmasked too, but not every one.
    summary = train_in_process(
        tmp_path,
        "tictactoe_dqn",
        ("general_cfg.n_workers=2", "general_cfg.max_env_steps=100000"),
        0.8,
    )
    solving = next(e for e in summary["eval_history"] if e["return_mean"] >= 0.8)
    assert summary["solved"] and solving["env_steps"] <= 100_000, summary["eval_history"]
    assert solving["opponent"] == "random" and solving["policy"] == "tictactoe"
    assert solving["win_rate"] >= 0.8 and solving["episodes"] >= 100
    assert summary["policies"]["tictactoe"]["agent_episodes"] == 2 * summary["episodes"]
    assert [e["illegal_actions"] for e in summary["eval_history"]] == [0] * len(
        summary["eval_history"]
    )


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_connect_four_league_beats_random_in_90_percent_of_100_games_and_its_first_snapshot(
    tmp_path: Path, ray_session
) -> None:
    summary = train_in_process(
        tmp_path,
        "connect_four_ppo_league",
        (
            "general_cfg.mp_backend=ray",
            "general_cfg.n_workers=2",
            "general_cfg.max_env_steps=50000",
            "general_cfg.model_save_fre=5",
            # Seeds 1-3 won at best 91%, 95% and 96% within 100k (first at 50k, 16k and 73k
            # env steps; docs/multi_agent.md): seed 1's margin is one game. Seed 2 within
            # 50k, twice here: best 97% (first 94% at 10k), 4 snapshots, main against the
            # first 0.80 and 0.83.
            "general_cfg.seed=2",
        ),
        None,  # the whole budget: the league grows past the first win over random
    )
    # Evaluated every 5 updates against random: 100 games, 50 in each seat.
    won = [(e["env_steps"], e["win_rate"]) for e in summary["eval_history"]]
    assert max(rate for _, rate in won) >= 0.9, won
    league = summary["league"]
    assert len(league["snapshots"]) >= 3, league["snapshots"]
    # The main policy against its first snapshot, over its last games with it (decayed).
    first = league["snapshots"][0]
    assert league["payoff"]["main"][first] >= 0.7, league["payoff"]["main"]
    (task,) = task_dirs(tmp_path)
    assert (task / "results" / "league.csv").is_file()
