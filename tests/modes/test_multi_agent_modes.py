"""A multi-agent run's test mode: greedy games with the checkpoint's policy, exactly
``max_episode`` of them, ``collect_traj`` writes each agent's trajectory with its agent id
and policy, and ``render_mode: rgb_array`` records a game to ``videos/video.gif``."""

from __future__ import annotations

import csv
import pickle
from pathlib import Path

import imageio.v2 as imageio
import numpy as np
import pytest

from tests.support.cli_runs import train_in_process
from tests.support.procs import task_dirs


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_test_mode_plays_the_games_asked_keeps_each_agents_trajectory_and_renders_a_game(
    tmp_path: Path,
) -> None:
    single = ("general_cfg.mp_backend=single", "general_cfg.online_eval=false")
    train_in_process(
        tmp_path / "train", "tictactoe_dqn", (*single, "general_cfg.max_env_steps=2000"), None
    )
    (trained,) = task_dirs(tmp_path / "train")
    summary = train_in_process(
        tmp_path / "test",
        "tictactoe_dqn",
        (
            *single,
            "general_cfg.mode=test",
            f"general_cfg.load_path={trained}",
            "general_cfg.max_episode=5",
            "general_cfg.collect_traj=true",
            "env_cfg.render_mode=rgb_array",
        ),
        None,
    )
    (task,) = task_dirs(tmp_path / "test")
    assert summary["mode"] == "test" and summary["episodes"] == 5
    # One game rendered (render_n_episodes): the empty board, then each of its 5-9 moves.
    assert summary.get("render_error") is None, summary["render_error"]
    assert summary["rendered_episodes"] == 1 and 6 <= summary["video_frames"] <= 10, summary
    frames = imageio.mimread(task / "videos" / "video.gif")
    assert len(frames) == summary["video_frames"] and frames[0].ndim == 3
    assert not np.array_equal(frames[0], frames[-1])  # the board changed as the game went
    assert summary["updates"] == 0
    trajectories = pickle.loads((task / "results" / "trajs_0.pkl").read_bytes())
    assert len(trajectories) == 10  # two players a game
    assert sorted(str(t["agent"]) for t in trajectories) == ["player_1"] * 5 + ["player_2"] * 5
    assert {str(t["policy"]) for t in trajectories} == {"tictactoe"}
    with (task / "results" / "episodes.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 10
    # Each trajectory is its agent's whole game: its rewards are the episode's return, and
    # only its last move ends it.
    by_agent: dict[str, list[float]] = {}
    for row in rows:
        by_agent.setdefault(row["agent"], []).append(float(row["return"]))
    for t in trajectories:
        ends = np.asarray(t["terminated"]) | np.asarray(t["truncated"])
        assert ends[-1] and not ends[:-1].any()
        assert float(np.sum(t["rewards"])) in by_agent[str(t["agent"])]
    # Zero-sum: over the five games, what one seat won the other lost.
    assert sum(by_agent["player_1"]) == -sum(by_agent["player_2"])
