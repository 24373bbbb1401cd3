"""Self-play with a league on PettingZoo's Connect Four: snapshots frozen, dealt as opponents,
rated, written to the task directory, kept in every checkpoint, and taken up by a resume.

The runs are small (a few thousand env steps, a snapshot every two PPO updates): they show
the league's plumbing, not how well it learns.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest
import torch

from tests.support.cli_runs import config_path, summary_of, train_in_process
from tests.support.procs import TrackedRun, task_dirs
from tests.support.runs import needs_extra
from tests.support.watch import finish, kill, log_text, role_pids, wait_for

CONFIG = "connect_four_ppo_league"
SMALL = (
    "general_cfg.n_envs_per_worker=4",
    "algo_cfg.rollout_len=32",
    "algo_cfg.n_epochs=2",
    "general_cfg.online_eval_episode=5",
    "general_cfg.model_save_fre=2",
    "league.snapshot_every_updates=2",
)


def league_rows(task: Path) -> list[dict[str, str]]:
    with (task / "results" / "league.csv").open(newline="") as f:
        return list(csv.DictReader(f))


def checkpoint_league(path: Path) -> dict[str, Any]:
    return torch.load(path, map_location="cpu", weights_only=True)["league"]


def snapshot_files(task: Path) -> set[str]:
    return {p.stem for p in (task / "models" / "league").glob("*.npz")}


def one_process_league(tasks: Path, *overrides: str) -> dict[str, Any]:
    """A small league run of 6,000 env steps in one process; its summary."""
    needs_extra("pettingzoo", "requirements-multiagent.txt")
    small = (*SMALL, "general_cfg.mp_backend=single", "general_cfg.max_env_steps=6000")
    return train_in_process(tasks, CONFIG, (*small, *overrides), None)


@pytest.mark.timeout(300)
def test_a_league_freezes_snapshots_deals_and_rates_them_and_test_mode_plays_any_two_members(
    tmp_path: Path,
) -> None:
    summary = one_process_league(tmp_path, "general_cfg.save_fig=true")
    (task,) = task_dirs(tmp_path)
    league = summary["league"]
    # Frozen every 2 updates, each snapshot's weights written once.
    updates = summary["policies"]["main"]["updates"]
    assert len(league["snapshots"]) == updates // 2 >= 3, (updates, league)
    assert snapshot_files(task) == set(league["snapshots"])
    # The older snapshots met main and were rated from those games; the table says so.
    rows = {r["name"]: r for r in league_rows(task)}
    assert set(rows) == {*league["snapshots"], "main"}
    first = league["snapshots"][0]
    assert float(rows[first]["games"]) > 0 and rows[first]["vs main"] != "", rows[first]
    assert rows[first]["rating"] != "1000.0", rows[first]
    assert rows["main"]["status"] == "training"
    assert league["strongest"] in rows
    # Its rating curve: every member's rating from its freeze on, and the figures.
    with (task / "results" / "league_ratings.csv").open(newline="") as f:
        curve = list(csv.DictReader(f))
    assert {r["member"] for r in curve} == set(rows)
    assert [r["rating"] for r in curve if r["member"] == first][0] == "1000.0"
    for figure in ("league_payoff.png", "league_ratings.png"):
        assert (task / "figs" / figure).stat().st_size > 10_000, figure
    # The last checkpoint carries the league as it stood, with every snapshot it names on disk.
    state = checkpoint_league(task / "models" / "main" / "last.pt")
    assert {m["name"] for m in state["members"]} <= snapshot_files(task)
    policy = summary["policies"]["main"]
    collected = policy["transitions_collected"]
    assert collected == policy["transitions_stored"] + sum(policy["transitions_dropped"].values())

    # Test mode plays any two members against each other: main, or a snapshot in its place.
    second = league["snapshots"][1]
    for player in ("main", second):
        tested = train_in_process(
            tmp_path / f"test-{player}",
            CONFIG,
            (
                *SMALL,
                "general_cfg.mp_backend=single",
                "general_cfg.mode=test",
                f"general_cfg.load_path={task}",
                "general_cfg.max_episode=20",
                f"league.test_opponent={first}",
                f"league.test_player={player}",
            ),
            None,
        )
        games = tested["league"]["games"]
        assert list(games) == [f"{player} vs {first}"], games
        assert sum(games[f"{player} vs {first}"].values()) == 20, games


@pytest.mark.timeout(300)
def test_an_exploiter_learns_only_against_main_and_is_rated_beside_it(tmp_path: Path) -> None:
    summary = one_process_league(
        tmp_path,
        "general_cfg.online_eval=false",
        "multi_agent.policies={main: {}, exploiter: {}}",
        "league.exploiters=[exploiter]",
        "league.exploiter_share=0.5",
    )
    games = summary["league"]["games"]
    # Every game of the exploiter's is against main (main vs exploiter), never a snapshot.
    assert sum(games["main vs exploiter"].values()) > 0, games
    assert all(pair.startswith("main vs ") for pair in games), games
    for name, policy in summary["policies"].items():
        assert policy["updates"] > 0, (name, policy)
        collected, stored = policy["transitions_collected"], policy["transitions_stored"]
        assert collected == stored + sum(policy["transitions_dropped"].values()), (name, policy)
    (task,) = task_dirs(tmp_path)
    rows = {r["name"]: r for r in league_rows(task)}
    assert rows["exploiter"]["status"] == "training" and rows["exploiter"]["vs main"] != ""
    # Snapshots are of main only.
    assert all(name.startswith("main@") for name in summary["league"]["snapshots"])


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_league_survives_a_killed_learner_and_after_a_killed_coordinator_resumes_its_checkpoint(
    tmp_path: Path, ray_session
) -> None:
    """SIGKILL of the learner: the run goes on in the same league. SIGKILL of the coordinator
    (where the league desk lives): the run stops, and a resume takes the league of the last
    checkpoint, exactly, and goes on freezing snapshots."""
    needs_extra("pettingzoo", "requirements-multiagent.txt")
    first_dir = tmp_path / "first"
    run = TrackedRun(
        (
            "--yaml",
            config_path(CONFIG),
            *SMALL,
            "general_cfg.max_env_steps=100000000",
            "general_cfg.online_eval=false",
            "general_cfg.learner_num_cpus=0.5",
            "general_cfg.progress=false",
            "general_cfg.save_fig=false",
            f"general_cfg.tasks_dir={first_dir}",
        ),
        log_dir=tmp_path,
    )
    try:
        task = wait_for(run, "a task directory", lambda: task_dirs(first_dir), 120)[0]
        wait_for(run, "two snapshots", lambda: len(snapshot_files(task)) >= 2, 240)
        (learner,) = role_pids(run, "ray::Learner")
        kill(learner)
        restarted = "restarting the learner group of "
        wait_for(run, "the learner's restart", lambda: restarted in log_text(task), 120)
        before = len(snapshot_files(task))
        last = task / "models" / "main" / "last.pt"
        wait_for(
            run,
            "a checkpoint whose league holds a snapshot past the restart",
            lambda: len(checkpoint_league(last)["members"]) > before,
            240,
        )
        (coordinator,) = role_pids(run, "ray::Coordinator")
        kill(coordinator)
        assert finish(run, 120) == 1, run.stderr[-3000:]
    finally:
        run.kill()
    first = summary_of(task)
    assert first["stop_reason"] == "coordinator_failed"
    assert first["learner_restarts"] == 1
    # Snapshots went on being frozen across the restart, in one league; the live league died
    # with the coordinator, and the summary and league.csv give the last checkpoint's.
    saved = checkpoint_league(task / "models" / "main" / "last.pt")
    assert first["league"]["from_checkpoint"] is True
    assert first["league"]["snapshots"] == [m["name"] for m in saved["members"]]
    assert len(first["league"]["snapshots"]) > before >= 2
    assert {r["name"] for r in league_rows(task)} == {*first["league"]["snapshots"], "main"}

    # A resume goes on with the league of its checkpoint, exactly, and freezes more.
    resumed = train_in_process(
        tmp_path / "resumed",
        CONFIG,
        (
            *SMALL,
            "general_cfg.mp_backend=single",
            "general_cfg.online_eval=false",
            "general_cfg.load_checkpoint=true",
            f"general_cfg.load_path={task}",
            f"general_cfg.max_env_steps={resumed_budget(first)}",
        ),
        None,
    )
    assert resumed["league"]["resumed"] == saved
    names = [m["name"] for m in saved["members"]]
    assert resumed["league"]["snapshots"][: len(names)] == names
    assert len(resumed["league"]["snapshots"]) > len(names)
    (again,) = task_dirs(tmp_path / "resumed")
    assert snapshot_files(again) >= set(names)


def resumed_budget(first: dict[str, Any]) -> int:
    """Env steps for the resumed run: its checkpoint's and room for a few more snapshots."""
    return int(first["env_steps"]) + 6000


@pytest.mark.timeout(300)
def test_an_off_policy_league_plays_its_snapshots_though_its_chunks_are_long(
    tmp_path: Path,
) -> None:
    # DQN's replay chunks are about 1,000 env steps here: a worker that heard of new
    # snapshots only with its pushes dealt every game of this run before it knew of one.
    needs_extra("pettingzoo", "requirements-multiagent.txt")
    summary = train_in_process(
        tmp_path,
        "tictactoe_dqn",
        (
            "general_cfg.mp_backend=single",
            "general_cfg.max_env_steps=6000",
            "general_cfg.online_eval=false",
            "league.main=tictactoe",
            "league.snapshot_every_updates=250",
        ),
        None,
    )
    games = summary["league"]["games"]
    assert sum(sum(counts.values()) for counts in games.values()) > 100, games
